package gateway

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	"sigs.k8s.io/yaml"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

// A user who applies, as written, the objects the seed scenario's diagnostics propose ends with a
// route that resolves and connects with TLS: the ReferenceGrant from RefNotPermitted, then the
// KafkaBackendTLSPolicy from BackendTLS.
func TestSeedDiagnosticsProposeObjectsThatFixTheRoute(t *testing.T) {
	s := loadCase(t, filepath.Join("testdata", "seed-diagnostics-1-as-written.in.yaml"))
	cond := routeCondition(t, Translate(s), ConditionResolvedRefs)
	if cond.Reason != ReasonRefNotPermitted {
		t.Fatalf("ResolvedRefs: %s %s", cond.Reason, cond.Message)
	}
	var grant gatewayv1beta1.ReferenceGrant
	proposed(t, cond.Message, "create this ReferenceGrant:\n", &grant)
	s.ReferenceGrants = append(s.ReferenceGrants, &grant)

	res := Translate(s)
	if c := routeCondition(t, res, ConditionResolvedRefs); c.Status != metav1.ConditionTrue {
		t.Fatalf("with the proposed grant, ResolvedRefs: %s %s", c.Reason, c.Message)
	}
	cond = routeCondition(t, res, ConditionBackendTLS)
	if cond.Reason != ReasonBackendTLSPolicyMissing {
		t.Fatalf("BackendTLS: %s %s", cond.Reason, cond.Message)
	}
	var policy kroxyliciousv1alpha1.KafkaBackendTLSPolicy
	proposed(t, cond.Message, "create a policy such as:\n", &policy)
	s.Policies = append(s.Policies, &policy)

	res = Translate(s)
	if c := routeCondition(t, res, ConditionBackendTLS); c.Reason != ReasonBackendTLSPolicyFound {
		t.Fatalf("with the proposed policy, BackendTLS: %s %s", c.Reason, c.Message)
	}
	if c := routeCondition(t, res, ConditionResolvedRefs); c.Status != metav1.ConditionTrue {
		t.Fatalf("with the proposed policy, ResolvedRefs: %s %s", c.Reason, c.Message)
	}
	for _, vc := range res.Config.VirtualClusters {
		if vc.UpstreamTLS == nil || len(vc.UpstreamTLS.CAFiles) == 0 || vc.UpstreamTLS.ServerName != "my-cluster-kafka-bootstrap.kafka.svc" {
			t.Errorf("virtual cluster %s upstream TLS: %+v", vc.Name, vc.UpstreamTLS)
		}
	}
}

// routeCondition is a condition of the only parent status of route my-route.
func routeCondition(t *testing.T, res *Result, condType string) metav1.Condition {
	t.Helper()
	parents := res.RouteParents["my-route"]
	if len(parents) != 1 {
		t.Fatalf("my-route has %d parent statuses", len(parents))
	}
	c := meta.FindStatusCondition(parents[0].Conditions, condType)
	if c == nil {
		t.Fatalf("my-route has no %s condition: %+v", condType, parents[0].Conditions)
	}
	return *c
}

// proposed decodes, strictly, the YAML a message proposes after marker.
func proposed(t *testing.T, message, marker string, into any) {
	t.Helper()
	_, doc, ok := strings.Cut(message, marker)
	if !ok {
		t.Fatalf("the message proposes nothing after %q: %s", marker, message)
	}
	if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
		t.Fatalf("the proposed object does not decode: %v\n%s", err, doc)
	}
}

// A Service port looks like TLS by a Strimzi listener's own setting when the Kafka is known,
// else by the seed's port name or Strimzi's TLS port number.
func TestTLSEvidence(t *testing.T) {
	tests := map[string]struct {
		port     int32
		name     string
		kafka    bool
		evidence string
	}{
		"a port named tls":                                       {port: 443, name: "tls", evidence: "the port is named tls"},
		"Strimzi's port name for its tls listener":               {port: 443, name: "tcp-clientstls", evidence: "the port is named tcp-clientstls"},
		"port 9093 with another name":                            {port: 9093, name: "kafka", evidence: "9093 is the port of Strimzi's TLS listener"},
		"a plain port":                                           {port: 9092, name: "tcp-clients"},
		"a Kafka's TLS listener":                                 {port: 9093, name: "x", kafka: true, evidence: "Kafka kafka/my-cluster serves it with listener tls, which has tls: true"},
		"a Kafka's plain listener, whatever its name":            {port: 9092, name: "tls", kafka: true},
		"a port no Kafka listener serves falls back to its name": {port: 9094, name: "tls", kafka: true, evidence: "the port is named tls"},
	}
	s := loadCase(t, filepath.Join("testdata", "seed-diagnostics-2-granted.in.yaml"))
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			svc := s.Services[0].DeepCopy()
			svc.Spec.Ports[0].Name, svc.Spec.Ports[0].Port = tc.name, tc.port
			svc.Spec.Ports[0].TargetPort.IntVal = tc.port
			k := s.Kafkas[0]
			if !tc.kafka {
				k = nil
			}
			if got := tlsEvidence(svc, svc.Spec.Ports[0], k); got != tc.evidence {
				t.Errorf("got %q, want %q", got, tc.evidence)
			}
		})
	}
}
