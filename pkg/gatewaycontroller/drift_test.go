package gatewaycontroller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

func TestDrift(t *testing.T) {
	desired := map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "b", "labels": map[string]any{"app": "x"}},
		"spec": map[string]any{
			"type":  "ClusterIP",
			"ports": []any{map[string]any{"name": "kafka", "port": int64(9092), "targetPort": int64(9092)}},
		},
	}
	for _, tc := range []struct {
		name string
		live map[string]any
		want string
	}{
		{"identical, type meta missing as from a lister", map[string]any{
			"metadata": map[string]any{"name": "b", "labels": map[string]any{"app": "x"}},
			"spec": map[string]any{
				"type":  "ClusterIP",
				"ports": []any{map[string]any{"name": "kafka", "port": int64(9092), "targetPort": int64(9092)}},
			},
		}, ""},
		{"server defaults and extra labels are not drift", map[string]any{
			"metadata": map[string]any{"name": "b", "uid": "u", "labels": map[string]any{"app": "x", "team": "y"}},
			"spec": map[string]any{
				"type": "ClusterIP", "clusterIP": "10.0.0.1",
				"ports": []any{map[string]any{"name": "kafka", "port": float64(9092), "targetPort": int32(9092), "protocol": "TCP"}},
			},
			"status": map[string]any{"loadBalancer": map[string]any{}},
		}, ""},
		{"a changed port", map[string]any{
			"metadata": map[string]any{"name": "b", "labels": map[string]any{"app": "x"}},
			"spec": map[string]any{
				"type":  "ClusterIP",
				"ports": []any{map[string]any{"name": "kafka", "port": int64(9093), "targetPort": int64(9092)}},
			},
		}, "spec.ports[0].port"},
		{"a removed label", map[string]any{
			"metadata": map[string]any{"name": "b"},
			"spec": map[string]any{
				"type":  "ClusterIP",
				"ports": []any{map[string]any{"name": "kafka", "port": int64(9092), "targetPort": int64(9092)}},
			},
		}, "metadata.labels"},
		{"an added port", map[string]any{
			"metadata": map[string]any{"name": "b", "labels": map[string]any{"app": "x"}},
			"spec": map[string]any{
				"type": "ClusterIP",
				"ports": []any{
					map[string]any{"name": "kafka", "port": int64(9092), "targetPort": int64(9092)},
					map[string]any{"name": "other", "port": int64(1)},
				},
			},
		}, "spec.ports"},
		{"a changed type", map[string]any{
			"metadata": map[string]any{"name": "b", "labels": map[string]any{"app": "x"}},
			"spec": map[string]any{
				"type":  "NodePort",
				"ports": []any{map[string]any{"name": "kafka", "port": int64(9092), "targetPort": int64(9092)}},
			},
		}, "spec.type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := drift(tc.live, desired); got != tc.want {
				t.Errorf("drift = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDriftOfTypedObjects compares the way the controller does: the desired object converted
// from a typed one, the live object a typed one from a lister that the server has defaulted.
func TestDriftOfTypedObjects(t *testing.T) {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", Annotations: map[string]string{wellknown.AnnotationAppliedHash: "h"}},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{"app": "proxy"},
			Ports:    []corev1.ServicePort{{Name: "kafka", Port: 9092, TargetPort: intstr.FromInt32(9092)}},
		},
	}
	desired, err := runtime.DefaultUnstructuredConverter.ToUnstructured(svc)
	if err != nil {
		t.Fatal(err)
	}
	live := svc.DeepCopy()
	live.TypeMeta = metav1.TypeMeta{}
	live.UID, live.ResourceVersion = "uid", "7"
	live.Spec.ClusterIP, live.Spec.ClusterIPs = "10.0.0.1", []string{"10.0.0.1"}
	live.Spec.Ports[0].Protocol = corev1.ProtocolTCP
	live.Spec.SessionAffinity = corev1.ServiceAffinityNone

	got, err := liveFields(live)
	if err != nil {
		t.Fatal(err)
	}
	if field := drift(got, desired); field != "" {
		t.Fatalf("a defaulted live Service drifted at %s", field)
	}
	live.Spec.Selector["app"] = "something-else"
	if got, err = liveFields(live); err != nil {
		t.Fatal(err)
	}
	if field := drift(got, desired); field != "spec.selector.app" {
		t.Fatalf("a hand-edited selector gave drift %q, want spec.selector.app", field)
	}
}
