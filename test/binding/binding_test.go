package binding_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
)

// The Kafka every scenario uses: plain, TLS with mTLS, and TLS with SCRAM, all internal.
var (
	plain  = listener{name: "plain", typ: "internal", port: 9092}
	mtls   = listener{name: "tls", typ: "internal", port: 9093, tls: true, auth: "tls"}
	scram  = listener{name: "scram", typ: "internal", port: 9094, tls: true, auth: "scram-sha-512"}
	extTLS = listener{name: "external", typ: "loadbalancer", port: 9095, tls: true}
)

// The real operator binary under all of manifests/rbac, against Strimzi 1.2.0 (kafka.strimzi.io/v1).
func TestBindingWithStrimzi120ServingV1(t *testing.T) { runScenarios(t, "1.2.0", realOperator) }

// The binding controller alone under binding.yaml alone, against Strimzi 0.45.0 (v1beta2).
func TestBindingWithStrimzi0450ServingV1beta2(t *testing.T) { runScenarios(t, "0.45.0", bindingOnly) }

// runScenarios starts one control plane and one operator and runs every scenario of the issue in
// its own namespace, then restarts the operator and checks it writes nothing.
func runScenarios(t *testing.T, strimziVersion string, kind operatorKind) {
	h := newHarness(t, strimziVersion, kind)
	h.startOperator("operator")

	t.Run("create then Ready, rotate the password, renew the CA, switch the user from SCRAM to TLS", h.scramLifecycle)
	t.Run("a removed listener moves an automatic connection and fails a named one", h.listenerRemoved)
	t.Run("a cross-namespace user needs a ReferenceGrant", h.crossNamespace)
	t.Run("a Secret deleted or edited by hand is restored", h.secretRestored)
	t.Run("deleting the KafkaConnection deletes its Secret through garbage collection", h.garbageCollected)
	t.Run("a binding Secret of the user's name, labels and annotations; a rename; a foreign Secret refused", h.secretNameAndMetadata)
	t.Run("the status write leaves other field managers their fields", h.statusLeavesOthersFields)
	t.Run("a franz-go client configured from the operator's Secret produces and consumes over SASL_SSL", h.realClient)
	if strimziVersion != "0.45.0" { // the tlsroute listener type came after 0.45
		t.Run("a tlsroute listener with tls: false is bound as TLS to the Gateway, trusting its certificate", h.tlsrouteThroughGateway)
	} else { // Strimzi 1.x folded the oauth type into custom
		t.Run("an oauth listener is bound with the connection's OAuth client credentials", h.oauthListener)
	}
	t.Run("broken inputs get their reasons and recover by themselves", h.brokenInputs)
	t.Run("a restarted operator writes nothing for unchanged connections", h.restartWritesNothing)
}

