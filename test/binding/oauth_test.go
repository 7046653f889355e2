package binding_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/binding"
)

// oauthListener: a Strimzi 0.x oauth listener (Keycloak's shape) and a connection with OAuth
// client credentials. Without the credentials Secret the connection says so; once it exists the
// binding carries OAUTHBEARER, the listener's token endpoint and the client's credentials; a
// changed client secret reaches the binding (the Secret is not cached, its events are watched).
func (h *harness) oauthListener(t *testing.T) {
	h.t = t
	ns := h.namespace("oauth")
	sso := listener{name: "sso", typ: "internal", port: 9093, tls: true, auth: "oauth"}
	h.setKafka(ns, "keycloaked", []listener{sso}, nil)
	h.setOAuthTokenEndpoint(ns, "keycloaked", "sso", "https://keycloak.example.com/realms/kafka/protocol/openid-connect/token")
	h.setClusterCA(ns, "keycloaked", h.clusterCA.CertPEM)
	c := connection(ns, "app", "keycloaked", "", "", "", "PEM")
	c.Spec.OAuth = &kafkav1beta2.OAuthClient{ClientSecretRef: kafkav1beta2.SecretReference{Name: "app-oauth"}, Scope: "kafka"}
	h.createConnection(c)
	h.waitReason(ns, "app", binding.ReasonOAuthCredentialsMissing)

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-oauth"},
		Data: map[string][]byte{"clientId": []byte("orders-app"), "clientSecret": []byte("first-secret")}}
	if _, err := h.cp.Client.CoreV1().Secrets(ns).Create(h.ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitReason(ns, "app", "Bound")
	data := h.waitSecret(ns, "app", "the OAuth entries", func(d map[string][]byte) bool { return string(d["clientSecret"]) == "first-secret" })
	for k, want := range map[string]string{
		binding.KeySecurityProtocol: binding.ProtocolSASLSSL, binding.KeySASLMechanism: "OAUTHBEARER", binding.KeyOAuthClientID: "orders-app",
		binding.KeyOAuthTokenEndpoint: "https://keycloak.example.com/realms/kafka/protocol/openid-connect/token", binding.KeyOAuthScope: "kafka",
	} {
		if got := string(data[k]); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	secret.Data["clientSecret"] = []byte("rotated-secret")
	if _, err := h.cp.Client.CoreV1().Secrets(ns).Update(h.ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitSecret(ns, "app", "the rotated client secret", func(d map[string][]byte) bool { return string(d["clientSecret"]) == "rotated-secret" })
}

// setOAuthTokenEndpoint sets authentication.tokenEndpointUri on one listener of a Kafka.
func (h *harness) setOAuthTokenEndpoint(ns, name, listenerName, uri string) {
	h.t.Helper()
	client := h.dyn.Resource(h.gvr("kafkas")).Namespace(ns)
	obj, err := client.Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	ls, _, _ := unstructured.NestedSlice(obj.Object, "spec", "kafka", "listeners")
	for _, l := range ls {
		if m, ok := l.(map[string]any); ok && m["name"] == listenerName {
			m["authentication"] = map[string]any{"type": "oauth", "tokenEndpointUri": uri, "validIssuerUri": "https://keycloak.example.com/realms/kafka"}
		}
	}
	if err := unstructured.SetNestedSlice(obj.Object, ls, "spec", "kafka", "listeners"); err != nil {
		h.t.Fatal(err)
	}
	if _, err := client.Update(h.ctx, obj, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}
