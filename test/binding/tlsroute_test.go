package binding_test

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
)

var gvrGatewayAPIGateway = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}

// tlsrouteThroughGateway: a Strimzi tlsroute listener with tls: false (seed
// strimzi-tlsroute-listener.md), whose TLS ends at a Gateway API Gateway. kfake serves TLS with
// the Gateway listener's certificate, as the Gateway terminating TLS in front of the brokers
// would. The binding says SASL_SSL and trusts the Gateway certificate's CA (not the cluster CA);
// franz-go, configured from the Secret only, produces and consumes. Without the Gateway the
// connection says why it cannot be bound.
func (h *harness) tlsrouteThroughGateway(t *testing.T) {
	h.t = t
	gwCA := bindingtest.NewCA(t, "gateway issuer", time.Now().Add(-time.Hour))
	certPEM, keyPEM, pair := gwCA.Issue(t, "kafka-gateway", []string{"127.0.0.1", "localhost"}, false, false)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "gina", "ginas-password"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ns := h.namespace("tlsroute")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kafka-gateway-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": gwCA.CertPEM}}
	if _, err := h.cp.Client.CoreV1().Secrets(ns).Create(h.ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "kafka-gateway", "namespace": ns},
		"spec": map[string]any{"gatewayClassName": "example", "listeners": []any{map[string]any{
			"name": "kafka", "port": int64(443), "protocol": "TLS", "hostname": "*.example.com",
			"tls": map[string]any{"mode": "Terminate", "certificateRefs": []any{map[string]any{"name": "kafka-gateway-tls"}}},
		}}},
	}}
	if _, err := h.dyn.Resource(gvrGatewayAPIGateway).Namespace(ns).Create(h.ctx, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	external := listener{name: "external", typ: "tlsroute", port: 9094, tls: false, auth: "scram-sha-512",
		parentRefs: []any{map[string]any{"name": "kafka-gateway", "sectionName": "kafka"}}}
	h.setKafka(ns, "edge", []listener{external}, nil)
	h.setKafkaBootstrap(ns, "edge", "external", strings.Join(c.ListenAddrs(), ","))
	h.setUser(ns, "gina", "edge", "scram-sha-512", false, scramSecret("ginas-password"))
	h.createConnection(connection(ns, "app", "edge", "gina", "", "external")) // a tlsroute listener is outside the cluster: named
	h.waitReason(ns, "app", "Bound")
	data := h.waitSecret(ns, "app", "kfake's addresses", func(d map[string][]byte) bool {
		return string(d["bootstrap.servers"]) == strings.Join(c.ListenAddrs(), ",")
	})
	if got := string(data[binding.KeySecurityProtocol]); got != binding.ProtocolSASLSSL {
		t.Errorf("security.protocol %s, want %s: clients speak TLS to the Gateway", got, binding.ProtocolSASLSSL)
	}
	dir := bindingtest.Project(t, data)
	bindingtest.ProduceConsume(t, bindingtest.ClientOpts(t, dir, bindingtest.FromPEM), "orders", "through-the-gateway")

	if err := h.dyn.Resource(gvrGatewayAPIGateway).Namespace(ns).Delete(h.ctx, "kafka-gateway", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	conn := h.waitReason(ns, "app", binding.ReasonGatewayCertificateUnresolved)
	for _, cond := range conn.Status.Conditions {
		if cond.Type == "Ready" && !strings.Contains(cond.Message, "Gateway "+ns+"/kafka-gateway not found") {
			t.Errorf("Ready message %q does not say the Gateway is missing", cond.Message)
		}
	}
}
