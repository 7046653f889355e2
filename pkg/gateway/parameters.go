package gateway

import (
	"fmt"
	"sort"
	"strings"
	"time"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/proxy/config"
)

// readParameters applies the KafkaGatewayParameters, or the defaults without a reference.
func (t *translator) readParameters() *refProblem {
	t.replicas = 1
	t.managementPort = config.DefaultManagementPort
	ref := gatewaymodel.ParametersRef(t.gw)
	if ref == nil {
		return nil
	}
	if !gatewaymodel.IsParametersRef(ref) {
		return invalidParameters("parametersRef must name a kroxylicious.io KafkaGatewayParameters, not %s %s", ref.Group, ref.Kind)
	}
	p := t.s.Parameters
	if p == nil || p.Name != ref.Name || p.Namespace != t.ns {
		return invalidParameters("KafkaGatewayParameters %s/%s not found", t.ns, ref.Name)
	}
	spec := p.Spec
	if spec.Replicas != nil {
		t.replicas = *spec.Replicas
	}
	// The seed's flat port and prometheusMetrics mean management.port and management.prometheusMetrics.
	if spec.Port != nil {
		t.managementPort = int32(*spec.Port)
	}
	if spec.PrometheusMetrics != nil {
		t.metrics = *spec.PrometheusMetrics
	}
	if m := spec.Management; m != nil {
		if m.Port != nil {
			t.managementPort = int32(*m.Port)
		}
		if m.PrometheusMetrics != nil {
			t.metrics = *m.PrometheusMetrics
		}
	}
	if t.replicas < 0 {
		return invalidParameters("replicas must not be negative")
	}
	if t.managementPort < 1 || t.managementPort > 65535 {
		return invalidParameters("management port %d is out of range", t.managementPort)
	}
	if p := t.readLimits(spec.Limits); p != nil {
		return p
	}
	if p := t.checkPodSettings(&spec); p != nil {
		return p
	}
	t.readIngressDomains(spec.IngressDomains)
	t.parentRefs = spec.ParentRefs
	return nil
}

// invalidParameters is a problem with the KafkaGatewayParameters, which holds the gateway.
func invalidParameters(format string, args ...any) *refProblem {
	return &refProblem{reason: ReasonInvalidParameters, message: fmt.Sprintf(format, args...)}
}

// readIngressDomains keeps the ingress domains the operator allows and reports the others.
func (t *translator) readIngressDomains(domains []string) {
	t.ingressDomains = nil
	for _, d := range domains {
		if domainAllowed(d, t.s.Env.AllowedIngressDomains) {
			t.ingressDomains = append(t.ingressDomains, d)
		} else {
			t.deniedDomains = append(t.deniedDomains, d)
			t.notAllowed = append(t.notAllowed, fmt.Sprintf("ingress domain %s (allowed: %s)", d, strings.Join(t.s.Env.AllowedIngressDomains, ", ")))
		}
	}
}

// checkMetadata records the infrastructure labels and annotations the operator does not allow.
func (t *translator) checkMetadata() {
	inf := t.gw.Spec.Infrastructure
	if inf == nil || t.s.Env.AllowedMetadataPrefixes == nil {
		return
	}
	for _, kv := range []struct {
		what string
		m    map[string]string
	}{{"label", inf.Labels}, {"annotation", inf.Annotations}} {
		keys := make([]string, 0, len(kv.m))
		for k := range kv.m {
			if !t.metadataAllowed(k) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.notAllowed = append(t.notAllowed, fmt.Sprintf("%s %s (allowed prefixes: %s)", kv.what, k, strings.Join(t.s.Env.AllowedMetadataPrefixes, ", ")))
		}
	}
}