func (h *harness) scramLifecycle(t *testing.T) {
	h.t = t
	ns := h.namespace("scram")
	h.setKafka(ns, "my-cluster", []listener{plain, mtls, scram}, nil)
	h.setClusterCA(ns, "my-cluster", h.clusterCA.CertPEM)
	h.setUser(ns, "alice", "my-cluster", "scram-sha-512", false, scramSecret("first-password"))
	h.createConnection(connection(ns, "app", "my-cluster", "alice", "", "", "PEM", "PKCS12", "JKS"))

	conn := h.waitReason(ns, "app", "Bound")
	if conn.Status.Binding == nil || conn.Status.Binding.Name != "app" || conn.Status.Listener != "scram" ||
		conn.Status.BootstrapServers != "my-cluster-kafka-bootstrap.scram.svc:9094" {
		t.Fatalf("status = %+v", conn.Status)
	}
	s, err := h.kube.CoreV1().Secrets(ns).Get(h.ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != "servicebinding.io/kafka" {
		t.Errorf("type = %s", s.Type)
	}
	if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != conn.UID || ref.Kind != "KafkaConnection" {
		t.Errorf("controller = %+v", ref)
	}
	for k, want := range map[string]string{
		"type": "kafka", "provider": "strimzi", "security.protocol": "SASL_SSL", "securityProtocol": "SASL_SSL",
		"bootstrap.servers": conn.Status.BootstrapServers, "bootstrap-servers": conn.Status.BootstrapServers,
		"username": "alice", "user": "alice", "password": "first-password", "sasl.mechanism": "SCRAM-SHA-512",
	} {
		if got := string(s.Data[k]); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}

	// Password rotation reaches the Secret.
	h.setUser(ns, "alice", "my-cluster", "scram-sha-512", false, scramSecret("second-password"))
	h.waitSecret(ns, "app", "the new password", func(d map[string][]byte) bool {
		return string(d["password"]) == "second-password" && strings.Contains(string(d["sasl.jaas.config"]), `password="second-password"`)
	})

	// CA renewal: the new ca.crt and the old certificate are both trusted in every format.
	newCA := bindingtest.NewCA(t, "cluster-ca v1", h.clusterCA.Cert.NotBefore.Add(1))
	h.setClusterCA(ns, "my-cluster", newCA.CertPEM, h.clusterCA.CertPEM)
	data := h.waitSecret(ns, "app", "both CA certificates", func(d map[string][]byte) bool {
		return len(bindingtest.PEMCertificates(d["ssl.truststore.crt"])) == 2
	})
	want := [][]byte{newCA.Cert.Raw, h.clusterCA.Cert.Raw}
	if got := bindingtest.PEMCertificates(data["ssl.truststore.crt"]); !sameCerts(got, want) {
		t.Errorf("PEM truststore holds %d certificates, not the new and old CA", len(got))
	}
	p12, err := bindingtest.PKCS12Trusted(data["ssl.truststore.p12"], string(data["ssl.truststore.password"]))
	if err != nil || !sameCerts(p12, want) {
		t.Errorf("PKCS12 truststore: %d certificates, %v", len(p12), err)
	}
	jks, err := bindingtest.JKSTrusted(data["ssl.truststore.jks"], string(data["ssl.truststore.password"]))
	if err != nil || !sameCerts(jks, want) {
		t.Errorf("JKS truststore: %d certificates, %v", len(jks), err)
	}

	// The user changes from SCRAM to TLS: until Strimzi has reconciled it the binding waits, then
	// it moves to the mTLS listener with a keystore and no password.
	h.setUser(ns, "alice", "my-cluster", "tls", true, nil)
	h.waitReason(ns, "app", "UserNotReady")
	h.setUser(ns, "alice", "my-cluster", "tls", false, h.tlsSecret("alice"))
	conn = h.waitReason(ns, "app", "Bound")
	if conn.Status.Listener != "tls" {
		t.Errorf("listener after the switch = %q, want tls", conn.Status.Listener)
	}
	data = h.waitSecret(ns, "app", "mTLS credentials", func(d map[string][]byte) bool {
		return string(d["security.protocol"]) == "SSL"
	})
	for _, k := range []string{"ssl.keystore.crt", "ssl.keystore.key", "ssl.keystore.p12", "ssl.keystore.jks", "ssl.keystore.password"} {
		if len(data[k]) == 0 {
			t.Errorf("%s missing after the switch to TLS", k)
		}
	}
	for _, k := range []string{"password", "username", "sasl.jaas.config", "sasl.mechanism"} {
		if _, ok := data[k]; ok {
			t.Errorf("%s left over after the switch to TLS", k)
		}
	}
}

func sameCerts(got, want [][]byte) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			return false
		}
	}
	return true
}

func (h *harness) listenerRemoved(t *testing.T) {
	h.t = t
	ns := h.namespace("listeners")
	h.setKafka(ns, "my-cluster", []listener{plain, extTLS}, nil)
	h.setClusterCA(ns, "my-cluster", h.clusterCA.CertPEM)
	h.createConnection(connection(ns, "auto", "my-cluster", "", "", ""))
	h.createConnection(connection(ns, "named", "my-cluster", "", "", "plain"))
	if c := h.waitReason(ns, "auto", "Bound"); c.Status.Listener != "plain" {
		t.Fatalf("automatic choice = %q, want the internal plain listener", c.Status.Listener)
	}
	h.waitReason(ns, "named", "Bound")

	// Only an external listener left: an automatic connection is not sent out of the cluster
	// unless it opts in (the Strimzi proposal's step 8); its Secret keeps the last good binding.
	h.setKafka(ns, "my-cluster", []listener{extTLS}, nil)
	if c := h.waitReason(ns, "auto", "NoInternalListener"); c.Status.Binding == nil || c.Status.Listener != "plain" {
		t.Errorf("status = %+v while the Secret keeps the plain listener's binding", c.Status)
	}
	h.updateConnection(ns, "auto", func(c *kafkav1beta2.KafkaConnection) { c.Spec.AllowExternalListener = true })
	h.poll("the automatic connection to move to the external listener", func() (bool, error) {
		c, err := h.kl.KafkaV1beta2().KafkaConnections(ns).Get(h.ctx, "auto", metav1.GetOptions{})
		return err == nil && c.Status.Listener == "external", nil
	})
	h.waitReason(ns, "auto", "Bound")
	h.waitSecret(ns, "auto", "the external listener", func(d map[string][]byte) bool {
		return string(d["security.protocol"]) == "SSL" && strings.HasSuffix(string(d["bootstrap.servers"]), ":9095")
	})
	named := h.waitReason(ns, "named", "ListenerNotFound")
	if named.Status.Binding == nil {
		t.Errorf("the named connection lost status.binding although its Secret stays")
	}
	h.waitEvent(ns, "named", "Warning", "ListenerNotFound")
}

