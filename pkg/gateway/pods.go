package gateway

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

// Pod and Service settings from KafkaGatewayParameters: scheduling, pull secrets, resources,
// logging, extra pod metadata, the PodDisruptionBudget and the settings of generated Services.
// The functions here decorate what build.go makes; none of them changes an object when its
// settings are left out, except the default resource requests.

// KindPodDisruptionBudget is the kind of the proxy's PodDisruptionBudget.
const KindPodDisruptionBudget = "PodDisruptionBudget"

// PodDisruptionBudgetName names the gateway's PodDisruptionBudget.
func PodDisruptionBudgetName(gateway string) string { return gateway }

// DefaultResources are the proxy container's resources when the parameters set none: requests
// only. A request lets the scheduler place the pods and a ResourceQuota on requests admit them;
// a limit is left to the user, because a CPU limit throttles TLS handshakes under bursts and a
// memory limit sized without knowing the connection count risks an OOM kill of every
// connection the pod holds.
func DefaultResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("100m"),
		corev1.ResourceMemory: resource.MustParse("128Mi"),
	}}
}

// DefaultFilterMemoryLimit is the proxy container's memory limit when its virtual clusters run
// KafkaFilters and neither the parameters' resources nor the default ones set a limit, unless
// FilterMemoryLimitFactor times the proxy's filter budget is more. Filters decompress and parse
// record batches: memory that grows with what clients send, not only with the connection count.
// The proxy bounds it (limits.filterMemoryBytes, 256 MiB by default, and maxBatchBytes per
// batch), and a limit with GOMEMLIMIT below it makes the Go runtime collect garbage before the
// kernel kills the pod, so one pod's overload does not take the node's memory. 1 GiB is four
// times the default filter budget: room for the budget, the Go runtime's overhead and about 3,000
// active connections' relay buffers (256 KiB each) besides.
func DefaultFilterMemoryLimit() resource.Quantity { return resource.MustParse("1Gi") }

// FilterMemoryLimitFactor: the default memory limit of a proxy that runs filters is at least this
// many times its filter budget (config.Limits.FilterMemoryBytes), so a larger budget raises it.
const FilterMemoryLimitFactor = 4

// GoMemLimitPercent is GOMEMLIMIT as a share of the container's memory limit: the Go runtime
// collects garbage harder as the heap nears it, leaving the rest for stacks, goroutines' buffers
// outside the heap and the runtime's own memory.
const GoMemLimitPercent = 90

// memoryDefaults gives a container that runs filters (with a filter budget of filterBudget
// bytes) a default memory limit when it has none: DefaultFilterMemoryLimit, or
// FilterMemoryLimitFactor times the budget, or its memory request (which a limit may not be
// under), whichever is most. It sets GOMEMLIMIT to GoMemLimitPercent of the memory limit whenever
// there is one.
func memoryDefaults(c *corev1.Container, filters bool, filterBudget int64) {
	limit, limited := c.Resources.Limits[corev1.ResourceMemory]
	if !limited && filters {
		limit = DefaultFilterMemoryLimit()
		if filterBudget > 0 && filterBudget <= math.MaxInt64/FilterMemoryLimitFactor {
			const mib = 1 << 20
			scaled := (filterBudget*FilterMemoryLimitFactor + mib - 1) / mib // in MiB, rounded up
			if q := *resource.NewQuantity(scaled*mib, resource.BinarySI); q.Cmp(limit) > 0 {
				limit = q
			}
		}
		if req, ok := c.Resources.Requests[corev1.ResourceMemory]; ok && req.Cmp(limit) > 0 {
			limit = req.DeepCopy()
		}
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[corev1.ResourceMemory] = limit
		limited = true
	}
	if !limited || limit.Sign() <= 0 {
		return
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: "GOMEMLIMIT", Value: goMemLimit(limit.Value())})
}

// goMemLimit is GOMEMLIMIT for a memory limit of limit bytes: GoMemLimitPercent of it, in MiB
// when it is that large (Go's syntax: an integer with an optional B, KiB, MiB... suffix).
func goMemLimit(limit int64) string {
	v := limit/100*GoMemLimitPercent + limit%100*GoMemLimitPercent/100
	if v >= 1<<20 {
		return strconv.FormatInt(v>>20, 10) + "MiB"
	}
	return strconv.FormatInt(v, 10)
}

