package apis_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// TestNewShapesAreAccepted: a KafkaFilter written for Kroxylicious (configTemplate with
// ${secret:…} and ${configmap:…}) and a KafkaConnection with the Strimzi Access Operator's
// secretName and template, at their bounds, are accepted as written.
func TestNewShapesAreAccepted(t *testing.T) {
	ensureNamespaces(t, "accepted")
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	labels := []string{}
	for i := range 32 {
		labels = append(labels, "l"+strings.Repeat("x", i)+": v")
	}
	cases := map[string]string{
		"a Kroxylicious KafkaProtocolFilter's spec": `
apiVersion: filter.kroxylicious.io/v1alpha1
kind: KafkaFilter
metadata: {name: vault}
spec:
  type: RecordEncryption
  configTemplate:
    kms: VaultKmsService
    kmsConfig:
      vaultTransitEngineUrl: http://vault.vault.svc.cluster.local:8200/v1/transit
      vaultToken: {password: '${secret:vault:token}'}
      tls: {trust: {storeFile: '${configmap:trust:ca.pem}', storeType: PEM}}
    selector: TemplateKekSelector
    selectorConfig: {template: "$(topicName)"}
`,
		"a connection with a binding Secret name, 32 labels and annotations": `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: c}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: my-cluster}
  secretName: my-app.kafka-binding
  allowExternalListener: true
  template:
    secret:
      metadata:
        labels: {` + strings.Join(labels, ", ") + `}
        annotations: {example.com/owner: 'Ana <ana@example.com>', reflector.v1.k8s.emberstack.com/reflection-allowed: "true", plain: ""}
`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				t.Fatalf("bad test YAML: %v", err)
			}
			gvk := obj.GroupVersionKind()
			resource := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"}
			if _, err := dyn.Resource(resource).Namespace("accepted").Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}
