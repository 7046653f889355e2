package argocd

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kafkalink/kafkalink/internal/golden"
)

// translatorResult is the part of a gateway translator golden output (pkg/gateway/testdata/
// *.out.yaml) that status is written from.
type translatorResult struct {
	Hold            bool                      `json:"hold"`
	GatewayStatus   map[string]any            `json:"gatewayStatus"`
	RouteParents    map[string][]any          `json:"routeParents"`
	PolicyAncestors map[string]map[string]any `json:"policyAncestors"`
}

// TestGoldenTranslatorHealth runs the checks on every status the gateway translator's golden
// cases write (gateway, route parents, policy ancestors: every condition combination it
// produces for them) and keeps the verdicts in testdata/translator-health.golden, reviewed like
// code and rewritten with -update. A case named error-* must make some object unhealthy.
func TestGoldenTranslatorHealth(t *testing.T) {
	scripts := map[string][]byte{}
	for _, c := range Checks {
		s, err := c.Script()
		if err != nil {
			t.Fatal(err)
		}
		scripts[c.Kind] = s
	}
	outs, err := filepath.Glob("../gateway/testdata/*.out.yaml")
	if err != nil || len(outs) == 0 {
		t.Fatalf("no translator golden outputs: %v", err)
	}
	var b strings.Builder
	for _, out := range outs {
		name := strings.TrimSuffix(filepath.Base(out), ".out.yaml")
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var res translatorResult
		if err := yaml.Unmarshal(data, &res); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		unhealthy := false
		judge := func(kind, objName string, status map[string]any) {
			obj := map[string]any{"kind": kind, "metadata": map[string]any{"name": objName}, "status": status}
			hs, err := Run(scripts[kind], obj)
			if err != nil {
				t.Errorf("%s: %s %s: %v", name, kind, objName, err)
				return
			}
			unhealthy = unhealthy || hs.Status != string(Healthy)
			fmt.Fprintf(&b, "%s: %s %s: %s: %s\n", name, kind, objName, hs.Status, hs.Message)
		}
		judge("KafkaGateway", "(gateway)", res.GatewayStatus)
		for _, route := range sortedKeys(res.RouteParents) {
			judge("KafkaRoute", route, map[string]any{"parents": res.RouteParents[route]})
		}
		for _, policy := range sortedKeys(res.PolicyAncestors) {
			if res.PolicyAncestors[policy] == nil {
				continue // the translator removes this gateway's entry
			}
			judge("KafkaBackendTLSPolicy", policy, map[string]any{"ancestors": []any{res.PolicyAncestors[policy]}})
		}
		if strings.HasPrefix(name, "error-") && !unhealthy {
			t.Errorf("%s: every object is Healthy, though the case is an error", name)
		}
	}
	golden.Check(t, "testdata/translator-health.golden", []byte(b.String()))
}

// sortedKeys are a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