// parameters returns the spec of the KafkaGatewayParameters the gateway refers to, or nil.
// readParameters has checked the reference by the time build runs.
func (t *translator) parameters() *kroxyliciousv1alpha1.KafkaGatewayParametersSpec {
	inf := t.gw.Spec.Infrastructure
	if inf == nil || inf.ParametersRef == nil || t.s.Parameters == nil {
		return nil
	}
	return &t.s.Parameters.Spec
}

// checkPodSettings checks what the schema cannot (label and annotation syntax, stored objects
// from before a schema rule) and records the pod and Service metadata the operator does not allow.
func (t *translator) checkPodSettings(spec *kroxyliciousv1alpha1.KafkaGatewayParametersSpec) *refProblem {
	type metadata struct {
		what string
		m    map[string]string
	}
	var all []metadata
	if p := spec.Pod; p != nil {
		all = append(all, metadata{"pod label", p.Labels}, metadata{"pod annotation", p.Annotations})
		for k, v := range p.NodeSelector {
			if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
				return invalidParameters("pod.nodeSelector %s: %s", k, strings.Join(errs, "; "))
			}
		}
	}
	if s := spec.Services; s != nil {
		all = append(all, metadata{"service annotation", s.Annotations})
		ranges := s.LoadBalancerSourceRanges
		for _, r := range s.Routes {
			all = append(all, metadata{"service annotation", r.Annotations})
			ranges = append(append([]string(nil), ranges...), r.LoadBalancerSourceRanges...)
		}
		for _, cidr := range ranges {
			if _, err := netip.ParsePrefix(cidr); err != nil {
				return invalidParameters("services.loadBalancerSourceRanges: %q is not a CIDR such as 203.0.113.0/24", cidr)
			}
		}
	}
	if spec.Resources != nil && len(spec.Resources.Claims) > 0 {
		return invalidParameters("resources.claims is not supported")
	}
	if l := spec.Logging; l != nil {
		if l.Verbosity != nil && (*l.Verbosity < 0 || *l.Verbosity > 10) {
			return invalidParameters("logging.verbosity %d is not between 0 and 10", *l.Verbosity)
		}
		if l.Format != nil && *l.Format != "text" && *l.Format != "json" {
			return invalidParameters("logging.format %q is neither text nor json", *l.Format)
		}
	}
	denied := map[string]bool{}
	for _, md := range all {
		for _, k := range sortedKeys(md.m) {
			errs := validation.IsQualifiedName(k)
			if md.what == "pod label" {
				errs = append(errs, validation.IsValidLabelValue(md.m[k])...)
			}
			if len(errs) > 0 {
				return invalidParameters("%s %s: %s", md.what, k, strings.Join(errs, "; "))
			}
			if !t.metadataAllowed(k) && !denied[md.what+k] {
				denied[md.what+k] = true
				t.notAllowed = append(t.notAllowed, fmt.Sprintf("%s %s (allowed prefixes: %s)", md.what, k, strings.Join(t.s.Env.AllowedMetadataPrefixes, ", ")))
			}
		}
	}
	return nil
}

// decorateDeployment applies the pod settings, resources and logging flags to the proxy
// Deployment, and the memory defaults (memoryDefaults; filters: its virtual clusters run
// KafkaFilters, within a budget of filterBudget bytes). Labels and annotations already on the pod
// template (kafkalink's and the gateway's infrastructure metadata) are kept.
func (t *translator) decorateDeployment(dep *appsv1.Deployment, filters bool, filterBudget int64) {
	tmpl := &dep.Spec.Template
	c := &tmpl.Spec.Containers[0]
	c.Resources = DefaultResources()
	spec := t.parameters()
	if spec != nil && spec.Resources != nil {
		c.Resources = *spec.Resources.DeepCopy()
	}
	memoryDefaults(c, filters, filterBudget)
	if spec == nil {
		return
	}
	if l := spec.Logging; l != nil {
		if l.Verbosity != nil {
			c.Args = append(c.Args, "-v="+strconv.Itoa(int(*l.Verbosity)))
		}
		if l.Format != nil {
			c.Args = append(c.Args, "--logging-format="+*l.Format)
		}
	}
	p := spec.Pod
	if p == nil {
		return
	}
	addMissing(tmpl.Labels, p.Labels, t.metadataAllowed)
	addMissing(tmpl.Annotations, p.Annotations, t.metadataAllowed)
	ps := &tmpl.Spec
	if len(p.NodeSelector) > 0 {
		ps.NodeSelector = map[string]string{}
		for k, v := range p.NodeSelector {
			ps.NodeSelector[k] = v
		}
	}
	for i := range p.Tolerations {
		ps.Tolerations = append(ps.Tolerations, *p.Tolerations[i].DeepCopy())
	}
	ps.Affinity = p.Affinity.DeepCopy()
	for i := range p.TopologySpreadConstraints {
		ps.TopologySpreadConstraints = append(ps.TopologySpreadConstraints, *p.TopologySpreadConstraints[i].DeepCopy())
	}
	if p.PriorityClassName != nil {
		ps.PriorityClassName = *p.PriorityClassName
	}
	ps.ImagePullSecrets = append(ps.ImagePullSecrets, p.ImagePullSecrets...)
}

