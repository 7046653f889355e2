package gatewaycontroller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	filterv1alpha1 "github.com/kafkalink/kafkalink/apis/filter/v1alpha1"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

// TestFilterCheckReadsSecretValues: the filter check runs with the values of the Secrets a
// KafkaFilter names, as the proxy's pod will find them, although the Secret cache holds only
// key names: a Vault token read from the cache would look empty and refuse every Vault filter.
func TestFilterCheckReadsSecretValues(t *testing.T) {
	f := newFixture(t)
	var seen map[string][]byte
	f.c.env.Options.ProxyFilterTypes = []string{"RecordEncryption"}
	f.c.env.Options.CheckFilter = func(_ string, _ []byte, files map[string][]byte) error {
		seen = files
		return nil
	}
	filter := &filterv1alpha1.KafkaFilter{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "encrypt", UID: types.UID("encrypt-uid")},
		Spec: filterv1alpha1.KafkaFilterSpec{Type: "RecordEncryption",
			Config: &apiextensionsv1.JSON{Raw: []byte(`{"kms":"VaultKmsService","kmsConfig":{"vaultToken":{"passwordFile":"$(secretFile:vault:token)"}}}`)}},
	}
	if err := f.filters.Add(filter); err != nil {
		t.Fatal(err)
	}
	vault := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "vault", UID: "vault-uid", ResourceVersion: "3"},
		Data: map[string][]byte{"token": []byte("hvs.secret-token")}}
	f.add(newGateway("gw"), newService("kafka"), newCertSecret(t, "cert"), vault,
		newRoute("route", "gw", func(r *kroxyliciousv1alpha1.KafkaRoute) {
			r.Spec.ParentRefs[0].Rules[0].Filters = []kroxyliciousv1alpha1.FilterReference{{Name: "encrypt"}}
		}))
	f.sync("gw")
	for path, v := range seen {
		if strings.HasSuffix(path, "/vault/token") {
			if string(v) != "hvs.secret-token" {
				t.Fatalf("the check read %s as %q", path, v)
			}
			return
		}
	}
	t.Fatalf("the check saw no vault/token file: %v", seen)
}

// TestFilterCheckReadsConfigMapValues: a Kroxylicious-shaped KafkaFilter (configTemplate with a
// ${configmap:…} reference) is checked with the ConfigMap's values, which the cache does not
// keep for ConfigMaps kafkalink did not generate, and its mapper finds the gateway.
func TestFilterCheckReadsConfigMapValues(t *testing.T) {
	f := newFixture(t)
	var seen map[string][]byte
	f.c.env.Options.ProxyFilterTypes = []string{"RecordValidation"}
	f.c.env.Options.CheckFilter = func(_ string, _ []byte, files map[string][]byte) error {
		seen = files
		return nil
	}
	filter := &filterv1alpha1.KafkaFilter{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "validate", UID: types.UID("validate-uid")},
		Spec: filterv1alpha1.KafkaFilterSpec{Type: "RecordValidation",
			ConfigTemplate: &apiextensionsv1.JSON{Raw: []byte(`{"rules":[{"topicNames":["orders"],"valueRule":{"jsonSchemaFile":"${configmap:schemas:orders.json}"}}]}`)}},
	}
	if err := f.filters.Add(filter); err != nil {
		t.Fatal(err)
	}
	schemas := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "schemas", UID: "schemas-uid", ResourceVersion: "5"},
		Data: map[string]string{"orders.json": `{"type":"object"}`}}
	if err := f.kube.Tracker().Add(schemas.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	f.add(newGateway("gw"), newService("kafka"), newCertSecret(t, "cert"), schemas,
		newRoute("route", "gw", func(r *kroxyliciousv1alpha1.KafkaRoute) {
			r.Spec.ParentRefs[0].Rules[0].Filters = []kroxyliciousv1alpha1.FilterReference{{Name: "validate"}}
		}))
	f.sync("gw")
	if got := string(seen["/opt/kroxylicious/configmaps/filter/schemas/orders.json"]); got != `{"type":"object"}` {
		t.Errorf("the check read the schema as %q (files %v)", got, seen)
	}
	if keys := f.c.filterConfigMapToGateways(schemas); len(keys) != 1 || keys[0].Name != "gw" {
		t.Errorf("a change of the ConfigMap maps to %v, want gw", keys)
	}
}
