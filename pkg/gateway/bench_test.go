package gateway

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

// BenchmarkTranslate200Routes is the pure translation of one gateway with 200 in-cluster routes
// of 10 brokers each: 2,200 Services, 200 virtual clusters and their status.
func BenchmarkTranslate200Routes(b *testing.B) {
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
	ids := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	for i := range 200 {
		s.Routes = append(s.Routes, &kroxyliciousv1alpha1.KafkaRoute{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("route-%03d", i), Namespace: "ns"},
			Spec: kroxyliciousv1alpha1.KafkaRouteSpec{ParentRefs: []kroxyliciousv1alpha1.KafkaRouteParentReference{{
				Name:      "gw",
				Brokers:   []kroxyliciousv1alpha1.BrokerTopology{{AdvertisedBrokerIds: ids}},
				Hostnames: []kroxyliciousv1alpha1.PercentHostname{kroxyliciousv1alpha1.PercentHostname(fmt.Sprintf("c%03d-%%.svc.cluster.local", i))},
				Rules:     []kroxyliciousv1alpha1.KafkaRouteRule{{Name: "r", BackendRefs: []kroxyliciousv1alpha1.BackendReference{{Name: "backend", Port: 9093}}}},
			}}},
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		res := Translate(s)
		if len(res.Objects) != 2202 {
			b.Fatalf("%d objects", len(res.Objects))
		}
	}
}
