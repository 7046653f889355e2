package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	filterv1alpha1 "github.com/kafkalink/kafkalink/apis/filter/v1alpha1"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/proxy/config"
)

// translator holds the indexes and the accumulating output of one Translate call.
type translator struct {
	s   *Snapshot
	gw  *kroxyliciousv1alpha1.KafkaGateway
	ns  string
	gen int64

	replicas       int32
	managementPort int32
	metrics        bool
	ingressDomains []string
	parentRefs     []kroxyliciousv1alpha1.GatewayParentReference
	limits         config.Limits
	// notAllowed lists what the operator's flags keep the gateway from using, for its status;
	// deniedDomains are ingress domains among them.
	notAllowed    []string
	deniedDomains []string

	services map[types.NamespacedName]*corev1.Service
	secrets  map[types.NamespacedName]*corev1.Secret
	filters  map[string]*filterv1alpha1.KafkaFilter
	foreign  map[ObjectKey]bool

	listeners []*listenerState
	byName    map[string]*listenerState

	// Output being built.
	mounts       map[string]string // mount path -> Secret name in the gateway's namespace
	copies       map[string]*corev1.Secret
	filterSecret map[string]bool // Secrets mounted for filters, part of the restart checksum
	vcs          []config.VirtualCluster
	claims       map[ObjectKey]string // generated object -> owner identity
	claimRoute   map[ObjectKey]string // generated object -> route that claimed it
	svcs         map[string]*desiredService
	osRoutes     map[string]*desiredRoute
	tlsRoutes    map[string]*desiredRoute
	policies     map[types.NamespacedName]*policyState
	clientCert   *config.KeyPair
	clientCertOK *refProblem

	// staged, when set, collects the mounts and copies of a parentRef until it is accepted, so a
	// refused route adds nothing to the Deployment.
	staged *effects
}

// effects are Secret mounts and copies one parentRef needs.
type effects struct {
	mounts       map[string]string
	copies       []copyRequest
	filterSecret map[string]bool
}

type copyRequest struct {
	secret *corev1.Secret
	keys   []string
}

type listenerState struct {
	spec       kroxyliciousv1alpha1.Listener
	accepted   *refProblem // nil when accepted
	resolved   *refProblem // nil when every reference resolved
	keyPairs   []config.KeyPair
	clientCAs  []string
	options    map[string]string
	conflicts  []string
	attached   int32
	sni        []sniClaim
	usable     bool // accepted with at least one key pair
	portName   string
	tlsOptsErr error
}

type sniClaim struct {
	route string
	vc    config.VirtualCluster
}

type desiredService struct {
	name  string
	lb    bool
	route string
	ports map[string]int32 // port name -> port
}

type desiredRoute struct {
	name     string
	route    string
	host     string
	service  string
	port     int32
	listener string
}

type policyState struct {
	policy   *kroxyliciousv1alpha1.KafkaBackendTLSPolicy
	used     bool
	accepted *refProblem
	resolved *refProblem
	tls      *config.UpstreamTLS
}

// Translate turns a snapshot into desired objects, the proxy configuration and status.
func Translate(s *Snapshot) *Result {
	res := &Result{
		RouteParents:    map[string][]kroxyliciousv1alpha1.RouteParentStatus{},
		PolicyAncestors: map[types.NamespacedName]*kroxyliciousv1alpha1.PolicyAncestorStatus{},
	}
	if s == nil || s.Gateway == nil {
		res.Hold = true
		return res
	}
	t := &translator{
		s: s, gw: s.Gateway, ns: s.Gateway.Namespace, gen: s.Gateway.Generation,
		services: map[types.NamespacedName]*corev1.Service{}, secrets: map[types.NamespacedName]*corev1.Secret{},
		filters: map[string]*filterv1alpha1.KafkaFilter{}, foreign: map[ObjectKey]bool{},
		byName: map[string]*listenerState{}, mounts: map[string]string{}, copies: map[string]*corev1.Secret{},
		filterSecret: map[string]bool{}, claims: map[ObjectKey]string{}, claimRoute: map[ObjectKey]string{},
		svcs: map[string]*desiredService{}, osRoutes: map[string]*desiredRoute{}, tlsRoutes: map[string]*desiredRoute{},
		policies: map[types.NamespacedName]*policyState{},
	}
	for _, o := range s.Services {
		if o != nil {
			t.services[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}] = o
		}
	}
	for _, o := range s.Secrets {
		if o != nil {
			t.secrets[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}] = o
		}
	}
	for _, o := range s.Filters {
		if o != nil && o.Namespace == t.ns {
			t.filters[o.Name] = o
		}
	}
	for _, k := range s.Foreign {
		t.foreign[k] = true
	}
	for _, p := range s.Policies {
		if p != nil {
			t.policies[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = &policyState{policy: p}
		}
	}
	t.translate(res)
	return res
}

func (t *translator) translate(res *Result) {
	gw := t.gw
	// Every generated object carries the gateway's name in a label, whose values are 63 characters at most.
	if errs := validation.IsValidLabelValue(gw.Name); len(errs) > 0 {
		t.hold(res, ReasonInvalid, fmt.Sprintf("the gateway name must be at most 63 characters, because generated objects are labelled with it: %s", strings.Join(errs, "; ")))
		return
	}
	if msg, ok := t.readParameters(); !ok {
		t.hold(res, ReasonInvalidParameters, msg)
		return
	}
	t.checkMetadata()
	t.readListeners()
	t.readClientCertificate()
	t.attachRoutes(res)
	t.build(res)
}

