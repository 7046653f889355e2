package gateway

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// limitsSnapshot is one in-cluster gateway with a backend and a certificate.
func limitsSnapshot() *Snapshot {
	s := &Snapshot{Env: Environment{ClusterDomain: "svc.cluster.local", ProxyImage: "img", Now: time.Unix(0, 0)}}
	s.Gateway = &kroxyliciousv1alpha1.KafkaGateway{
		ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "ns"},
		Spec: kroxyliciousv1alpha1.KafkaGatewaySpec{Listeners: []kroxyliciousv1alpha1.Listener{{
			Name: "one", Port: 9092, Protocol: kroxyliciousv1alpha1.ProtocolKafkaTLS,
			TLS: &kroxyliciousv1alpha1.ListenerTLSConfig{CertificateRefs: []kroxyliciousv1alpha1.SecretObjectReference{{Name: "cert"}}},
		}}},
	}
	cert, key := testKeyPair()
	s.Secrets = []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "cert", Namespace: "ns"}, Data: map[string][]byte{"tls.crt": cert, "tls.key": key}}}
	s.Services = []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "backend", Namespace: "ns"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 9093}}}}}
	return s
}

func limitsRoute(name string, created int64, hostnames int, brokers [][]int32) *kroxyliciousv1alpha1.KafkaRoute {
	pr := kroxyliciousv1alpha1.KafkaRouteParentReference{
		Name:  "gw",
		Rules: []kroxyliciousv1alpha1.KafkaRouteRule{{Name: "r", BackendRefs: []kroxyliciousv1alpha1.BackendReference{{Name: "backend", Port: 9093}}}},
	}
	for _, ids := range brokers {
		pr.Brokers = append(pr.Brokers, kroxyliciousv1alpha1.BrokerTopology{AdvertisedBrokerIds: ids})
	}
	for i := range hostnames {
		pr.Hostnames = append(pr.Hostnames, kroxyliciousv1alpha1.PercentHostname(fmt.Sprintf("%s-h%02d-%%.svc.cluster.local", name, i)))
	}
	return &kroxyliciousv1alpha1.KafkaRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.Unix(created, 0)},
		Spec:       kroxyliciousv1alpha1.KafkaRouteSpec{ParentRefs: []kroxyliciousv1alpha1.KafkaRouteParentReference{pr}},
	}
}

func idRange(from, n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(from + i)
	}
	return ids
}

func acceptedCondition(t *testing.T, res *Result, route string) metav1.Condition {
	t.Helper()
	parents := res.RouteParents[route]
	if len(parents) != 1 {
		t.Fatalf("route %s: %d parent entries", route, len(parents))
	}
	for _, c := range parents[0].Conditions {
		if c.Type == ConditionAccepted {
			return c
		}
	}
	t.Fatalf("route %s: no Accepted condition", route)
	return metav1.Condition{}
}

func servicesOf(res *Result, route string) int {
	n := 0
	for _, o := range res.Objects {
		if o.GetKind() == KindService && o.GetLabels()[wellknown.LabelRoute] == route {
			n++
		}
	}
	return n
}

// The 105 KB route of the H2 finding: 16 hostnames × 16 lists of 1,024 broker ids, which the
// schema of the time allowed, asked for 262,160 Services. It is refused outright, and the
// well-behaved route beside it is still served.
func TestHugeRouteIsNotServed(t *testing.T) {
	s := limitsSnapshot()
	var brokers [][]int32
	for i := range 16 {
		brokers = append(brokers, idRange(i*1024, 1024))
	}
	s.Routes = append(s.Routes, limitsRoute("huge", 1, 16, brokers), limitsRoute("small", 2, 1, [][]int32{{0, 1, 2}}))
	res := Translate(s)
	c := acceptedCondition(t, res, "huge")
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonLimitExceeded {
		t.Fatalf("huge route: %s %s %q, want False %s", c.Status, c.Reason, c.Message, ReasonLimitExceeded)
	}
	if n := servicesOf(res, "huge"); n != 0 {
		t.Errorf("huge route has %d Services, want 0", n)
	}
	if c := acceptedCondition(t, res, "small"); c.Status != metav1.ConditionTrue {
		t.Errorf("small route: %s %s %q", c.Status, c.Reason, c.Message)
	}
	if n := servicesOf(res, "small"); n != 4 {
		t.Errorf("small route has %d Services, want 4", n)
	}
}

