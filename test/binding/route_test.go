package binding_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	"sigs.k8s.io/yaml"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
)

// The gateway in front of the cluster: the seed's in-cluster example, with the certificate
// Secret cert-manager would write.
const (
	routeNS          = "gw"
	routeGatewayYAML = `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGateway
metadata: {name: simple, namespace: gw}
spec:
  infrastructure:
    parametersRef: {group: kroxylicious.io, kind: KafkaGatewayParameters, name: params}
  listeners:
  - name: tls
    port: 9092
    protocol: kroxylicious.io/kafka-tls
    tls: {certificateRefs: [{kind: Secret, name: my-cert}]}
`
	routeParamsYAML = `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGatewayParameters
metadata: {name: params, namespace: gw}
spec:
  management: {port: 9190}
`
	routeRouteYAML = `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaRoute
metadata: {name: my-route, namespace: gw}
spec:
  parentRefs:
  - name: simple
    sectionName: tls
    brokers: [{advertisedBrokerIds: [0, 1, 2]}]
    hostnames: [my-cluster-%.svc.cluster.local]
    rules: [{name: all, backendRefs: [{kind: Service, name: my-cluster-kafka-bootstrap, port: 9093}]}]
`
)

// TestBindingThroughAKafkaRoute runs the real operator (binding and gateway controllers, all of
// manifests/rbac) and binds KafkaConnections that name a KafkaRoute: the Secret points at the
// route's in-cluster bootstrap host on the listener port, trusts the listener certificate's CA,
// carries the KafkaUser's SCRAM credentials, and follows the certificate, the user's password,
// the route and the gateway as they change.
func TestBindingThroughAKafkaRoute(t *testing.T) {
	h := newHarness(t, "1.2.0", realOperator)
	h.startOperator("operator")
	top := h.t
	run := func(name string, f func(t *testing.T)) {
		top.Helper()
		if !top.Run(name, func(t *testing.T) { h.t = t; defer func() { h.t = top }(); f(t) }) {
			top.FailNow()
		}
	}

	ns := h.namespace(routeNS)
	gwCA := bindingtest.NewCA(t, "gateway-ca v0", time.Now().Add(-time.Hour))
	h.setCertificate(ns, "my-cert", gwCA, "my-cluster-bootstrap.gw.svc.cluster.local")
	h.createBackendService(ns, "my-cluster-kafka-bootstrap", 9093)
	params := decodeYAML[kroxyliciousv1alpha1.KafkaGatewayParameters](t, routeParamsYAML)
	if _, err := h.kl.KroxyliciousV1alpha1().KafkaGatewayParameters(ns).Create(h.ctx, params, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gw := decodeYAML[kroxyliciousv1alpha1.KafkaGateway](t, routeGatewayYAML)
	if _, err := h.kl.KroxyliciousV1alpha1().KafkaGateways(ns).Create(h.ctx, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	route := decodeYAML[kroxyliciousv1alpha1.KafkaRoute](t, routeRouteYAML)
	if _, err := h.kl.KroxyliciousV1alpha1().KafkaRoutes(ns).Create(h.ctx, route, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.setUser(ns, "alice", "my-cluster", "scram-sha-512", false, scramSecret("first-password"))
	h.createConnection(routeConnection(ns, "app", "my-route", "", "alice"))

	run("the binding looks like a real cluster: route bootstrap, SASL_SSL, the listener CA, the user's credentials", func(t *testing.T) {
		conn := h.waitReason(ns, "app", "Bound")
		const bootstrap = "my-cluster-bootstrap.gw.svc.cluster.local:9092"
		if conn.Status.Listener != "tls" || conn.Status.BootstrapServers != bootstrap || conn.Status.Binding == nil || conn.Status.Binding.Name != "app" {
			t.Errorf("status = %+v", conn.Status)
		}
		data := h.waitSecret(ns, "app", "the route binding", func(map[string][]byte) bool { return true })
		for k, want := range map[string]string{
			"type": "kafka", "provider": "kafkalink",
			"bootstrap.servers": bootstrap, "bootstrap-servers": bootstrap, "bootstrapServers": bootstrap,
			"security.protocol": "SASL_SSL", "securityProtocol": "SASL_SSL",
			"username": "alice", "user": "alice", "password": "first-password", "sasl.mechanism": "SCRAM-SHA-512",
			"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="first-password";`,
		} {
			if got := string(data[k]); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		if !trusts(data, gwCA) {
			t.Errorf("the truststore does not hold exactly the gateway CA")
		}
		for _, k := range []string{"ssl.keystore.crt", "ssl.keystore.key", "tls.key", "tls.crt"} {
			if _, ok := data[k]; ok {
				t.Errorf("%s must not be in a route binding", k)
			}
		}
	})

	run("a renewed certificate with a new ca.crt moves the truststore", func(t *testing.T) {
		renewed := bindingtest.NewCA(t, "gateway-ca v1", gwCA.Cert.NotBefore.Add(time.Second))
		h.setCertificate(ns, "my-cert", renewed, "my-cluster-bootstrap.gw.svc.cluster.local")
		data := h.waitSecret(ns, "app", "the renewed CA", func(d map[string][]byte) bool { return trusts(d, renewed) })
		if string(data["password"]) != "first-password" {
			t.Errorf("the credentials changed with the certificate")
		}
		gwCA = renewed
	})

	run("a rotated password reaches the binding", func(t *testing.T) {
		h.setUser(ns, "alice", "my-cluster", "scram-sha-512", false, scramSecret("second-password"))
		h.waitSecret(ns, "app", "the new password", func(d map[string][]byte) bool { return string(d["password"]) == "second-password" })
	})

	run("a changed route hostname moves the bootstrap once the gateway accepts it", func(t *testing.T) {
		r, err := h.kl.KroxyliciousV1alpha1().KafkaRoutes(ns).Get(h.ctx, "my-route", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r.Spec.ParentRefs[0].Hostnames = []kroxyliciousv1alpha1.PercentHostname{"orders-%.svc.cluster.local"}
		if _, err := h.kl.KroxyliciousV1alpha1().KafkaRoutes(ns).Update(h.ctx, r, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		h.waitSecret(ns, "app", "the new bootstrap host", func(d map[string][]byte) bool {
			return string(d["bootstrap.servers"]) == "orders-bootstrap.gw.svc.cluster.local:9092"
		})
	})

	run("a changed listener port moves the bootstrap", func(t *testing.T) {
		g, err := h.kl.KroxyliciousV1alpha1().KafkaGateways(ns).Get(h.ctx, "simple", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		g.Spec.Listeners[0].Port = 9443
		if _, err := h.kl.KroxyliciousV1alpha1().KafkaGateways(ns).Update(h.ctx, g, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		h.waitSecret(ns, "app", "the new port", func(d map[string][]byte) bool {
			return string(d["bootstrap.servers"]) == "orders-bootstrap.gw.svc.cluster.local:9443"
		})
		// The Secret is written before the status: wait for the status too.
		h.poll("the new port in status", func() (bool, error) {
			c, err := h.kl.KafkaV1beta2().KafkaConnections(ns).Get(h.ctx, "app", metav1.GetOptions{})
			return err == nil && c.Status.BootstrapServers == "orders-bootstrap.gw.svc.cluster.local:9443", nil
		})
	})

	run("a CA Secret named in the spec is trusted instead, and watched", func(t *testing.T) {
		c := routeConnection(ns, "own-ca", "my-route", "", "")
		c.Spec.Kafka.CASecret = &kafkav1beta2.SecretReference{Name: "custom-ca"}
		h.createConnection(c)
		h.waitReason(ns, "own-ca", "CACertificateMissing")
		h.waitEvent(ns, "own-ca", corev1.EventTypeWarning, "CACertificateMissing")
		custom := bindingtest.NewCA(t, "custom-ca", time.Now().Add(-time.Hour))
		if _, err := h.kube.CoreV1().Secrets(ns).Create(h.ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "custom-ca", Namespace: ns},
			Data:       map[string][]byte{"ca.crt": custom.CertPEM},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		h.waitReason(ns, "own-ca", "Bound")
		data := h.waitSecret(ns, "own-ca", "the custom CA", func(d map[string][]byte) bool { return trusts(d, custom) })
		if string(data["security.protocol"]) != "SSL" {
			t.Errorf("security.protocol without a user = %q, want SSL", data["security.protocol"])
		}
		if _, ok := data["password"]; ok {
			t.Errorf("credentials in a binding without a user")
		}
	})

	run("failures name their reason", func(t *testing.T) {
		h.createConnection(routeConnection(ns, "missing", "nope", "", ""))
		conn := h.waitReason(ns, "missing", "RouteNotFound")
		if c := conn.Status.Conditions[0]; c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "KafkaRoute gw/nope does not exist") {
			t.Errorf("condition = %+v", c)
		}
		h.waitEvent(ns, "missing", corev1.EventTypeWarning, "RouteNotFound")

		h.setUser(ns, "bob", "my-cluster", "tls", false, h.tlsSecret("bob"))
		h.createConnection(routeConnection(ns, "mtls", "my-route", "", "bob"))
		conn = h.waitReason(ns, "mtls", "UserAuthenticationUnsupported")
		if !strings.Contains(conn.Status.Conditions[0].Message, "terminates TLS") {
			t.Errorf("message = %q", conn.Status.Conditions[0].Message)
		}
		for _, name := range []string{"missing", "mtls"} {
			if _, err := h.kube.CoreV1().Secrets(ns).Get(h.ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("Secret %s exists for a failed binding: %v", name, err)
			}
		}

		c := routeConnection(ns, "wrong-listener", "my-route", "", "")
		c.Spec.Kafka.Listener = &kafkav1beta2.ListenerReference{Name: "plain"}
		h.createConnection(c)
		h.waitReason(ns, "wrong-listener", "ListenerNotFound")
		c = routeConnection(ns, "wrong-host", "my-route", "", "")
		c.Spec.Kafka.Hostname = "my-cluster-%.svc.cluster.local" // the route's old hostname
		h.createConnection(c)
		h.waitReason(ns, "wrong-host", "HostnameNotFound")
	})

	run("a route in another namespace needs a ReferenceGrant there", func(t *testing.T) {
		other := h.namespace("gw-apps")
		h.createConnection(routeConnection(other, "cross", "my-route", ns, ""))
		h.waitReason(other, "cross", "RefNotPermitted")
		gwc, err := gatewayclient.NewForConfig(h.cp.Config)
		if err != nil {
			t.Fatal(err)
		}
		h.createGrant(gwc, ns, "apps", other, "kroxylicious.io", "KafkaRoute")
		conn := h.waitReason(other, "cross", "Bound")
		if conn.Status.BootstrapServers != "orders-bootstrap.gw.svc.cluster.local:9443" {
			t.Errorf("bootstrap = %q", conn.Status.BootstrapServers)
		}
		h.waitSecret(other, "cross", "the gateway CA", func(d map[string][]byte) bool { return trusts(d, gwCA) })
	})

	run("a restarted operator writes nothing for unchanged route connections", h.restartWritesNothing)
}

// routeConnection builds a KafkaConnection to a KafkaRoute, optionally with a user.
func routeConnection(ns, name, route, routeNS, user string) *kafkav1beta2.KafkaConnection {
	c := &kafkav1beta2.KafkaConnection{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kafkav1beta2.KafkaConnectionSpec{
			Kafka: kafkav1beta2.KafkaReference{APIVersion: "kroxylicious.io/v1alpha1", Kind: "KafkaRoute", Name: route, Namespace: routeNS},
		},
	}
	if user != "" {
		c.Spec.User = &kafkav1beta2.UserReference{APIVersion: "kafka.strimzi.io/v1beta2", Kind: "KafkaUser", Name: user}
	}
	return c
}

// setCertificate creates or replaces the gateway's certificate Secret as cert-manager writes it:
// tls.crt and tls.key for the hosts, and ca.crt, the issuer's certificate.
func (h *harness) setCertificate(ns, name string, ca *bindingtest.CA, hosts ...string) {
	h.t.Helper()
	certPEM, keyPEM, _ := ca.Issue(h.t, name, hosts, false, false)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{"cert-manager.io/issuer-name": "gw-issuer"}},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": ca.CertPEM},
	}
	existing, err := h.kube.CoreV1().Secrets(ns).Get(h.ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = h.kube.CoreV1().Secrets(ns).Create(h.ctx, s, metav1.CreateOptions{})
	case err == nil:
		s.ResourceVersion = existing.ResourceVersion
		_, err = h.kube.CoreV1().Secrets(ns).Update(h.ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

// createBackendService creates the Service a route's rule points at (Strimzi's bootstrap Service).
func (h *harness) createBackendService(ns, name string, port int32) {
	h.t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tls", Port: port}}},
	}
	if _, err := h.kube.CoreV1().Services(ns).Create(h.ctx, svc, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// trusts reports whether the PEM and PKCS12 truststores of a binding hold exactly the CA.
func trusts(data map[string][]byte, ca *bindingtest.CA) bool {
	pemCerts := bindingtest.PEMCertificates(data["ssl.truststore.crt"])
	if len(pemCerts) != 1 || !bytes.Equal(pemCerts[0], ca.Cert.Raw) {
		return false
	}
	p12, err := bindingtest.PKCS12Trusted(data["ssl.truststore.p12"], string(data["ssl.truststore.password"]))
	return err == nil && len(p12) == 1 && bytes.Equal(p12[0], ca.Cert.Raw)
}

func decodeYAML[T any](t *testing.T, doc string) *T {
	t.Helper()
	out := new(T)
	if err := yaml.UnmarshalStrict([]byte(doc), out); err != nil {
		t.Fatal(fmt.Errorf("test YAML: %w", err))
	}
	return out
}
