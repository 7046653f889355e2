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
		budget     int64  // the filter budget; 0 is the proxy's default, 256 MiB
		wantLimit  string // "" for none
		wantMemEnv string // "" for none
	}{
		"no filters, default resources":   {DefaultResources(), false, 0, "", ""},
		"filters, default resources":      {DefaultResources(), true, 0, "1Gi", "921MiB"},
		"filters, the user's limit":       {corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("2Gi")}}, true, 0, "2Gi", "1843MiB"},
		"filters, a request above 1Gi":    {corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("3Gi")}}, true, 0, "3Gi", "2764MiB"},
		"filters, a CPU limit only":       {corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("2")}}, true, 0, "1Gi", "921MiB"},
		"no filters, the user's limit":    {corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("512Mi")}}, false, 0, "512Mi", "460MiB"},
		"no filters, a limit in bytes":    {corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("1000000")}}, false, 0, "1000000", "900000"},
		"filters, a 512Mi budget":         {DefaultResources(), true, 512 << 20, "2Gi", "1843MiB"},
		"filters, an odd budget":          {DefaultResources(), true, 300<<20 + 1, "1201Mi", "1080MiB"},
		"filters, a budget and a limit":   {corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}}, true, 512 << 20, "1Gi", "921MiB"},
		"no filters, a decimal limit (G)": {corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("1G")}}, false, 0, "1G", "858MiB"},
	} {
		c := &corev1.Container{Resources: *tc.resources.DeepCopy(), Env: []corev1.EnvVar{{Name: "GODEBUG", Value: "fips140=on"}}}
		budget := tc.budget
		if budget == 0 {
			budget = 256 << 20
		}
		memoryDefaults(c, tc.filters, budget)
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