// addMissing copies the allowed entries of from into to, keeping what to already holds.
func addMissing(to, from map[string]string, allowed func(string) bool) {
	for k, v := range from {
		if _, ok := to[k]; !ok && allowed(k) {
			to[k] = v
		}
	}
}

// podDisruptionBudget lets voluntary disruptions (node drains) take one proxy pod at a time;
// nil with fewer than two replicas, where any budget would either block drains or allow all.
func (t *translator) podDisruptionBudget() *policyv1.PodDisruptionBudget {
	if t.replicas < 2 {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: KindPodDisruptionBudget},
		ObjectMeta: t.meta(PodDisruptionBudgetName(t.gw.Name), ""),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: SelectorLabels(t.gw.Name)},
			// A proxy pod that is not ready serves nobody: evicting it must not wait for the
			// budget, or one crash-looping pod would block every node drain.
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
}

// decorateService applies the Service settings of the route to one of its generated Services.
func (t *translator) decorateService(svc *corev1.Service, route string) {
	spec := t.parameters()
	if spec == nil || spec.Services == nil {
		return
	}
	set := routeServiceSettings(spec.Services, route)
	// Annotations: kafkalink's and the gateway's infrastructure ones stay.
	addMissing(svc.Annotations, set.Annotations, t.metadataAllowed)
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return
	}
	if set.LoadBalancerClass != nil {
		svc.Spec.LoadBalancerClass = set.LoadBalancerClass
	}
	if set.ExternalTrafficPolicy != nil {
		svc.Spec.ExternalTrafficPolicy = *set.ExternalTrafficPolicy
	}
	if len(set.LoadBalancerSourceRanges) > 0 {
		ranges := append([]string(nil), set.LoadBalancerSourceRanges...)
		sort.Strings(ranges)
		svc.Spec.LoadBalancerSourceRanges = ranges
	}
}

// headless reports whether the route's in-cluster per-host Services are headless
// (services.inClusterType: Headless, for all routes or in the route's entry).
func (t *translator) headless(route string) bool {
	spec := t.parameters()
	if spec == nil || spec.Services == nil {
		return false
	}
	set := routeServiceSettings(spec.Services, route)
	return set.InClusterType != nil && *set.InClusterType == kroxyliciousv1alpha1.InClusterServiceHeadless
}

// routeServiceSettings merges the settings for every route with the route's own entry.
func routeServiceSettings(s *kroxyliciousv1alpha1.GeneratedServices, route string) kroxyliciousv1alpha1.ServiceSettings {
	out := kroxyliciousv1alpha1.ServiceSettings{
		Annotations:              map[string]string{},
		LoadBalancerClass:        s.LoadBalancerClass,
		ExternalTrafficPolicy:    s.ExternalTrafficPolicy,
		LoadBalancerSourceRanges: s.LoadBalancerSourceRanges,
		InClusterType:            s.InClusterType,
	}
	for k, v := range s.Annotations {
		out.Annotations[k] = v
	}
	for _, r := range s.Routes {
		if string(r.Route) != route {
			continue
		}
		for k, v := range r.Annotations {
			out.Annotations[k] = v
		}
		if r.LoadBalancerClass != nil {
			out.LoadBalancerClass = r.LoadBalancerClass
		}
		if r.ExternalTrafficPolicy != nil {
			out.ExternalTrafficPolicy = r.ExternalTrafficPolicy
		}
		if len(r.LoadBalancerSourceRanges) > 0 {
			out.LoadBalancerSourceRanges = r.LoadBalancerSourceRanges
		}
		if r.InClusterType != nil {
			out.InClusterType = r.InClusterType
		}
	}
	return out
}
