package gatewaycontroller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestDriftOfPodSettings: the PodDisruptionBudget and the Deployment's resources, pull secrets
// and Service settings are compared like every other applied field, so what users add to them
// is kept and what they change of kafkalink's is restored.
func TestDriftOfPodSettings(t *testing.T) {
	pdb := func(maxUnavailable int32, annotations map[string]string) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "gw", Labels: map[string]string{"kafkalink.io/gateway": "gw"}, Annotations: annotations},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: ptr.To(intstr.FromInt32(maxUnavailable)),
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kafkalink.io/gateway": "gw"}},
			},
		}
	}
	dep := func(cpu string, pullSecret string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gw"}}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "proxy", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("128Mi")},
		}}}
		d.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: pullSecret}}
		return d
	}
	svc := func(ranges ...string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "route", Annotations: map[string]string{"example.com/lb": "internal"}},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: ranges, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal},
		}
	}
	withUserAnnotation := svc("10.0.0.0/8")
	withUserAnnotation.Annotations["team.example.com/contact"] = "bob"
	withStatus := pdb(1, map[string]string{"team.example.com/contact": "bob"})
	withStatus.Status = policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3, DisruptionsAllowed: 1}

	for name, tc := range map[string]struct {
		desired, live runtime.Object
		want          string
	}{
		"a budget with the user's annotation and the server's status is not drift": {pdb(1, nil), withStatus, ""},
		"a budget whose maxUnavailable was changed is drift":                       {pdb(1, nil), pdb(3, nil), "spec.maxUnavailable"},
		"resources written as 0.1 and read back as 100m are not drift":             {dep("0.1", "pull"), dep("100m", "pull"), ""},
		"a changed cpu request is drift":                                           {dep("100m", "pull"), dep("200m", "pull"), "spec.template.spec.containers[0].resources.requests.cpu"},
		"a replaced pull secret is drift":                                          {dep("100m", "pull"), dep("100m", "other"), "spec.template.spec.imagePullSecrets[0].name"},
		"a Service with the user's annotation is not drift":                        {svc("10.0.0.0/8"), withUserAnnotation, ""},
		"a widened source range is drift":                                          {svc("10.0.0.0/8"), svc("0.0.0.0/0"), "spec.loadBalancerSourceRanges[0]"},
	} {
		t.Run(name, func(t *testing.T) {
			desired, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc.desired)
			if err != nil {
				t.Fatal(err)
			}
			delete(desired, "status") // as the translator's toUnstructured does
			live, err := liveFields(tc.live)
			if err != nil {
				t.Fatal(err)
			}
			if got := drift(live, desired); got != tc.want {
				t.Errorf("drift = %q, want %q", got, tc.want)
			}
		})
	}
}
