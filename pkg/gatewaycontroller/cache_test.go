package gatewaycontroller

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kafkalink/kafkalink/pkg/wellknown"
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
	ours := map[string]string{wellknown.LabelGateway: "gw"}

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
	t.Run("anything else passes through", func(t *testing.T) {
		if out, err := slimObject("tombstone"); err != nil || out != "tombstone" {
			t.Errorf("got %v, %v", out, err)
		}
	})
}

func TestSecretDataFetchesOnlyOnNewResourceVersion(t *testing.T) {
	kube := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cert", ResourceVersion: "1"}, Data: map[string][]byte{"tls.key": []byte("K1")}})
	gets := 0
	kube.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) { gets++; return false, nil, nil })
	d := newSecretData(kube)
	slim := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cert", ResourceVersion: "1"}, Data: map[string][]byte{"tls.key": nil}}
	for range 3 {
		full, err := d.get(context.Background(), slim)
		if err != nil || full == nil || string(full.Data["tls.key"]) != "K1" {
			t.Fatalf("got %+v, %v", full, err)
		}
	}
	if gets != 1 {
		t.Errorf("%d GETs for one resourceVersion, want 1", gets)
	}
	d.sweep(func(string) bool { return false })
	if len(d.m) != 0 {
		t.Errorf("sweep kept %d Secrets no one names", len(d.m))
	}
	_ = kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("secrets"), "ns", "cert")
	slim.ResourceVersion = "2"
	if full, err := d.get(context.Background(), slim); full != nil || err != nil {
		t.Errorf("a deleted Secret: %+v, %v", full, err)
	}
}