// hold reports a gateway that cannot be translated; generated objects stay as they are.
func (t *translator) hold(res *Result, reason, message string) {
	res.Hold = true
	res.GatewayStatus.Conditions = []metav1.Condition{
		Condition(ConditionAccepted, false, reason, message, t.gen),
		Condition(ConditionProgrammed, false, ReasonInvalid, "the gateway is not accepted: "+message, t.gen),
	}
	for _, l := range t.gw.Spec.Listeners {
		res.GatewayStatus.Listeners = append(res.GatewayStatus.Listeners, kroxyliciousv1alpha1.ListenerStatus{
			Name:           l.Name,
			SupportedKinds: supportedKinds(),
			Conditions: []metav1.Condition{
				Condition(ConditionAccepted, false, ReasonInvalid, "the gateway is not accepted", t.gen),
				Condition(ConditionProgrammed, false, ReasonInvalid, "the gateway is not accepted", t.gen),
			},
		})
	}
	if len(res.GatewayStatus.Listeners) > 64 {
		res.GatewayStatus.Listeners = res.GatewayStatus.Listeners[:64]
	}
	// Routes keep whatever status they had: nothing about them was decided.
	res.RouteParents = nil
	res.PolicyAncestors = nil
	res.KeepCopies = t.permittedCopies()
}

// permittedCopies names the Secret copies the gateway's and the policies' references still
// allow: the Secret exists, is visible, and is in the referrer's namespace or granted to it.
func (t *translator) permittedCopies() map[string]bool {
	keep := map[string]bool{}
	add := func(ref kroxyliciousv1alpha1.SecretObjectReference, fromKind, fromNS string) {
		if ref.Group != nil && *ref.Group != "" || ref.Kind != nil && *ref.Kind != kindSecret {
			return
		}
		ns := fromNS
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = string(*ref.Namespace)
		}
		name := string(ref.Name)
		if ns == t.ns || !t.visible(ns) || !t.granted(kroxyliciousGroup, fromKind, fromNS, "", kindSecret, ns, name) {
			return
		}
		if secret := t.secrets[types.NamespacedName{Namespace: ns, Name: name}]; secret != nil {
			keep[copyName(t.gw.Name, secret)] = true
		}
	}
	for _, l := range t.gw.Spec.Listeners {
		if l.TLS == nil {
			continue
		}
		for _, ref := range l.TLS.CertificateRefs {
			add(ref, kindGateway, t.ns)
		}
		if fv := l.TLS.FrontendValidation; fv != nil {
			for _, ref := range fv.CACertificateRefs {
				add(ref, kindGateway, t.ns)
			}
		}
	}
	if b := t.gw.Spec.BackendTLS; b != nil && b.ClientCertificateRef != nil {
		add(*b.ClientCertificateRef, kindGateway, t.ns)
	}
	for _, p := range t.s.Policies {
		if p == nil {
			continue
		}
		for _, ref := range p.Spec.Validation.CACertificateRefs {
			add(ref, kindPolicy, p.Namespace)
		}
	}
	return keep
}

func supportedKinds() []kroxyliciousv1alpha1.RouteGroupKind {
	g := kroxyliciousGroup
	return []kroxyliciousv1alpha1.RouteGroupKind{{Group: &g, Kind: kindRoute}}
}

// readParameters applies the KafkaGatewayParameters, or the defaults without a reference.
func (t *translator) readParameters() (string, bool) {
	t.replicas = 1
	t.managementPort = config.DefaultManagementPort
	var ref *kroxyliciousv1alpha1.LocalParametersReference
	if t.gw.Spec.Infrastructure != nil {
		ref = t.gw.Spec.Infrastructure.ParametersRef
	}
	if ref == nil {
		return "", true
	}
	if ref.Group != kroxyliciousGroup || ref.Kind != "KafkaGatewayParameters" {
		return fmt.Sprintf("parametersRef must name a kroxylicious.io KafkaGatewayParameters, not %s %s", ref.Group, ref.Kind), false
	}
	p := t.s.Parameters
	if p == nil || p.Name != ref.Name || p.Namespace != t.ns {
		return fmt.Sprintf("KafkaGatewayParameters %s/%s not found", t.ns, ref.Name), false
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
		return "replicas must not be negative", false
	}
	if t.managementPort < 1 || t.managementPort > 65535 {
		return fmt.Sprintf("management port %d is out of range", t.managementPort), false
	}
	if msg, ok := t.readLimits(spec.Limits); !ok {
		return msg, false
	}
	if msg, ok := t.checkPodSettings(&spec); !ok {
		return msg, false
	}
	t.ingressDomains = nil
	for _, d := range spec.IngressDomains {
		if domainAllowed(d, t.s.Env.AllowedIngressDomains) {
			t.ingressDomains = append(t.ingressDomains, d)
		} else {
			t.deniedDomains = append(t.deniedDomains, d)
			t.notAllowed = append(t.notAllowed, fmt.Sprintf("ingress domain %s (allowed: %s)", d, strings.Join(t.s.Env.AllowedIngressDomains, ", ")))
		}
	}
	t.parentRefs = spec.ParentRefs
	return "", true
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

// readLimits copies the parameters' limits into the proxy configuration's; the proxy's defaults
// fill what is left out.
func (t *translator) readLimits(l *kroxyliciousv1alpha1.ProxyLimits) (string, bool) {
	if l == nil {
		return "", true
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
	}
	for _, f := range ints {
		if f.in == nil {
			continue
		}
		if *f.in < 1 {
			return fmt.Sprintf("limits.%s must be positive", f.name), false
		}
		*f.out = *f.in
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
			return fmt.Sprintf("limits.%s %q is not a positive duration", f.name, *f.in), false
		}
		f.out.Duration = d
	}
	return "", true
}