// Each route within its own limit (4 hostnames × (255 broker ids + 1) = 1,024 hosts), but
// together over the gateway's: the routes after the limit are refused, the earlier ones served.
// The limit is the operator's (--max-generated-objects-per-gateway), DefaultMaxGeneratedObjectsPerGateway
// when unset.
func TestGatewayObjectLimit(t *testing.T) {
	for _, limit := range []int{0, 3 * 1024} {
		s := limitsSnapshot()
		s.Env.MaxGeneratedObjects = limit
		most := limit
		if most == 0 {
			most = DefaultMaxGeneratedObjectsPerGateway
		}
		fit := most / (4 * 256) // a Service per host
		for i := range fit + 1 {
			s.Routes = append(s.Routes, limitsRoute(fmt.Sprintf("r%02d", i), int64(i), 4, [][]int32{idRange(0, 255)}))
		}
		res := Translate(s)
		for i := range fit {
			if c := acceptedCondition(t, res, fmt.Sprintf("r%02d", i)); c.Status != metav1.ConditionTrue {
				t.Fatalf("limit %d: route r%02d: %s %s %q", limit, i, c.Status, c.Reason, c.Message)
			}
		}
		last := fmt.Sprintf("r%02d", fit)
		c := acceptedCondition(t, res, last)
		if c.Status != metav1.ConditionFalse || c.Reason != ReasonLimitExceeded {
			t.Fatalf("limit %d: route %s: %s %s %q, want False %s", limit, last, c.Status, c.Reason, c.Message, ReasonLimitExceeded)
		}
		if want := fmt.Sprintf("at most %d per gateway (the operator's --max-generated-objects-per-gateway)", most); !strings.Contains(c.Message, want) {
			t.Errorf("limit %d: route %s: %q, want it to say %q", limit, last, c.Message, want)
		}
		if n := servicesOf(res, last); n != 0 {
			t.Errorf("limit %d: route %s has %d Services, want 0", limit, last, n)
		}
	}
}

// A held gateway leaves its generated objects alone, but not a Secret copy whose ReferenceGrant
// was withdrawn: only copies still permitted are kept.
func TestHeldGatewayKeepsOnlyPermittedCopies(t *testing.T) {
	s := limitsSnapshot()
	other := kroxyliciousv1alpha1.Namespace("certs")
	s.Gateway.Spec.Listeners[0].TLS.CertificateRefs = []kroxyliciousv1alpha1.SecretObjectReference{{Name: "shared", Namespace: &other}}
	s.Gateway.Spec.Infrastructure = &kroxyliciousv1alpha1.GatewayInfrastructure{ParametersRef: &kroxyliciousv1alpha1.LocalParametersReference{
		Group: "kroxylicious.io", Kind: "KafkaGatewayParameters", Name: "missing"}}
	cert, key := testKeyPair()
	shared := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "certs"}, Data: map[string][]byte{"tls.crt": cert, "tls.key": key}}
	s.Secrets = append(s.Secrets, shared)

	res := Translate(s)
	if !res.Hold || res.KeepCopies == nil || len(res.KeepCopies) != 0 {
		t.Fatalf("without a grant: hold %v, keep %v; want a hold that keeps no copy", res.Hold, res.KeepCopies)
	}
	s.ReferenceGrants = append(s.ReferenceGrants, &gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "g"},
		Spec: gatewayv1beta1.ReferenceGrantSpec{
			From: []gatewayv1beta1.ReferenceGrantFrom{{Group: "kroxylicious.io", Kind: "KafkaGateway", Namespace: "ns"}},
			To:   []gatewayv1beta1.ReferenceGrantTo{{Group: "", Kind: "Secret"}},
		}})
	res = Translate(s)
	if !res.KeepCopies[copyName("gw", shared)] || len(res.KeepCopies) != 1 {
		t.Errorf("with a grant: keep %v, want the copy of certs/shared", res.KeepCopies)
	}
}