func (h *harness) crossNamespace(t *testing.T) {
	h.t = t
	kafkaNS, appNS := h.namespace("kafka"), h.namespace("apps")
	h.setKafka(kafkaNS, "shared", []listener{scram}, nil)
	h.setClusterCA(kafkaNS, "shared", h.clusterCA.CertPEM)
	h.setUser(kafkaNS, "bob", "shared", "scram-sha-512", false, scramSecret("bobs-password"))
	conn := connection(appNS, "cross", "shared", "bob", kafkaNS, "")
	conn.Spec.Kafka.Namespace = kafkaNS
	h.createConnection(conn)

	h.waitReason(appNS, "cross", "RefNotPermitted")
	h.waitEvent(appNS, "cross", "Warning", "RefNotPermitted")
	if _, err := h.kube.CoreV1().Secrets(appNS).Get(h.ctx, "cross", metav1.GetOptions{}); err == nil {
		t.Fatal("a binding Secret exists without a ReferenceGrant")
	}

	gw, err := gatewayclient.NewForConfig(h.cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	// A grant from another namespace, or to another kind, does not count.
	h.createGrant(gw, kafkaNS, "unrelated", "elsewhere", "kafka.strimzi.io", "KafkaUser")
	h.createGrant(gw, kafkaNS, "wrong-kind", appNS, "kafka.strimzi.io", "Kafka")
	h.waitReason(appNS, "cross", "RefNotPermitted")

	h.createGrant(gw, kafkaNS, "allow-apps", appNS, "kafka.strimzi.io", "KafkaUser")
	h.waitReason(appNS, "cross", "Bound")
	h.waitSecret(appNS, "cross", "bob's credentials", func(d map[string][]byte) bool { return string(d["password"]) == "bobs-password" })

	// Withdrawing the grant withdraws the credentials.
	if err := gw.GatewayV1beta1().ReferenceGrants(kafkaNS).Delete(h.ctx, "allow-apps", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c := h.waitReason(appNS, "cross", "RefNotPermitted")
	h.waitSecretGone(appNS, "cross")
	if c.Status.Binding != nil {
		t.Errorf("status.binding = %+v after the grant was withdrawn", c.Status.Binding)
	}
}

func (h *harness) createGrant(gw gatewayclient.Interface, ns, name, fromNS, toGroup, toKind string) {
	h.t.Helper()
	g := &gatewayv1beta1.ReferenceGrant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gatewayv1beta1.ReferenceGrantSpec{
			From: []gatewayv1beta1.ReferenceGrantFrom{{Group: "kafka.strimzi.io", Kind: "KafkaConnection", Namespace: gatewayv1beta1.Namespace(fromNS)}},
			To:   []gatewayv1beta1.ReferenceGrantTo{{Group: gatewayv1beta1.Group(toGroup), Kind: gatewayv1beta1.Kind(toKind)}},
		},
	}
	if _, err := gw.GatewayV1beta1().ReferenceGrants(ns).Create(h.ctx, g, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) secretRestored(t *testing.T) {
	h.t = t
	ns := h.namespace("restore")
	h.setKafka(ns, "my-cluster", []listener{scram}, nil)
	h.setClusterCA(ns, "my-cluster", h.clusterCA.CertPEM)
	h.setUser(ns, "carol", "my-cluster", "scram-sha-512", false, scramSecret("carols-password"))
	h.createConnection(connection(ns, "app", "my-cluster", "carol", "", ""))
	h.waitReason(ns, "app", "Bound")
	orig := h.waitSecret(ns, "app", "created", func(d map[string][]byte) bool { return len(d) > 0 })

	if err := h.kube.CoreV1().Secrets(ns).Delete(h.ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitSecret(ns, "app", "recreated with the same data", func(d map[string][]byte) bool { return sameData(d, orig) })
	h.waitEvent(ns, "app", "Normal", "SecretRestored")

	// A hand edit: a changed password and an extra entry.
	patch := []byte(`{"data":{"password":"aGFja2Vk","extra":"eA=="}}`)
	if _, err := h.kube.CoreV1().Secrets(ns).Patch(h.ctx, "app", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "hand"}); err != nil {
		t.Fatal(err)
	}
	h.waitSecret(ns, "app", "restored after a hand edit", func(d map[string][]byte) bool { return sameData(d, orig) })
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func (h *harness) garbageCollected(t *testing.T) {
	h.t = t
	ns := h.namespace("gc")
	h.setKafka(ns, "my-cluster", []listener{plain}, nil)
	h.createConnection(connection(ns, "app", "my-cluster", "", "", ""))
	h.waitReason(ns, "app", "Bound")
	h.waitSecret(ns, "app", "created", func(d map[string][]byte) bool { return string(d["security.protocol"]) == "PLAINTEXT" })
	if err := h.kl.KafkaV1beta2().KafkaConnections(ns).Delete(h.ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitSecretGone(ns, "app")
}

// brokenInputs walks one connection through missing and broken inputs, each with its reason,
// while a healthy connection in the same namespace stays Bound, and checks it recovers.
func (h *harness) brokenInputs(t *testing.T) {
	h.t = t
	ns := h.namespace("broken")
	h.setKafka(ns, "healthy", []listener{plain}, nil)
	h.createConnection(connection(ns, "healthy", "healthy", "", "", ""))
	h.waitReason(ns, "healthy", "Bound")

	h.createConnection(connection(ns, "app", "later", "dave", "", ""))
	h.waitReason(ns, "app", "KafkaNotFound")
	h.waitEvent(ns, "app", "Warning", "KafkaNotFound")
	h.setKafka(ns, "later", []listener{scram}, []listener{})
	h.waitReason(ns, "app", "UserNotFound")
	h.setUser(ns, "dave", "later", "scram-sha-512", true, nil)
	h.waitReason(ns, "app", "BootstrapNotReady")
	h.setKafka(ns, "later", []listener{scram}, nil)
	h.waitReason(ns, "app", "UserNotReady")
	h.setUser(ns, "dave", "later", "scram-sha-512", false, nil)
	h.waitReason(ns, "app", "CACertificateMissing")
	h.setSecret(ns, "later-cluster-ca-cert", "later", map[string][]byte{"ca.crt": []byte("not a certificate")})
	h.waitReason(ns, "app", "CertificateNotPEM")
	h.setClusterCA(ns, "later", h.clusterCA.CertPEM)
	h.waitReason(ns, "app", "UserSecretMissing")
	h.setSecret(ns, "dave", "later", map[string][]byte{"sasl.jaas.config": []byte("x")})
	h.waitReason(ns, "app", "UserCredentialsMissing")
	h.setSecret(ns, "dave", "later", scramSecret("daves-password"))
	h.waitReason(ns, "app", "Bound")
	h.waitEvent(ns, "app", "Normal", "Bound")

	// A named listener that cannot serve the user.
	c, err := h.kl.KafkaV1beta2().KafkaConnections(ns).Get(h.ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.setKafka(ns, "later", []listener{scram, plain}, nil)
	c.Spec.Kafka.Listener = &kafkav1beta2.ListenerReference{Name: "plain"}
	if _, err := h.kl.KafkaV1beta2().KafkaConnections(ns).Update(h.ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitReason(ns, "app", "ListenerIncompatible")
	h.waitReason(ns, "healthy", "Bound")
}

func (h *harness) restartWritesNothing(t *testing.T) {
	h.t = t
	list, err := h.kl.KafkaV1beta2().KafkaConnections("").List(h.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.waitIdle(0)
	h.stopOperator()
	before := len(h.operatorWrites())
	h.startOperator("operator-restarted")
	h.waitIdle(float64(len(list.Items)))
	after := h.operatorWrites()
	if len(after) != before {
		var lines []string
		for _, e := range after[before:] {
			lines = append(lines, fmt.Sprintf("%s %s (%d)", e.Verb, e.RequestURI, e.ResponseStatus.Code))
		}
		t.Fatalf("the restarted operator wrote %d times for %d unchanged connections:\n%s\n%s",
			len(after)-before, len(list.Items), strings.Join(lines, "\n"), h.op.Log())
	}
	t.Logf("restart: %d connections, no Secret or KafkaConnection writes", len(list.Items))
}
