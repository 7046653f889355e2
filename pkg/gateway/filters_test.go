package gateway

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

func TestSubstituteFilterSecrets(t *testing.T) {
	tests := map[string]struct {
		in, want, err string
		refs          []FilterSecretRef
	}{
		"a secretFile placeholder becomes the path of the key": {
			in: `{"f":"$(secretFile:kms:token)"}`, want: `{"f":"/opt/kroxylicious/secrets/filter/kms/token"}`,
			refs: []FilterSecretRef{{Kind: KindSecret, Secret: "kms", Key: "token"}},
		},
		"Kroxylicious' ${secret:…} reference becomes the same path as secretFile": {
			in: `{"vaultToken":{"passwordFile":"${secret:vault:token}"}}`, want: `{"vaultToken":{"passwordFile":"/opt/kroxylicious/secrets/filter/vault/token"}}`,
			refs: []FilterSecretRef{{Kind: KindSecret, Secret: "vault", Key: "token"}},
		},
		"a ${configmap:…} reference becomes a path under the filter ConfigMaps' folder": {
			in: `{"trust":["${configmap:ca-bundle:ca.crt}"]}`, want: `{"trust":["/opt/kroxylicious/configmaps/filter/ca-bundle/ca.crt"]}`,
			refs: []FilterSecretRef{{Kind: KindConfigMap, Secret: "ca-bundle", Key: "ca.crt"}},
		},
		"a caret quotes a reference, which stays text with the caret removed": {
			in: `{"note":"say ^${secret:a:b} and ^^^${configmap:c:d}"}`, want: `{"note":"say ${secret:a:b} and ^${configmap:c:d}"}`,
		},
		"two carets keep one and interpolate, as Kroxylicious does": {
			in: `{"f":"^^${secret:a:b}"}`, want: `{"f":"^/opt/kroxylicious/secrets/filter/a/b"}`,
			refs: []FilterSecretRef{{Kind: KindSecret, Secret: "a", Key: "b"}},
		},
		"a reference with text around it is refused, as Kroxylicious does": {
			in: `{"f":"Bearer ${secret:a:b}"}`, err: "must be the whole value",
		},
		"an unknown provider is refused": {in: `{"f":"${env:a:b}"}`, err: `unknown provider "env"`},
		"a ConfigMap name that is not a DNS name is refused": {
			in: `{"f":"${configmap:Not_A_Name:k}"}`, err: "configmap name",
		},
		"the proxy's own $(…) templates are left alone": {
			in: `{"template":"$(topicName)","other":"${notareference}"}`, want: `{"other":"${notareference}","template":"$(topicName)"}`,
		},
		"a secretDir placeholder inside a longer string becomes the folder": {
			in: `{"a":["x $(secretDir:d) y"],"n":1.50}`, want: `{"a":["x /opt/kroxylicious/secrets/filter/d y"],"n":1.50}`,
			refs: []FilterSecretRef{{Kind: KindSecret, Secret: "d"}},
		},
		"a secretFile without a key is refused": {in: `{"f":"$(secretFile:kms)"}`, err: "secretFile:<secret>:<key>"},
		"a secretDir with a key is refused":     {in: `{"f":"$(secretDir:kms:key)"}`, err: "secretDir:<secret>"},
		"a secret name that is not a DNS name is refused": {
			in: `{"f":"$(secretDir:Not_A_Name)"}`, err: "secret name",
		},
		"a path-like key is refused":            {in: `{"f":"$(secretFile:kms:../../etc/passwd)"}`, err: "key"},
		"a config that is not JSON is an error": {in: `{`, err: "not JSON"},
		"no config is nothing":                  {in: ``},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, refs, err := SubstituteFilterSecrets([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("got %s, want %s", out, tc.want)
			}
			if len(refs) != len(tc.refs) || (len(refs) > 0 && refs[0] != tc.refs[0]) {
				t.Errorf("refs %v, want %v", refs, tc.refs)
			}
		})
	}
}

func TestTranslateNeverPanicsOnAnEmptySnapshot(t *testing.T) {
	if res := Translate(nil); !res.Hold {
		t.Error("a nil snapshot must hold")
	}
	if res := Translate(&Snapshot{}); !res.Hold {
		t.Error("a snapshot without a gateway must hold")
	}
}

// restartChecksumOf translates a snapshot and returns the proxy pods' restart checksum.
func restartChecksumOf(t *testing.T, s *Snapshot) string {
	t.Helper()
	for _, o := range Translate(s).Objects {
		if o.GetKind() == KindDeployment {
			v, _, _ := unstructured.NestedString(o.Object, "spec", "template", "metadata", "annotations", wellknown.AnnotationRestartChecksum)
			return v
		}
	}
	t.Fatal("no Deployment")
	return ""
}

// TestFilterConfigMapVersionRestartsTheProxy: a new version of a ConfigMap a filter reads
// through ${configmap:…} changes the restart checksum, as a Secret's does; an unrelated
// ConfigMap's does not.
func TestFilterConfigMapVersionRestartsTheProxy(t *testing.T) {
	path := filepath.Join("testdata", "filter-config-template.in.yaml")
	before := restartChecksumOf(t, loadCase(t, path))
	changed := loadCase(t, path)
	for _, cm := range changed.ConfigMaps {
		cm.ResourceVersion = "13"
	}
	if restartChecksumOf(t, changed) == before {
		t.Error("a new version of the filter's ConfigMap leaves the restart checksum as it was")
	}
	unrelated := loadCase(t, path)
	unrelated.ConfigMaps = append(unrelated.ConfigMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "my-namespace", ResourceVersion: "99"}})
	if restartChecksumOf(t, unrelated) != before {
		t.Error("a ConfigMap no filter names changes the restart checksum")
	}
}

// FuzzSubstituteFilterSecrets: any configuration either is refused or comes back as JSON whose
// references all name valid objects and keys, and never panics.
func FuzzSubstituteFilterSecrets(f *testing.F) {
	for _, seed := range []string{
		`{"f":"$(secretFile:kms:token)"}`, `{"f":"${secret:vault:token}"}`, `{"a":["^^^${configmap:c:d}"]}`,
		`{"f":"^^${configmap:ca:ca.crt}"}`, `{"f":"x $(secretDir:d) y"}`, `[1,"${x:y:z}"]`, `"${secret:a:b}"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, refs, err := SubstituteFilterSecrets(raw)
		if err != nil {
			return
		}
		if len(out) > 0 && !json.Valid(out) {
			t.Fatalf("output is not JSON: %q", out)
		}
		for _, r := range refs {
			if r.Kind != KindSecret && r.Kind != KindConfigMap {
				t.Fatalf("ref of kind %q", r.Kind)
			}
			if errs := validation.IsDNS1123Subdomain(r.Secret); len(errs) > 0 {
				t.Fatalf("ref to invalid name %q", r.Secret)
			}
			if r.Key != "" && len(validation.IsConfigMapKey(r.Key)) > 0 {
				t.Fatalf("ref to invalid key %q", r.Key)
			}
		}
	})
}
