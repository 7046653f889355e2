package gateway

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestClusterIPFormChanges(t *testing.T) {
	tests := map[string]struct {
		live, desired string // spec.clusterIP
		want          bool
	}{
		"an allocated address that is to become headless is recreated":   {live: "10.96.0.10", desired: corev1.ClusterIPNone, want: true},
		"a headless Service that is to get an address is recreated":      {live: corev1.ClusterIPNone, desired: "", want: true},
		"an allocated address that stays allocated changes in place":     {live: "10.96.0.10", desired: "", want: false},
		"a headless Service that stays headless changes in place":        {live: corev1.ClusterIPNone, desired: corev1.ClusterIPNone, want: false},
		"a Service without a cluster IP (ExternalName) changes in place": {live: "", desired: corev1.ClusterIPNone, want: false},
		"a dual-stack address that is to become headless is recreated":   {live: "fd00::a", desired: corev1.ClusterIPNone, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			live := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: tc.live}}
			desired := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: tc.desired}}
			if got := ClusterIPFormChanges(live, desired); got != tc.want {
				t.Errorf("ClusterIPFormChanges(%q, %q) = %v, want %v", tc.live, tc.desired, got, tc.want)
			}
		})
	}
}