func (t *translator) readListeners() {
	ports := map[int32]string{}
	portNames := map[string]bool{}
	for _, spec := range t.gw.Spec.Listeners {
		l := &listenerState{spec: spec}
		t.listeners = append(t.listeners, l)
		name := string(spec.Name)
		if _, dup := t.byName[name]; dup {
			l.accepted = &refProblem{ReasonInvalid, fmt.Sprintf("listener name %q is used twice", name)}
			continue
		}
		t.byName[name] = l
		port := int32(spec.Port)
		switch {
		case spec.Protocol != kroxyliciousv1alpha1.ProtocolKafkaTLS:
			l.accepted = &refProblem{ReasonUnsupportedProtocol, fmt.Sprintf("protocol %q is not supported: use %s", spec.Protocol, kroxyliciousv1alpha1.ProtocolKafkaTLS)}
		case port < 1 || port > 65535:
			l.accepted = &refProblem{ReasonPortUnavailable, fmt.Sprintf("port %d is out of range", port)}
		case port == t.managementPort:
			l.accepted = &refProblem{ReasonPortUnavailable, fmt.Sprintf("port %d is the proxy's management port", port)}
		case ports[port] != "":
			l.accepted = &refProblem{ReasonPortUnavailable, fmt.Sprintf("port %d is already used by listener %q", port, ports[port])}
		case spec.TLS == nil || len(spec.TLS.CertificateRefs) == 0:
			l.accepted = &refProblem{ReasonUnsupportedValue, "tls.certificateRefs is required: listeners route by TLS server name"}
		case spec.TLS.Mode != nil && *spec.TLS.Mode != kroxyliciousv1alpha1.TLSModeTerminate:
			l.accepted = &refProblem{ReasonUnsupportedValue, fmt.Sprintf("tls.mode %q is not supported: only Terminate", *spec.TLS.Mode)}
		}
		if l.accepted == nil && spec.TLS.FrontendValidation != nil {
			if _, err := config.ResolveTLSOptions(spec.TLS.FrontendValidation.Options); err != nil {
				l.accepted = &refProblem{ReasonUnsupportedValue, fmt.Sprintf("frontendValidation.options: %v", err)}
			} else {
				l.options = spec.TLS.FrontendValidation.Options
			}
		}
		if l.accepted != nil {
			continue
		}
		ports[port] = name
		// Service port names are DNS labels; a listener name that is not one is named by its port.
		l.portName = name
		if len(validation.IsDNS1123Label(name)) > 0 || portNames[name] {
			l.portName = fmt.Sprintf("port-%d", port)
		}
		portNames[l.portName] = true

		var problems []*refProblem
		for _, ref := range spec.TLS.CertificateRefs {
			secret, p := t.secretRef(ref, kroxyliciousGroup, kindGateway, t.ns, []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey}, ReasonInvalidCertificateRef, checkKeyPair)
			if p != nil {
				if p.reason == ReasonInvalidKind {
					p.reason = ReasonInvalidCertificateRef
				}
				problems = append(problems, p)
				continue
			}
			dir := t.mount(secret, ListenerSecretsDir+"/"+name+"/"+secret)
			l.keyPairs = append(l.keyPairs, config.KeyPair{CertificateFile: dir + "/" + corev1.TLSCertKey, PrivateKeyFile: dir + "/" + corev1.TLSPrivateKeyKey})
		}
		if fv := spec.TLS.FrontendValidation; fv != nil {
			for _, ref := range fv.CACertificateRefs {
				secret, p := t.secretRef(ref, kroxyliciousGroup, kindGateway, t.ns, []string{"ca.crt"}, ReasonInvalidCACertificateRef, nil)
				if p != nil {
					if p.reason == ReasonInvalidKind {
						p.reason = ReasonInvalidCACertificateRef
					}
					problems = append(problems, p)
					continue
				}
				dir := t.mount(secret, ListenerSecretsDir+"/"+name+"/"+secret)
				l.clientCAs = append(l.clientCAs, dir+"/ca.crt")
			}
			// Without every client CA the listener would accept fewer clients than asked, or, with
			// none, every client: refuse to serve it rather than relax client authentication.
			if len(fv.CACertificateRefs) > 0 && len(l.clientCAs) < len(fv.CACertificateRefs) {
				l.keyPairs = nil
			}
		}
		if len(problems) > 0 {
			// RefNotPermitted wins over a missing Secret, as it needs someone else to act.
			p := problems[0]
			for _, q := range problems {
				if q.reason == ReasonRefNotPermitted {
					p = q
					break
				}
			}
			msgs := make([]string, 0, len(problems))
			for _, q := range problems {
				msgs = append(msgs, q.message)
			}
			l.resolved = &refProblem{p.reason, strings.Join(msgs, "; ")}
		}
		l.usable = len(l.keyPairs) > 0
	}
}

// mount records that Secret secret (in the gateway's namespace) is mounted at dir, and returns dir.
func (t *translator) mount(secret, dir string) string {
	if t.staged != nil {
		t.staged.mounts[dir] = secret
		return dir
	}
	t.mounts[dir] = secret
	return dir
}

func (t *translator) readClientCertificate() {
	if t.gw.Spec.BackendTLS == nil || t.gw.Spec.BackendTLS.ClientCertificateRef == nil {
		return
	}
	ref := *t.gw.Spec.BackendTLS.ClientCertificateRef
	secret, p := t.secretRef(ref, kroxyliciousGroup, kindGateway, t.ns, []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey}, ReasonInvalidClientCertificateRef, checkKeyPair)
	if p != nil {
		if p.reason == ReasonInvalidKind {
			p.reason = ReasonInvalidClientCertificateRef
		}
		t.clientCertOK = p
		return
	}
	dir := t.mount(secret, BackendSecretsDir+"/"+secret)
	t.clientCert = &config.KeyPair{CertificateFile: dir + "/" + corev1.TLSCertKey, PrivateKeyFile: dir + "/" + corev1.TLSPrivateKeyKey}
}

