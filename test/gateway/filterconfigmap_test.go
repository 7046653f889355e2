package gateway_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// filterTemplateYAML is a KafkaFilter in Kroxylicious' shape (configTemplate, ${configmap:…} and
// ${secret:…}) and a route that uses it.
const filterTemplateYAML = `
kind: KafkaFilter
apiVersion: filter.kroxylicious.io/v1alpha1
metadata: {name: validate, namespace: %[1]s}
spec:
  type: RecordValidation
  configTemplate:
    rules:
      - topicNames: [orders]
        valueRule: {jsonSchemaFile: '${configmap:schemas:orders.json}'}
      - topicNames: [payments]
        valueRule: {jsonSchemaFile: '${secret:private-schemas:payments.json}'}
---
apiVersion: v1
kind: Secret
metadata: {name: private-schemas, namespace: %[1]s}
stringData: {payments.json: '{"type": "object"}'}
---
kind: KafkaRoute
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: validated, namespace: %[1]s}
spec:
  parentRefs:
    - name: gw
      brokers: [{advertisedBrokerIds: [0, 1]}]
      hostnames: [validated-%%.svc.cluster.local]
      rules: [{name: r, filters: [{name: validate}], backendRefs: [{name: backend, port: 9093}]}]
`

// TestFilterConfigMapReference: a KafkaFilter's ${configmap:…} reference to a ConfigMap that
// does not exist yet refuses the route (InvalidFilterSecretRef); once it exists the ConfigMap is
// mounted beside the Secret of its ${secret:…} reference, and a changed value changes the proxy
// pods' restart checksum, as a changed Secret does.
func TestFilterConfigMapReference(t *testing.T) {
	ns := "filter-configmap"
	namespace(t, ns)
	apply(t, fmt.Sprintf(backendYAML, ns)+"---"+fmt.Sprintf(gatewayYAML, ns, "gw", "cert")+"---"+fmt.Sprintf(filterTemplateYAML, ns))
	waitRouteCondition(t, op, ns, "validated", "ResolvedRefs", metav1.ConditionFalse, "InvalidFilterSecretRef")

	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "schemas", Namespace: ns}, Data: map[string]string{"orders.json": `{"type": "object"}`}}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRouteCondition(t, op, ns, "validated", "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")
	first := ""
	poll(t, op, "the ConfigMap and the Secret mounted in the proxy Deployment", func() (bool, error) {
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		var haveCM, haveSecret bool
		for _, v := range d.Spec.Template.Spec.Volumes {
			haveCM = haveCM || v.ConfigMap != nil && v.ConfigMap.Name == "schemas"
			haveSecret = haveSecret || v.Secret != nil && v.Secret.SecretName == "private-schemas"
		}
		first = d.Spec.Template.Annotations[wellknown.AnnotationRestartChecksum]
		return haveCM && haveSecret && first != "", nil
	})

	cm.Data["orders.json"] = `{"type": "object", "required": ["id"]}`
	if _, err := kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, op, "a new restart checksum after the ConfigMap changed", func() (bool, error) {
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return d.Spec.Template.Annotations[wellknown.AnnotationRestartChecksum] != first, nil
	})
}
