package gatewaymodel

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	"sigs.k8s.io/yaml"
)

// The ReferenceGrant a RefNotPermitted message proposes, applied as written, allows exactly the
// reference that was refused: the right namespace, groups (the core group as ""), kinds and name.
func TestGrantYAMLAllowsTheRefusedReference(t *testing.T) {
	tests := map[string]struct {
		from From
		to   To
	}{
		"a route's Service backend in another namespace": {
			From{Group: Group, Kind: KindRoute, Namespace: "my-namespace"},
			To{Group: CoreGroup, Kind: KindService, Namespace: "kafka", Name: "my-cluster"},
		},
		"a route's Strimzi Kafka backend": {
			From{Group: Group, Kind: KindRoute, Namespace: "apps"},
			To{Group: "kafka.strimzi.io", Kind: "Kafka", Namespace: "kafka", Name: "my-cluster"},
		},
		"a policy's CA Secret": {
			From{Group: Group, Kind: KindPolicy, Namespace: "kafka"},
			To{Group: CoreGroup, Kind: KindSecret, Namespace: "certs", Name: "ca"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var g gatewayv1beta1.ReferenceGrant
			if err := yaml.UnmarshalStrict([]byte(GrantYAML(tc.from, tc.to)), &g); err != nil {
				t.Fatalf("not a ReferenceGrant: %v\n%s", err, GrantYAML(tc.from, tc.to))
			}
			if g.APIVersion != "gateway.networking.k8s.io/v1beta1" || g.Kind != "ReferenceGrant" || g.Namespace != tc.to.Namespace {
				t.Errorf("wrong object: %s %s in %q", g.APIVersion, g.Kind, g.Namespace)
			}
			if errs := validation.IsDNS1123Subdomain(g.Name); len(errs) > 0 {
				t.Errorf("name %q: %v", g.Name, errs)
			}
			if !Granted([]*gatewayv1beta1.ReferenceGrant{&g}, tc.from, tc.to) {
				t.Errorf("the proposed grant does not allow the reference:\n%s", GrantYAML(tc.from, tc.to))
			}
			other := tc.to
			other.Name += "-other"
			if Granted([]*gatewayv1beta1.ReferenceGrant{&g}, tc.from, other) {
				t.Error("the proposed grant allows more than the one object")
			}
			if !strings.HasPrefix(GrantHint(tc.from, tc.to), "; to allow it, create this ReferenceGrant:\n") {
				t.Errorf("hint: %q", GrantHint(tc.from, tc.to))
			}
		})
	}
}
