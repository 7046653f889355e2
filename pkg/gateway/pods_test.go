package gateway

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A proxy that runs filters gets a memory limit when none is set (at least its memory request),
// and GOMEMLIMIT follows any memory limit, at GoMemLimitPercent of it.
func TestMemoryDefaults(t *testing.T) {
	q := resource.MustParse
	for name, tc := range map[string]struct {
		resources  corev1.ResourceRequirements
		filters    bool
		wantLimit  string // "" for none
		wantMemEnv string // "" for none
	}{
		"no filters, default resources":   {DefaultResources(), false, "", ""},
		"filters, default resources":      {DefaultResources(), true, "1Gi", "921MiB"},
		"filters, the user's limit":       {corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("2Gi")}}, true, "2Gi", "1843MiB"},
		"filters, a request above 1Gi":    {corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("3Gi")}}, true, "3Gi", "2764MiB"},
		"filters, a CPU limit only":       {corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("2")}}, true, "1Gi", "921MiB"},
		"no filters, the user's limit":    {corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("512Mi")}}, false, "512Mi", "460MiB"},
		"no filters, a limit in bytes":    {corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("1000000")}}, false, "1000000", "900000"},
		"no filters, a decimal limit (G)": {corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("1G")}}, false, "1G", "858MiB"},
	} {
		c := &corev1.Container{Resources: *tc.resources.DeepCopy(), Env: []corev1.EnvVar{{Name: "GODEBUG", Value: "fips140=on"}}}
		memoryDefaults(c, tc.filters)
		got, ok := c.Resources.Limits[corev1.ResourceMemory]
		switch {
		case tc.wantLimit == "" && ok:
			t.Errorf("%s: memory limit %s, want none", name, got.String())
		case tc.wantLimit != "" && (!ok || got.Cmp(q(tc.wantLimit)) != 0):
			t.Errorf("%s: memory limit %s, want %s", name, got.String(), tc.wantLimit)
		}
		var env string
		for _, e := range c.Env {
			if e.Name == "GOMEMLIMIT" {
				env = e.Value
			}
		}
		if env != tc.wantMemEnv {
			t.Errorf("%s: GOMEMLIMIT %q, want %q", name, env, tc.wantMemEnv)
		}
		if c.Env[0].Name != "GODEBUG" {
			t.Errorf("%s: the environment already set is lost: %v", name, c.Env)
		}
		if tc.resources.Requests.Memory().Cmp(*c.Resources.Requests.Memory()) != 0 {
			t.Errorf("%s: the memory request changed", name)
		}
	}
}