// metadataAllowed reports whether an infrastructure label or annotation key may be applied.
func (t *translator) metadataAllowed(key string) bool {
	if t.s.Env.AllowedMetadataPrefixes == nil {
		return true
	}
	for _, p := range t.s.Env.AllowedMetadataPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// domainAllowed reports whether an ingress domain is one of allowed or under one; nil allows all.
func domainAllowed(domain string, allowed []string) bool {
	if allowed == nil {
		return true
	}
	for _, a := range allowed {
		a = strings.Trim(a, ".")
		if domain == a || strings.HasSuffix(domain, "."+a) {
			return true
		}
	}
	return false
}

// deniedDomain returns the denied ingress domain a hostname pattern is under, or "".
func (t *translator) deniedDomain(pattern string) string {
	_, rest, _ := strings.Cut(pattern, ".")
	for _, d := range t.deniedDomains {
		if rest == d || strings.HasSuffix(rest, "."+d) {
			return d
		}
	}
	return ""
}

// filterLimitsProblem checks the filter limits against each other, defaults filled in, as the
// proxy's validation does, so that the gateway reports them instead of the proxy refusing its
// configuration.
func filterLimitsProblem(l config.Limits) *refProblem {
	c := config.Config{Limits: l}
	c.Default()
	switch d := c.Limits; {
	case d.MaxFilteredFrameBytes > d.MaxFrameBytes:
		return invalidParameters("limits.maxFilteredFrameBytes (%d) must not exceed maxFrameBytes (%d)", d.MaxFilteredFrameBytes, d.MaxFrameBytes)
	case d.FilterMemoryBytes < 4*int64(d.MaxBatchBytes):
		return invalidParameters("limits.filterMemoryBytes (%d) must be at least four times maxBatchBytes (%d)", d.FilterMemoryBytes, d.MaxBatchBytes)
	}
	return nil
}

// readLimits copies the parameters' limits into the proxy configuration's; the proxy's defaults
// fill what is left out.
func (t *translator) readLimits(l *kroxyliciousv1alpha1.ProxyLimits) *refProblem {
	if l == nil {
		return nil
	}
	ints := []struct {
		name string
		in   *int32
		out  *int32
	}{
		{"maxConnections", l.MaxConnections, &t.limits.MaxConnections},
		{"maxConnectionsPerSource", l.MaxConnectionsPerSource, &t.limits.MaxConnectionsPerSource},
		{"handshakesPerSecond", l.HandshakesPerSecond, &t.limits.HandshakesPerSecond},
		{"maxFrameBytes", l.MaxFrameBytes, &t.limits.MaxFrameBytes},
		{"maxFilteredFrameBytes", l.MaxFilteredFrameBytes, &t.limits.MaxFilteredFrameBytes},
		{"maxBatchBytes", l.MaxBatchBytes, &t.limits.MaxBatchBytes},
		{"decompressionRatio", l.DecompressionRatio, &t.limits.DecompressionRatio},
	}
	for _, f := range ints {
		if f.in == nil {
			continue
		}
		if *f.in < 1 {
			return invalidParameters("limits.%s must be positive", f.name)
		}
		*f.out = *f.in
	}
	if l.FilterMemoryBytes != nil {
		t.limits.FilterMemoryBytes = *l.FilterMemoryBytes
	}
	if p := filterLimitsProblem(t.limits); p != nil {
		return p
	}
	durations := []struct {
		name string
		in   *kroxyliciousv1alpha1.LimitDuration
		out  *config.Duration
	}{
		{"idleTimeout", l.IdleTimeout, &t.limits.IdleTimeout},
		{"firstRequestTimeout", l.FirstRequestTimeout, &t.limits.FirstRequestTimeout},
		{"writeTimeout", l.WriteTimeout, &t.limits.WriteTimeout},
	}
	for _, f := range durations {
		if f.in == nil {
			continue
		}
		d, err := time.ParseDuration(string(*f.in))
		if err != nil || d <= 0 {
			return invalidParameters("limits.%s %q is not a positive duration", f.name, *f.in)
		}
		f.out.Duration = d
	}
	return nil
}
