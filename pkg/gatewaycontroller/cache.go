package gatewaycontroller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kafkalink/kafkalink/pkg/gateway"
)

// Cache transforms. The gateway controller watches every Service, Secret, ConfigMap and
// Deployment of the watched namespaces: Services and Secrets because routes and gateways refer to
// them by name, ConfigMaps and Deployments to see generated objects and to never take over
// someone else's object of the same name. They run before objects are cached, so the operator's
// memory grows with what it uses, not with everything the cluster holds.

// helmReleaseSecretType is the type of Helm's release records, often the largest Secrets of a
// cluster; they never hold the certificates, CAs or filter material a gateway refers to.
const helmReleaseSecretType corev1.SecretType = "helm.sh/release.v1"

// slimObject drops managed fields from every object, keeps of ConfigMaps and Deployments that
// no gateway generated only the metadata the foreign-name check reads, and drops the data of
// Helm release Secrets (keeping their keys, so a reference to one still reports what is missing).
func slimObject(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		if !generated(o) {
			return &corev1.ConfigMap{ObjectMeta: foreignMeta(o.ObjectMeta)}, nil
		}
	case *appsv1.Deployment:
		if !generated(o) {
			return &appsv1.Deployment{ObjectMeta: foreignMeta(o.ObjectMeta)}, nil
		}
	case *corev1.Secret:
		if o.Type == helmReleaseSecretType {
			for k := range o.Data {
				o.Data[k] = nil
			}
		}
	}
	return obj, nil
}

func generated(m metav1.Object) bool {
	_, ok := m.GetLabels()[gateway.LabelGateway]
	return ok
}

// foreignMeta is what the controller reads of an object it did not generate: its identity,
// labels and owners.
func foreignMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Labels: m.Labels, OwnerReferences: m.OwnerReferences, DeletionTimestamp: m.DeletionTimestamp,
	}
}
