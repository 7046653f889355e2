package framework

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// noStrimziOverrides makes the test see a clone with nothing beside it, whatever the caller's
// environment says.
func noStrimziOverrides(t *testing.T) {
	t.Setenv("KAFKALINK_STRIMZI_CRDS", "")
	t.Setenv("KAFKALINK_SHARED_DIR", filepath.Join(t.TempDir(), "nonexistent"))
}

func writeYAML(t *testing.T, dir, name string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("# a CRD\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSharedDirMissingMeansNone(t *testing.T) {
	noStrimziOverrides(t)
	if _, err := SharedDir(); !errors.Is(err, ErrNoSharedDir) {
		t.Fatalf("SharedDir() with KAFKALINK_SHARED_DIR missing: got %v, want ErrNoSharedDir", err)
	}
}

func TestStrimziCRDFilesOrder(t *testing.T) {
	noStrimziOverrides(t)
	shared := t.TempDir()
	t.Setenv("KAFKALINK_SHARED_DIR", shared)
	fixture := writeYAML(t, filepath.Join(shared, "fixtures", "strimzi-crds", "1.2.0"), "040-Crd-kafka.yaml")
	own := writeYAML(t, t.TempDir(), "kafka.yaml")

	t.Setenv("KAFKALINK_STRIMZI_CRDS", filepath.Dir(own))
	files, source, err := StrimziCRDFiles("1.2.0")
	if err != nil || !slices.Equal(files, []string{own}) || !strings.Contains(source, "KAFKALINK_STRIMZI_CRDS") {
		t.Errorf("with $KAFKALINK_STRIMZI_CRDS: %v %q %v, want %s", files, source, err, own)
	}

	t.Setenv("KAFKALINK_STRIMZI_CRDS", "")
	files, source, err = StrimziCRDFiles("1.2.0")
	if err != nil || !slices.Equal(files, []string{fixture}) || !strings.HasPrefix(source, "1.2.0 from ../shared/fixtures") {
		t.Errorf("with the shared fixture: %v %q %v, want %s", files, source, err, fixture)
	}

	// The shared folder lacks 0.45.0: the stand-in, not an error.
	files, source, err = StrimziCRDFiles("0.45.0")
	if err != nil || len(files) != 3 || !strings.HasPrefix(source, "stand-in serving v1beta2 only") {
		t.Errorf("shared folder without the release: %v %q %v, want the stand-in", files, source, err)
	}

	noStrimziOverrides(t)
	files, source, err = StrimziCRDFiles("1.2.0")
	if err != nil || len(files) != 3 || !strings.HasPrefix(source, "stand-in serving v1 and v1beta2") {
		t.Errorf("nothing beside the repository: %v %q %v, want the stand-in", files, source, err)
	}
}

func TestStrimziCRDFilesBrokenChoicesFail(t *testing.T) {
	noStrimziOverrides(t)
	t.Setenv("KAFKALINK_STRIMZI_CRDS", t.TempDir())
	if _, _, err := StrimziCRDFiles("1.2.0"); err == nil {
		t.Error("$KAFKALINK_STRIMZI_CRDS without YAML files: no error")
	}
	t.Setenv("KAFKALINK_STRIMZI_CRDS", "")
	shared := t.TempDir()
	t.Setenv("KAFKALINK_SHARED_DIR", shared)
	if err := os.MkdirAll(filepath.Join(shared, "fixtures", "strimzi-crds", "1.2.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := StrimziCRDFiles("1.2.0"); err == nil {
		t.Error("an empty shared release folder: no error, want one rather than a silent stand-in")
	}
}

// standinCRDs reads the stand-in CRDs for a release, by kind.
func standinCRDs(t *testing.T, version string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	noStrimziOverrides(t)
	files, _, err := StrimziCRDFiles(version)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "Test and demo stand-in, NOT Strimzi's CRD; never installed by install.yaml") {
			t.Errorf("%s does not say it is a stand-in", f)
		}
		crds, err := readCRDs(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, crd := range crds {
			if crd.Spec.Group != "kafka.strimzi.io" {
				t.Errorf("%s: group %s", crd.Name, crd.Spec.Group)
			}
			out[crd.Spec.Names.Kind] = crd
		}
	}
	if len(out) != 3 || out["Kafka"] == nil || out["KafkaUser"] == nil || out["KafkaNodePool"] == nil {
		t.Fatalf("stand-in kinds: %v, want Kafka, KafkaUser and KafkaNodePool", out)
	}
	return out
}

// versions describes a CRD's versions, e.g. "v1:served,storage,status".
func versions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		d := v.Name + ":"
		if v.Served {
			d += "served"
		}
		if v.Storage {
			d += ",storage"
		}
		if v.Subresources != nil && v.Subresources.Status != nil {
			d += ",status"
		}
		out = append(out, d)
	}
	return out
}

func TestStandinVersions(t *testing.T) {
	for release, want := range map[string][]string{
		"1.2.0":  {"v1:served,storage,status", "v1beta2:served,status"},
		"0.45.0": {"v1beta2:served,storage,status"},
	} {
		for kind, crd := range standinCRDs(t, release) {
			if got := versions(crd); !slices.Equal(got, want) {
				t.Errorf("%s %s: versions %v, want %v", release, kind, got, want)
			}
		}
	}
}

// The fields pkg/strimzi reads: the API server prunes any of them that the schema does not
// name under an object without x-kubernetes-preserve-unknown-fields, and the operator would
// then see a Kafka without bootstrap servers.
var fieldsRead = map[string][]string{
	"Kafka": {
		"spec.kafka.listeners[].name", "spec.kafka.listeners[].port", "spec.kafka.listeners[].type",
		"spec.kafka.listeners[].tls", "spec.kafka.listeners[].authentication.type",
		"status.observedGeneration", "status.conditions[].type", "status.conditions[].status",
		"status.conditions[].reason", "status.conditions[].message",
		"status.listeners[].name", "status.listeners[].type", "status.listeners[].bootstrapServers",
		"status.listeners[].addresses[].host", "status.listeners[].addresses[].port",
		"status.listeners[].certificates[]",
	},
	"KafkaUser": {
		"spec.authentication.type", "status.observedGeneration", "status.conditions[].type",
		"status.conditions[].status", "status.username", "status.secret",
	},
	"KafkaNodePool": {"spec.replicas", "spec.roles[]", "status.nodeIds[]", "status.roles[]", "status.replicas"},
}

func TestStandinSchemasKeepTheFieldsRead(t *testing.T) {
	for kind, crd := range standinCRDs(t, "1.2.0") {
		for _, v := range crd.Spec.Versions {
			for _, path := range fieldsRead[kind] {
				if _, err := schemaAt(v.Schema.OpenAPIV3Schema, path); err != nil {
					t.Errorf("%s %s %s: %v", kind, v.Name, path, err)
				}
			}
		}
	}
}

// schemaAt follows a path such as status.listeners[].addresses[].host through named properties
// only, so a field kept merely by x-kubernetes-preserve-unknown-fields does not count.
func schemaAt(s *apiextensionsv1.JSONSchemaProps, path string) (*apiextensionsv1.JSONSchemaProps, error) {
	for _, part := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(part, "[]")
		p, ok := s.Properties[name]
		if !ok {
			return nil, errors.New("no property " + name)
		}
		s = &p
		if list {
			if s.Type != "array" || s.Items == nil || s.Items.Schema == nil {
				return nil, errors.New(name + " is not a list with an item schema")
			}
			s = s.Items.Schema
		}
	}
	return s, nil
}
