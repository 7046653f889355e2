package argocd

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// manifestsDir is manifests/argocd, from this package's folder.
const manifestsDir = "../../manifests/argocd"

// readObject reads a YAML object as Argo CD gets it: JSON types.
func readObject(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return obj
}

// healthTests is Argo CD's health_test.yaml.
type healthTests struct {
	Tests []struct {
		HealthStatus Result `json:"healthStatus"`
		InputPath    string `json:"inputPath"`
	} `json:"tests"`
}

// TestHealthChecks runs every check on the golden objects its health_test.yaml lists, as Argo
// CD's own resource_customizations tests do, and needs every testdata file to be listed.
func TestHealthChecks(t *testing.T) {
	for _, c := range Checks {
		t.Run(c.Group+"/"+c.Kind, func(t *testing.T) {
			dir := filepath.Join(manifestsDir, c.Dir())
			script, err := os.ReadFile(filepath.Join(dir, "health.lua"))
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var tests healthTests
			if err := yaml.UnmarshalStrict(data, &tests); err != nil {
				t.Fatal(err)
			}
			if len(tests.Tests) == 0 {
				t.Fatal("health_test.yaml lists no tests")
			}
			listed := map[string]bool{}
			for _, tc := range tests.Tests {
				listed[filepath.Clean(tc.InputPath)] = true
				obj := readObject(t, filepath.Join(dir, tc.InputPath))
				if obj["kind"] != c.Kind {
					t.Errorf("%s: kind %v, want %s", tc.InputPath, obj["kind"], c.Kind)
				}
				got, err := Run(script, obj)
				if err != nil {
					t.Errorf("%s: %v", tc.InputPath, err)
					continue
				}
				if got != tc.HealthStatus {
					t.Errorf("%s:\n got %+v\nwant %+v", tc.InputPath, got, tc.HealthStatus)
				}
			}
			inputs, _ := filepath.Glob(filepath.Join(dir, "testdata", "*.yaml"))
			for _, in := range inputs {
				rel, _ := filepath.Rel(dir, in)
				if !listed[rel] {
					t.Errorf("%s is not in health_test.yaml", rel)
				}
			}
		})
	}
}

// TestEveryReasonIsJudgedAsClassified gives each check an object whose one condition has each
// reason it classifies, in the condition's bad state and then its good state, and needs the
// health the table says: the scripts read the table they were generated with.
func TestEveryReasonIsJudgedAsClassified(t *testing.T) {
	for _, c := range Checks {
		if c.Static != "" {
			continue
		}
		script, err := c.Script()
		if err != nil {
			t.Fatal(err)
		}
		for reason, class := range c.Reasons {
			for _, good := range []bool{false, true} {
				obj := withCondition(c.Kind, reason, good)
				got, err := Run(script, obj)
				if err != nil {
					t.Fatalf("%s %s: %v", c.Kind, reason, err)
				}
				want := class
				switch {
				case good && class != Degraded:
					want = Healthy
				case !good && class == Healthy:
					want = Degraded // a good reason on a bad status is not something kafkalink writes
				}
				if got.Status != string(want) {
					t.Errorf("%s with reason %s (good status %v): %s (%q), want %s", c.Kind, reason, good, got.Status, got.Message, want)
				}
			}
		}
	}
}

// withCondition is an object of a kind whose deciding condition has a reason, in its good
// (True) or bad (False) state; the other conditions it needs are good.
func withCondition(kind, reason string, good bool) map[string]any {
	status := "False"
	if good {
		status = "True"
	}
	cond := func(typ, reason, status string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": "m", "observedGeneration": float64(1)}
	}
	ok := func(typ string) map[string]any { return cond(typ, typ, "True") }
	parent := func(conds ...any) map[string]any {
		return map[string]any{"controllerName": "kafkalink.io/gateway-controller", "parentRef": map[string]any{"name": "gw"}, "ancestorRef": map[string]any{"name": "gw"}, "conditions": conds}
	}
	var st map[string]any
	switch kind {
	case "KafkaConnection":
		st = map[string]any{"observedGeneration": float64(1), "conditions": []any{cond("Ready", reason, status)}}
	case "KafkaGateway":
		st = map[string]any{"conditions": []any{ok("Accepted"), cond("Programmed", reason, status)}}
	case "KafkaRoute":
		st = map[string]any{"parents": []any{parent(ok("Accepted"), cond("ResolvedRefs", reason, status))}}
	case "KafkaBackendTLSPolicy":
		st = map[string]any{"ancestors": []any{parent(cond("Accepted", reason, status))}}
	}
	return map[string]any{"kind": kind, "metadata": map[string]any{"name": "x", "generation": float64(1)}, "status": st}
}

// TestScriptsSurviveMissingFields runs every check on every golden object with each field of
// its status and metadata left out in turn (required ones too: an object from an older or newer
// kafkalink, or written by hand) and needs a valid health every time, never a Lua error, which
// Argo CD would show instead of the health.
func TestScriptsSurviveMissingFields(t *testing.T) {
	for _, c := range Checks {
		script, err := c.Script()
		if err != nil {
			t.Fatal(err)
		}
		inputs, _ := filepath.Glob(filepath.Join(manifestsDir, c.Dir(), "testdata", "*.yaml"))
		for _, in := range inputs {
			obj := readObject(t, in)
			for _, path := range fieldPaths(obj, nil) {
				if path[0] != "status" && path[0] != "metadata" {
					continue
				}
				pruned := withoutField(obj, path)
				if _, err := Run(script, pruned); err != nil {
					t.Errorf("%s without %v: %v", in, path, err)
				}
			}
		}
	}
}

// fieldPaths lists the path of every map key and list item below v.
func fieldPaths(v any, prefix []any) [][]any {
	var out [][]any
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			p := append(append([]any{}, prefix...), k)
			out = append(out, p)
			out = append(out, fieldPaths(item, p)...)
		}
	case []any:
		for i, item := range v {
			p := append(append([]any{}, prefix...), i)
			out = append(out, p)
			out = append(out, fieldPaths(item, p)...)
		}
	}
	return out
}

// withoutField is a deep copy of obj without the field or list item at path.
func withoutField(obj map[string]any, path []any) map[string]any {
	var cp func(v any, path []any) any
	cp = func(v any, path []any) any {
		switch v := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, item := range v {
				if len(path) > 0 && path[0] == k {
					if len(path) == 1 {
						continue
					}
					out[k] = cp(item, path[1:])
				} else {
					out[k] = cp(item, nil)
				}
			}
			return out
		case []any:
			out := []any{}
			for i, item := range v {
				if len(path) > 0 && path[0] == i {
					if len(path) == 1 {
						continue
					}
					out = append(out, cp(item, path[1:]))
				} else {
					out = append(out, cp(item, nil))
				}
			}
			return out
		}
		return v
	}
	return cp(obj, path).(map[string]any)
}
