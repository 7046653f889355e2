package gateway

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

// BenchmarkTranslate200Routes is the pure translation of one gateway with 200 in-cluster routes
// of 10 brokers each: 2,200 Services, 200 virtual clusters and their status.
func BenchmarkTranslate200Routes(b *testing.B) { benchTranslate(b, 200, 10) }

// BenchmarkTranslate1000Routes is one gateway with 1,000 routes of 3 brokers each: the
// translation time and the bytes of proxy configuration (the ConfigMap) the proxy reloads.
func BenchmarkTranslate1000Routes(b *testing.B) { benchTranslate(b, 1000, 3) }

func benchTranslate(b *testing.B, routes, brokers int) {
	// One Service per broker and per route bootstrap, plus the Deployment and its ConfigMap; the
	// operator's bound on generated objects is raised to fit, as the operator's flag would be.
	want := routes*(brokers+1) + 2
	s := &Snapshot{Env: Environment{ClusterDomain: "svc.cluster.local", ProxyImage: "img", Now: time.Unix(0, 0), MaxGeneratedObjects: routes * (brokers + 1)}}
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
	var ids []int32
	for id := range brokers {
		ids = append(ids, int32(id))
	}
	for i := range routes {
		s.Routes = append(s.Routes, &kroxyliciousv1alpha1.KafkaRoute{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("route-%04d", i), Namespace: "ns"},
			Spec: kroxyliciousv1alpha1.KafkaRouteSpec{ParentRefs: []kroxyliciousv1alpha1.KafkaRouteParentReference{{
				Name:      "gw",
				Brokers:   []kroxyliciousv1alpha1.BrokerTopology{{AdvertisedBrokerIds: ids}},
				Hostnames: []kroxyliciousv1alpha1.PercentHostname{kroxyliciousv1alpha1.PercentHostname(fmt.Sprintf("c%04d-%%.svc.cluster.local", i))},
				Rules:     []kroxyliciousv1alpha1.KafkaRouteRule{{Name: "r", BackendRefs: []kroxyliciousv1alpha1.BackendReference{{Name: "backend", Port: 9093}}}},
			}}},
		})
	}
	b.ReportAllocs()
	var configBytes int
	for b.Loop() {
		res := Translate(s)
		if len(res.Objects) != want {
			b.Fatalf("%d objects, want %d", len(res.Objects), want)
		}
		configBytes = configMapBytes(res)
	}
	b.ReportMetric(float64(configBytes), "config-bytes")
}

// configMapBytes is the size of the proxy configuration in the generated ConfigMap.
func configMapBytes(res *Result) int {
	n := 0
	for _, o := range res.Objects {
		if o.GetKind() != KindConfigMap {
			continue
		}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		for _, v := range data {
			n += len(v)
		}
	}
	return n
}
