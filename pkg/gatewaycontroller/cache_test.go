package gatewaycontroller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kafkalink/kafkalink/pkg/gateway"
)

func TestSlimObject(t *testing.T) {
	meta := func(labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: "x", Namespace: "ns", UID: "u", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{Kind: "KafkaGateway", Name: "gw", Controller: ptr.To(true)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			Annotations:     map[string]string{"big": "annotation"},
		}
	}
	ours := map[string]string{gateway.LabelGateway: "gw"}

	t.Run("a foreign ConfigMap keeps only its identity, labels and owners", func(t *testing.T) {
		out, _ := slimObject(&corev1.ConfigMap{ObjectMeta: meta(nil), Data: map[string]string{"k": "v"}})
		cm := out.(*corev1.ConfigMap)
		if cm.Data != nil || cm.Annotations != nil || cm.ManagedFields != nil {
			t.Errorf("kept %+v", cm)
		}
		if cm.Name != "x" || cm.UID != "u" || len(cm.OwnerReferences) != 1 {
			t.Errorf("lost identity or owners: %+v", cm.ObjectMeta)
		}
	})
	t.Run("a generated ConfigMap is kept whole, without managed fields", func(t *testing.T) {
		out, _ := slimObject(&corev1.ConfigMap{ObjectMeta: meta(ours), Data: map[string]string{"k": "v"}})
		cm := out.(*corev1.ConfigMap)
		if cm.Data["k"] != "v" || cm.Annotations["big"] != "annotation" || cm.ManagedFields != nil {
			t.Errorf("got %+v", cm)
		}
	})
	t.Run("a foreign Deployment keeps no spec", func(t *testing.T) {
		out, _ := slimObject(&appsv1.Deployment{ObjectMeta: meta(nil), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)}})
		if d := out.(*appsv1.Deployment); d.Spec.Replicas != nil || d.Name != "x" {
			t.Errorf("got %+v", d)
		}
	})
	t.Run("a generated Deployment is kept whole", func(t *testing.T) {
		out, _ := slimObject(&appsv1.Deployment{ObjectMeta: meta(ours), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)}})
		if d := out.(*appsv1.Deployment); d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
			t.Errorf("got %+v", d)
		}
	})
	t.Run("a Helm release Secret keeps its keys, not their values", func(t *testing.T) {
		out, _ := slimObject(&corev1.Secret{ObjectMeta: meta(nil), Type: helmReleaseSecretType, Data: map[string][]byte{"release": []byte("huge")}})
		s := out.(*corev1.Secret)
		if v, ok := s.Data["release"]; !ok || v != nil {
			t.Errorf("got %q (key kept: %v)", v, ok)
		}
	})
	t.Run("a TLS Secret is kept whole", func(t *testing.T) {
		out, _ := slimObject(&corev1.Secret{ObjectMeta: meta(nil), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("CERT")}})
		if s := out.(*corev1.Secret); string(s.Data["tls.crt"]) != "CERT" || s.ManagedFields != nil {
			t.Errorf("got %+v", s)
		}
	})
	t.Run("anything else passes through", func(t *testing.T) {
		if out, err := slimObject("tombstone"); err != nil || out != "tombstone" {
			t.Errorf("got %v, %v", out, err)
		}
	})
}