// sortedRoutes orders routes as Gateway API orders conflicting routes: oldest first, then by name.
func sortedRoutes(routes []*kroxyliciousv1alpha1.KafkaRoute) []*kroxyliciousv1alpha1.KafkaRoute {
	out := make([]*kroxyliciousv1alpha1.KafkaRoute, 0, len(routes))
	for _, r := range routes {
		if r != nil {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return out
}

// refersTo reports whether a route parentRef names this gateway.
func (t *translator) refersTo(pr kroxyliciousv1alpha1.KafkaRouteParentReference) bool {
	if pr.Group != nil && *pr.Group != kroxyliciousGroup {
		return false
	}
	if pr.Kind != nil && *pr.Kind != kindGateway {
		return false
	}
	return string(pr.Name) == t.gw.Name
}

func (t *translator) attachRoutes(res *Result) {
	for _, route := range sortedRoutes(t.s.Routes) {
		if route.Namespace != t.ns {
			continue
		}
		parents := []kroxyliciousv1alpha1.RouteParentStatus{}
		tooBig := routeLimitProblem(route)
		for _, pr := range route.Spec.ParentRefs {
			if !t.refersTo(pr) {
				continue
			}
			var accepted, resolved *refProblem
			if tooBig != nil {
				accepted = tooBig
			} else {
				accepted, resolved = t.attach(route, pr)
			}
			ref := kroxyliciousv1alpha1.ParentReference{Group: pr.Group, Kind: pr.Kind, Name: pr.Name, SectionName: pr.SectionName}
			if ref.Group == nil {
				g := kroxyliciousGroup
				ref.Group = &g
			}
			if ref.Kind == nil {
				k := kindGateway
				ref.Kind = &k
			}
			acc := Condition(ConditionAccepted, true, ReasonAccepted, "attached to the gateway", route.Generation)
			if accepted != nil {
				acc = Condition(ConditionAccepted, false, accepted.reason, accepted.message, route.Generation)
			}
			rr := Condition(ConditionResolvedRefs, true, ReasonResolvedRefs, "every reference resolved", route.Generation)
			if resolved != nil {
				rr = Condition(ConditionResolvedRefs, false, resolved.reason, resolved.message, route.Generation)
			}
			parents = append(parents, kroxyliciousv1alpha1.RouteParentStatus{
				ParentRef: ref, ControllerName: ControllerName, Conditions: []metav1.Condition{acc, rr},
			})
		}
		if len(parents) > 32 {
			parents = parents[:32]
		}
		res.RouteParents[route.Name] = parents
	}
}

// MaxGeneratedObjectsPerGateway bounds the Services, OpenShift Routes and TLSRoutes one gateway
// generates for its routes. A parentRef that could go over it is not accepted (LimitExceeded);
// the routes attached before it keep working.
const MaxGeneratedObjectsPerGateway = 16384

// brokerIDCount counts the broker ids of a parentRef as the schema does: every entry of every list.
func brokerIDCount(pr kroxyliciousv1alpha1.KafkaRouteParentReference) int {
	n := 0
	for _, b := range pr.Brokers {
		n += len(b.AdvertisedBrokerIds)
	}
	return n
}

// routeLimitProblem applies the schema's route limits again, for routes stored before them: a
// route over a limit is not served on any parentRef.
func routeLimitProblem(route *kroxyliciousv1alpha1.KafkaRoute) *refProblem {
	hosts := 0
	for _, pr := range route.Spec.ParentRefs {
		ids := brokerIDCount(pr)
		if ids > kroxyliciousv1alpha1.MaxBrokerIDsPerParentRef {
			return &refProblem{ReasonLimitExceeded, fmt.Sprintf("parentRef %s lists %d broker ids, more than the %d a parentRef may list", pr.Name, ids, kroxyliciousv1alpha1.MaxBrokerIDsPerParentRef)}
		}
		hosts += len(pr.Hostnames) * (ids + 1)
	}
	if hosts > kroxyliciousv1alpha1.MaxHostsPerRoute {
		return &refProblem{ReasonLimitExceeded, fmt.Sprintf("the route asks for %d hosts (the sum over parentRefs of hostnames x (broker ids + 1)), more than the %d a route may ask for: each host needs its own Service", hosts, kroxyliciousv1alpha1.MaxHostsPerRoute)}
	}
	return nil
}

// pending is what one parentRef would add to the model if it is accepted.
type pending struct {
	claims []claim
	sni    []pendingSNI
	svcs   []*desiredService
	// svcIndex finds a pending Service by name and kind in O(1): a route of many hosts adds
	// ports to the same Services once per listener.
	svcIndex map[svcKey]*desiredService
	os       []*desiredRoute
	tls      []*desiredRoute
	vcs      []config.VirtualCluster
}

type claim struct {
	key   ObjectKey
	owner string
	what  string
}

type pendingSNI struct {
	listener *listenerState
	claim    sniClaim
}

// attach attaches one parentRef of a route and returns its Accepted and ResolvedRefs problems.
func (t *translator) attach(route *kroxyliciousv1alpha1.KafkaRoute, pr kroxyliciousv1alpha1.KafkaRouteParentReference) (accepted, resolved *refProblem) {
	var selected []*listenerState
	if pr.SectionName != nil && *pr.SectionName != "" {
		l := t.byName[string(*pr.SectionName)]
		if l == nil {
			return &refProblem{ReasonNoMatchingParent, fmt.Sprintf("gateway %s has no listener %q", t.gw.Name, *pr.SectionName)}, t.resolveRefsOnly(route, pr)
		}
		selected = []*listenerState{l}
	} else {
		for _, l := range t.listeners {
			if t.byName[string(l.spec.Name)] == l {
				selected = append(selected, l)
			}
		}
	}
	var usable []*listenerState
	var why []string
	for _, l := range selected {
		switch {
		case l.accepted != nil:
			why = append(why, fmt.Sprintf("listener %q is not accepted: %s", l.spec.Name, l.accepted.message))
		case !l.usable:
			why = append(why, fmt.Sprintf("listener %q has no usable certificate", l.spec.Name))
		default:
			usable = append(usable, l)
		}
	}
	// Routes attach to accepted listeners even before their certificates resolve; they are then
	// simply not served yet. Only listeners that are not accepted refuse routes.
	var acceptedListeners []*listenerState
	for _, l := range selected {
		if l.accepted == nil {
			acceptedListeners = append(acceptedListeners, l)
		}
	}
	if len(acceptedListeners) == 0 {
		return &refProblem{ReasonNotAllowedByListeners, strings.Join(why, "; ")}, t.resolveRefsOnly(route, pr)
	}

	// Brokers.
	idSet := map[int32]bool{}
	for _, b := range pr.Brokers {
		if b.BrokerIdentityMapping != nil && *b.BrokerIdentityMapping != kroxyliciousv1alpha1.BrokerIdentityMappingIdentity {
			return &refProblem{ReasonUnsupportedValue, fmt.Sprintf("brokerIdentityMapping %q is not supported: only %q", *b.BrokerIdentityMapping, kroxyliciousv1alpha1.BrokerIdentityMappingIdentity)}, t.resolveRefsOnly(route, pr)
		}
		for _, id := range b.AdvertisedBrokerIds {
			if id < 0 {
				return &refProblem{ReasonUnsupportedValue, fmt.Sprintf("broker id %d is negative", id)}, t.resolveRefsOnly(route, pr)
			}
			idSet[id] = true
		}
	}
	ids := make([]int32, 0, len(idSet))
	for id := range idSet {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(ids) == 0 {
		return &refProblem{ReasonUnsupportedValue, "brokers lists no advertisedBrokerIds"}, t.resolveRefsOnly(route, pr)
	}

	// Hostnames.
	var hosts []Host
	for _, hn := range pr.Hostnames {
		if d := t.deniedDomain(string(hn)); d != "" {
			return &refProblem{ReasonUnsupportedValue, fmt.Sprintf("hostname %s is under ingress domain %s, which the operator does not allow", hn, d)}, t.resolveRefsOnly(route, pr)
		}
		h, err := ResolveHost(string(hn), t.ns, t.s.Env.ClusterDomain, t.ingressDomains, len(t.parentRefs) > 0)
		if err != nil {
			return &refProblem{ReasonUnsupportedValue, err.Error()}, t.resolveRefsOnly(route, pr)
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return &refProblem{ReasonUnsupportedValue, "hostnames is empty"}, t.resolveRefsOnly(route, pr)
	}

	// References, with their mounts held back until the parentRef is accepted.
	t.staged = &effects{mounts: map[string]string{}, filterSecret: map[string]bool{}}
	target, upstream, filters, resolved := t.resolveRefs(route, pr)
	staged := t.staged
	t.staged = nil

	// What the parentRef adds, checked against what earlier routes hold.
	var p pending
	for _, l := range acceptedListeners {
		port := int32(l.spec.Port)
		for _, h := range hosts {
			vc := config.VirtualCluster{
				Name:            fmt.Sprintf("%s/%s/%s", route.Name, l.spec.Name, h.Pattern),
				Listener:        string(l.spec.Name),
				BootstrapHost:   h.Bootstrap,
				BrokerPattern:   h.BrokerPattern,
				TargetBootstrap: target,
				UpstreamTLS:     upstream,
				Filters:         filters,
			}
			switch h.Exposure {
			case ExposeOpenShiftRoute:
				vc.AdvertisedPort = 443 // the OpenShift router's TLS port
			case ExposeTLSRoute:
				vc.AdvertisedPort = 443 // as Strimzi's tlsroute listener: the Gateway's port is not known here
				for _, ref := range t.parentRefs {
					if ref.Port != nil {
						vc.AdvertisedPort = int32(*ref.Port)
						break
					}
				}
			}
			p.sni = append(p.sni, pendingSNI{l, sniClaim{route.Name, vc}})
			if resolved == nil && l.usable {
				p.vcs = append(p.vcs, vc)
			}
			if h.Exposure == ExposeLoadBalancer {
				p.addService(route.Name, true, route.Name, l, fmt.Sprintf("the LoadBalancer of route %s", route.Name))
				continue
			}
			type perHost struct{ host, svc string }
			all := []perHost{{h.Bootstrap, h.BootstrapServiceName()}}
			for _, id := range ids {
				all = append(all, perHost{h.BrokerHost(id), h.BrokerServiceName(id)})
			}
			for _, ph := range all {
				p.addService(ph.svc, false, route.Name, l, "host "+ph.host)
				dr := &desiredRoute{name: ph.svc, route: route.Name, host: ph.host, service: ph.svc, port: port, listener: string(l.spec.Name)}
				switch h.Exposure {
				case ExposeOpenShiftRoute:
					p.os = append(p.os, dr)
					p.claims = append(p.claims, claim{ObjectKey{"Route", ph.svc}, route.Name + "|" + ph.host + "|" + dr.listener, "host " + ph.host})
				case ExposeTLSRoute:
					p.tls = append(p.tls, dr)
					p.claims = append(p.claims, claim{ObjectKey{"TLSRoute", ph.svc}, route.Name + "|" + ph.host + "|" + dr.listener, "host " + ph.host})
				}
			}
		}
	}
	// Every host is a Service (and maybe a Route or TLSRoute): bound what one gateway generates.
	if have, more := len(t.svcs)+len(t.osRoutes)+len(t.tlsRoutes), len(p.svcs)+len(p.os)+len(p.tls); have+more > MaxGeneratedObjectsPerGateway {
		return &refProblem{ReasonLimitExceeded, fmt.Sprintf("the gateway already generates %d Services and Routes for its routes, and this parentRef needs %d more: at most %d per gateway", have, more, MaxGeneratedObjectsPerGateway)}, resolved
	}
	for _, svc := range p.svcs {
		what := "the LoadBalancer of route " + route.Name
		if !svc.lb {
			what = "a host of route " + route.Name
		}
		if err := checkServiceName(svc.name, what); err != nil {
			return &refProblem{ReasonUnsupportedValue, err.Error()}, resolved
		}
		owner := route.Name + "|ClusterIP"
		if svc.lb {
			owner = route.Name + "|LoadBalancer"
		}
		p.claims = append(p.claims, claim{ObjectKey{"Service", svc.name}, owner, what})
	}
	for _, dr := range append(append([]*desiredRoute(nil), p.os...), p.tls...) {
		if len(validation.IsDNS1123Subdomain(dr.name)) > 0 {
			return &refProblem{ReasonUnsupportedValue, fmt.Sprintf("the object name %q for host %s is not valid", dr.name, dr.host)}, resolved
		}
	}
	if problem := t.checkClaims(route.Name, &p); problem != nil {
		return problem, resolved
	}
	t.commit(route.Name, &p, acceptedListeners)
	if resolved == nil {
		for dir, secret := range staged.mounts {
			t.mounts[dir] = secret
		}
		for _, c := range staged.copies {
			t.copySecret(c.secret, c.keys)
		}
		for name := range staged.filterSecret {
			t.filterSecret[name] = true
		}
	}
	return nil, resolved
}

type svcKey struct {
	name string
	lb   bool
}

func (p *pending) addService(name string, lb bool, route string, l *listenerState, _ string) {
	if p.svcIndex == nil {
		p.svcIndex = map[svcKey]*desiredService{}
	}
	if s := p.svcIndex[svcKey{name, lb}]; s != nil {
		s.ports[l.portName] = int32(l.spec.Port)
		return
	}
	s := &desiredService{name: name, lb: lb, route: route, ports: map[string]int32{l.portName: int32(l.spec.Port)}}
	p.svcIndex[svcKey{name, lb}] = s
	p.svcs = append(p.svcs, s)
}

// checkClaims finds the first clash of the pending parentRef with itself, with earlier routes and
// with objects the gateway does not control.
func (t *translator) checkClaims(route string, p *pending) *refProblem {
	local := map[ObjectKey]claim{}
	for _, c := range p.claims {
		if t.foreign[c.key] {
			return &refProblem{ReasonNameInUse, fmt.Sprintf("%s needs %s %s, which exists and is not managed by this gateway", c.what, c.key.Kind, c.key.Name)}
		}
		if owner, ok := t.claims[c.key]; ok && owner != c.owner {
			other := t.claimRoute[c.key]
			if other != route {
				t.conflictOnListeners(p, fmt.Sprintf("route %s: %s needs %s %s, already generated for route %s", route, c.what, c.key.Kind, c.key.Name, other))
				return &refProblem{ReasonHostnameConflict, fmt.Sprintf("%s needs %s %s, already generated for route %s", c.what, c.key.Kind, c.key.Name, other)}
			}
			return &refProblem{ReasonUnsupportedValue, fmt.Sprintf("%s needs %s %s, which another hostname of this route already needs", c.what, c.key.Kind, c.key.Name)}
		}
		if prev, ok := local[c.key]; ok && prev.owner != c.owner {
			return &refProblem{ReasonUnsupportedValue, fmt.Sprintf("%s and %s both map to %s %s", prev.what, c.what, c.key.Kind, c.key.Name)}
		}
		local[c.key] = c
	}
	// SNI: the proxy must route every host of a listener to exactly one virtual cluster.
	for i, ps := range p.sni {
		for _, held := range ps.listener.sni {
			if clash := sniClash(held.vc, ps.claim.vc); clash != "" {
				msg := fmt.Sprintf("hostname %s on listener %q overlaps route %s: %s", ps.claim.vc.BootstrapHost, ps.listener.spec.Name, held.route, clash)
				ps.listener.conflicts = append(ps.listener.conflicts, fmt.Sprintf("route %s: %s", route, msg))
				return &refProblem{ReasonHostnameConflict, msg}
			}
		}
		for _, other := range p.sni[:i] {
			if other.listener == ps.listener {
				if clash := sniClash(other.claim.vc, ps.claim.vc); clash != "" {
					return &refProblem{ReasonUnsupportedValue, fmt.Sprintf("hostnames of this route overlap on listener %q: %s", ps.listener.spec.Name, clash)}
				}
			}
		}
	}
	return nil
}

func (t *translator) conflictOnListeners(p *pending, msg string) {
	seen := map[*listenerState]bool{}
	for _, ps := range p.sni {
		if !seen[ps.listener] {
			seen[ps.listener] = true
			ps.listener.conflicts = append(ps.listener.conflicts, msg)
		}
	}
}

// sniClash says how two virtual clusters on one listener would take each other's hosts: the
// first overlap config.HostOverlaps finds, or "" when there is none.
func sniClash(a, b config.VirtualCluster) string {
	overlaps := config.HostOverlaps(a, b)
	if len(overlaps) == 0 {
		return ""
	}
	switch overlaps[0] {
	case config.SameBootstrapHost:
		return "same bootstrap host " + a.BootstrapHost
	case config.SameBrokerPattern:
		return "same broker hosts " + a.BrokerPattern
	case config.BootstrapIsBroker:
		return fmt.Sprintf("bootstrap host %s matches broker hosts %s", b.BootstrapHost, a.BrokerPattern)
	default: // config.BrokerIsBootstrap
		return fmt.Sprintf("broker hosts %s match bootstrap host %s", b.BrokerPattern, a.BootstrapHost)
	}
}

func (t *translator) commit(route string, p *pending, listeners []*listenerState) {
	for _, c := range p.claims {
		t.claims[c.key] = c.owner
		t.claimRoute[c.key] = route
	}
	for _, ps := range p.sni {
		ps.listener.sni = append(ps.listener.sni, ps.claim)
	}
	for _, l := range listeners {
		l.attached++
	}
	for _, s := range p.svcs {
		if have := t.svcs[s.name]; have != nil {
			for n, port := range s.ports {
				have.ports[n] = port
			}
			continue
		}
		t.svcs[s.name] = s
	}
	for _, r := range p.os {
		t.osRoutes[r.name] = r
	}
	for _, r := range p.tls {
		t.tlsRoutes[r.name] = r
	}
	t.vcs = append(t.vcs, p.vcs...)
}

// resolveRefsOnly resolves a parentRef's references for status, when it is not accepted.
func (t *translator) resolveRefsOnly(route *kroxyliciousv1alpha1.KafkaRoute, pr kroxyliciousv1alpha1.KafkaRouteParentReference) *refProblem {
	t.staged = &effects{mounts: map[string]string{}, filterSecret: map[string]bool{}}
	_, _, _, p := t.resolveRefs(route, pr)
	t.staged = nil
	return p
}

// resolveRefs resolves the backend, the filters and the upstream TLS of a parentRef's rule.
func (t *translator) resolveRefs(route *kroxyliciousv1alpha1.KafkaRoute, pr kroxyliciousv1alpha1.KafkaRouteParentReference) (string, *config.UpstreamTLS, []config.Filter, *refProblem) {
	if len(pr.Rules) != 1 || len(pr.Rules[0].BackendRefs) != 1 {
		return "", nil, nil, &refProblem{ReasonUnsupportedValue, "exactly one rule with exactly one backendRef is supported"}
	}
	rule := pr.Rules[0]
	b := rule.BackendRefs[0]
	if b.Group != nil && *b.Group != "" || b.Kind != nil && *b.Kind != kindService {
		return "", nil, nil, &refProblem{ReasonInvalidKind, "backendRefs must name a core Service"}
	}
	ns := route.Namespace
	if b.Namespace != nil && *b.Namespace != "" {
		ns = string(*b.Namespace)
	}
	name := string(b.Name)
	if ns != route.Namespace {
		if !t.visible(ns) {
			return "", nil, nil, &refProblem{ReasonRefNotPermitted, fmt.Sprintf("Service %s/%s is in a namespace the operator does not watch", ns, name)}
		}
		if !t.granted(kroxyliciousGroup, kindRoute, route.Namespace, "", kindService, ns, name) {
			return "", nil, nil, &refProblem{ReasonRefNotPermitted, fmt.Sprintf("Service %s/%s is in another namespace and no ReferenceGrant there allows KafkaRoutes from namespace %s to refer to it", ns, name, route.Namespace)}
		}
	}
	svc := t.services[types.NamespacedName{Namespace: ns, Name: name}]
	if svc == nil {
		return "", nil, nil, &refProblem{ReasonBackendNotFound, fmt.Sprintf("Service %s/%s not found", ns, name)}
	}
	var svcPort *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == int32(b.Port) {
			svcPort = &svc.Spec.Ports[i]
		}
	}
	if svcPort == nil {
		return "", nil, nil, &refProblem{ReasonBackendNotFound, fmt.Sprintf("Service %s/%s has no port %d", ns, name, b.Port)}
	}
	// A fully qualified name with the root dot: no resolv.conf search list or public DNS can
	// turn it into another host.
	domain := strings.Trim(t.s.Env.ClusterDomain, ".")
	if domain == "" {
		domain = "svc.cluster.local"
	}
	target := fmt.Sprintf("%s.%s.%s.:%d", name, ns, domain, b.Port)

	var filters []config.Filter
	for _, f := range rule.Filters {
		if f.Group != nil && *f.Group != filterGroup || f.Kind != nil && *f.Kind != kindFilter {
			return target, nil, nil, &refProblem{ReasonInvalidKind, fmt.Sprintf("filter %q must be a filter.kroxylicious.io KafkaFilter", f.Name)}
		}
		kf := t.filters[string(f.Name)]
		if kf == nil {
			return target, nil, nil, &refProblem{ReasonFilterNotFound, fmt.Sprintf("KafkaFilter %s/%s not found", route.Namespace, f.Name)}
		}
		if !slices.Contains(t.s.Env.FilterTypes, kf.Spec.Type) {
			implemented := "none"
			if len(t.s.Env.FilterTypes) > 0 {
				implemented = strings.Join(t.s.Env.FilterTypes, ", ")
			}
			return target, nil, nil, &refProblem{ReasonUnsupportedValue, fmt.Sprintf("KafkaFilter %s has type %s, which the proxy does not implement (it implements: %s; see the operator's --proxy-filter-types)", kf.Name, kf.Spec.Type, implemented)}
		}
		var raw []byte
		if kf.Spec.Config != nil {
			raw = kf.Spec.Config.Raw
		}
		cfg, refs, err := SubstituteFilterSecrets(raw)
		if err != nil {
			return target, nil, nil, &refProblem{ReasonInvalidFilterSecretRef, fmt.Sprintf("KafkaFilter %s: %v", kf.Name, err)}
		}
		for _, r := range refs {
			secret := t.secrets[types.NamespacedName{Namespace: kf.Namespace, Name: r.Secret}]
			if secret == nil {
				return target, nil, nil, &refProblem{ReasonInvalidFilterSecretRef, fmt.Sprintf("KafkaFilter %s: Secret %s/%s not found", kf.Name, kf.Namespace, r.Secret)}
			}
			if r.Key != "" {
				if _, ok := secret.Data[r.Key]; !ok {
					return target, nil, nil, &refProblem{ReasonInvalidFilterSecretRef, fmt.Sprintf("KafkaFilter %s: Secret %s/%s has no key %q", kf.Name, kf.Namespace, r.Secret, r.Key)}
				}
			}
		}
		for _, r := range refs {
			t.mount(r.Secret, FilterSecretsDir+"/"+r.Secret)
			if t.staged != nil {
				t.staged.filterSecret[r.Secret] = true
			} else {
				t.filterSecret[r.Secret] = true
			}
		}
		filters = append(filters, config.Filter{Name: kf.Name, Type: kf.Spec.Type, Config: json.RawMessage(cfg)})
	}

	upstream, p := t.upstreamTLS(svc, *svcPort)
	if p != nil {
		return target, nil, filters, p
	}
	return target, upstream, filters, nil
}

// upstreamTLS finds the KafkaBackendTLSPolicy of a backend Service port: the oldest policy that
// targets it wins, later ones are Conflicted. Only policies allowed to target the Service (in
// its namespace, or granted by a ReferenceGrant there) take part, so a policy from elsewhere
// cannot squat a Service by being older.
func (t *translator) upstreamTLS(svc *corev1.Service, port corev1.ServicePort) (*config.UpstreamTLS, *refProblem) {
	var matches []*policyState
	for _, ps := range t.policies {
		if !policyTargets(ps.policy, svc, port) {
			continue
		}
		p := ps.policy
		if p.Namespace != svc.Namespace && !t.granted(kroxyliciousGroup, kindPolicy, p.Namespace, "", kindService, svc.Namespace, svc.Name) {
			if !ps.used { // a policy that applies elsewhere for this gateway keeps that status
				ps.used = true
				ps.accepted = &refProblem{ReasonInvalid, fmt.Sprintf("it targets Service %s/%s in another namespace, and no ReferenceGrant there allows it", svc.Namespace, svc.Name)}
				ps.tls = &config.UpstreamTLS{}
			}
			continue
		}
		matches = append(matches, ps)
	}
	if len(matches) == 0 {
		return nil, nil
	}
	sort.Slice(matches, func(i, j int) bool {
		a, b := matches[i].policy, matches[j].policy
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	winner := matches[0]
	for _, loser := range matches[1:] {
		loser.used = true
		if loser.accepted == nil {
			loser.accepted = &refProblem{ReasonConflicted, fmt.Sprintf("KafkaBackendTLSPolicy %s/%s already applies to Service %s/%s port %d", winner.policy.Namespace, winner.policy.Name, svc.Namespace, svc.Name, port.Port)}
		}
	}
	t.evaluatePolicy(winner, svc)
	if winner.accepted != nil {
		return nil, &refProblem{ReasonInvalidBackendTLS, fmt.Sprintf("KafkaBackendTLSPolicy %s/%s: %s", winner.policy.Namespace, winner.policy.Name, winner.accepted.message)}
	}
	if winner.resolved != nil {
		return nil, &refProblem{ReasonInvalidBackendTLS, fmt.Sprintf("KafkaBackendTLSPolicy %s/%s: %s", winner.policy.Namespace, winner.policy.Name, winner.resolved.message)}
	}
	up := *winner.tls
	up.CAFiles = append([]string(nil), winner.tls.CAFiles...)
	if t.clientCert != nil {
		up.CertificateFile, up.PrivateKeyFile = t.clientCert.CertificateFile, t.clientCert.PrivateKeyFile
	}
	return &up, nil
}

func policyTargets(p *kroxyliciousv1alpha1.KafkaBackendTLSPolicy, svc *corev1.Service, port corev1.ServicePort) bool {
	for _, ref := range p.Spec.TargetRefs {
		ns := p.Namespace
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = string(*ref.Namespace)
		}
		if ref.Kind != kindService || ns != svc.Namespace || string(ref.Name) != svc.Name {
			continue
		}
		if ref.SectionName == nil || *ref.SectionName == "" || string(*ref.SectionName) == port.Name {
			return true
		}
	}
	return false
}

// evaluatePolicy checks a policy once and builds its upstream TLS settings.
func (t *translator) evaluatePolicy(ps *policyState, svc *corev1.Service) {
	// Evaluated on every use, so each parentRef stages the policy's mounts for itself.
	ps.used = true
	ps.accepted, ps.resolved = nil, nil
	p := ps.policy
	if p.Namespace != svc.Namespace && !t.granted(kroxyliciousGroup, kindPolicy, p.Namespace, "", kindService, svc.Namespace, svc.Name) {
		ps.accepted = &refProblem{ReasonInvalid, fmt.Sprintf("it targets Service %s/%s in another namespace, and no ReferenceGrant there allows it", svc.Namespace, svc.Name)}
		ps.tls = &config.UpstreamTLS{}
		return
	}
	if _, err := config.ResolveTLSOptions(p.Spec.Options); err != nil {
		ps.accepted = &refProblem{ReasonInvalid, fmt.Sprintf("options: %v", err)}
	}
	up := &config.UpstreamTLS{Options: p.Spec.Options}
	if p.Spec.Validation.Hostname != nil {
		up.ServerName = *p.Spec.Validation.Hostname
	}
	var msgs []string
	reason := ReasonInvalidCACertificateRef
	for _, ref := range p.Spec.Validation.CACertificateRefs {
		keys := t.caKeys(ref, p.Namespace)
		secret, prob := t.secretRef(ref, kroxyliciousGroup, kindPolicy, p.Namespace, keys, ReasonInvalidCACertificateRef, nil)
		if prob != nil {
			if prob.reason == ReasonRefNotPermitted || prob.reason == ReasonInvalidKind {
				reason = prob.reason
			}
			msgs = append(msgs, prob.message)
			continue
		}
		dir := t.mount(secret, BackendSecretsDir+"/"+secret)
		for _, k := range keys {
			up.CAFiles = append(up.CAFiles, dir+"/"+k)
		}
	}
	if len(msgs) > 0 {
		ps.resolved = &refProblem{reason, strings.Join(msgs, "; ")}
	}
	ps.tls = up
}

// caKeys lists the CA certificate entries of a trust Secret: ca.crt, and every other ca*.crt. During a
// Strimzi cluster CA renewal the new certificate is in ca.crt while brokers may still present
// certificates of the old one, kept as ca-<date>.crt; trusting only ca.crt would refuse them.
func (t *translator) caKeys(ref kroxyliciousv1alpha1.SecretObjectReference, fromNS string) []string {
	keys := []string{"ca.crt"}
	ns := fromNS
	if ref.Namespace != nil && *ref.Namespace != "" {
		ns = string(*ref.Namespace)
	}
	secret := t.secrets[types.NamespacedName{Namespace: ns, Name: string(ref.Name)}]
	if secret == nil {
		return keys
	}
	var older []string
	for _, data := range []map[string]string{stringKeys(secret.Data), secret.StringData} {
		for k := range data {
			if k != "ca.crt" && strings.HasPrefix(k, "ca") && strings.HasSuffix(k, ".crt") && !slices.Contains(older, k) {
				older = append(older, k)
			}
		}
	}
	sort.Strings(older)
	return append(keys, older...)
}

// stringKeys gives a Secret's Data keys in the shape of its StringData, to walk both alike.
func stringKeys(data map[string][]byte) map[string]string {
	keys := make(map[string]string, len(data))
	for k := range data {
		keys[k] = ""
	}
	return keys
}

// requeueAfter keeps the earliest positive delay.
func requeueAfter(res *Result, d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if res.RequeueAfter == 0 || d < res.RequeueAfter {
		res.RequeueAfter = d
	}
}
