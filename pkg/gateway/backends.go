package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	filterv1alpha1 "github.com/kafkalink/kafkalink/apis/filter/v1alpha1"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
	"github.com/kafkalink/kafkalink/proxy/config"
)

// backend is where a parentRef's virtual clusters send traffic, and how.
type backend struct {
	target    string // host:port of the bootstrap, a fully qualified name
	brokers   []config.UpstreamBroker
	upstream  *config.UpstreamTLS
	discovery *config.DiscoveryCredential
	filters   []config.Filter
}

// upstreamFunc resolves a backend's upstream TLS, with the Secrets it needs recorded in fx; nil
// settings mean plain TCP.
type upstreamFunc func(fx *effects) (*config.UpstreamTLS, *refProblem)

// policyState is a KafkaBackendTLSPolicy and what this gateway found out about it.
type policyState struct {
	policy   *kroxyliciousv1alpha1.KafkaBackendTLSPolicy
	used     bool // it targets a backend of this gateway, so the gateway writes its ancestor status
	accepted *refProblem
	resolved *refProblem
	tls      *config.UpstreamTLS
}

// refsProblem resolves a parentRef's references only for its ResolvedRefs condition, when the
// parentRef is not accepted: their effects are thrown away.
func (t *translator) refsProblem(route *kroxyliciousv1alpha1.KafkaRoute, pr kroxyliciousv1alpha1.KafkaRouteParentReference) *refProblem {
	_, p := t.resolveRefs(newEffects(), route, pr)
	return p
}

// resolveRefs resolves the backend (a Service or a Strimzi Kafka), the filters and the upstream
// TLS of a parentRef's rule, with the Secrets they need recorded in fx. The backend's target is
// known as soon as the backend resolves, even when a later reference does not.
func (t *translator) resolveRefs(fx *effects, route *kroxyliciousv1alpha1.KafkaRoute, pr kroxyliciousv1alpha1.KafkaRouteParentReference) (backend, *refProblem) {
	if len(pr.Rules) != 1 || len(pr.Rules[0].BackendRefs) != 1 {
		return backend{}, &refProblem{reason: ReasonUnsupportedValue, message: "exactly one rule with exactly one backendRef is supported"}
	}
	rule := pr.Rules[0]
	b, upstream, p := t.resolveBackend(route, rule.BackendRefs[0])
	if p != nil {
		return b, p
	}
	filters, p := t.routeFilters(fx, route, rule.Filters)
	if p != nil {
		return b, p
	}
	b.filters = filters
	up, p := upstream(fx)
	if p != nil {
		return b, p
	}
	b.upstream = up
	b.discovery, p = t.discoveryCredential(fx, route, rule.DiscoveryCredential)
	return b, p
}

// discoveryCredential resolves a rule's discovery credential into the proxy's: the Secret
// mounted (copied across namespaces, under a ReferenceGrant), its password file, and its
// username file or, without a username key, the Secret's name, as Strimzi names a KafkaUser's
// Secret.
func (t *translator) discoveryCredential(fx *effects, route *kroxyliciousv1alpha1.KafkaRoute, dc *kroxyliciousv1alpha1.DiscoveryCredential) (*config.DiscoveryCredential, *refProblem) {
	if dc == nil {
		return nil, nil
	}
	from := gatewaymodel.From{Group: gatewaymodel.Group, Kind: gatewaymodel.KindRoute, Namespace: route.Namespace}
	mounted, p := t.secretRef(fx, dc.SecretRef, from, []string{discoveryPasswordKey}, ReasonInvalidDiscoveryCredential, nil)
	if p != nil {
		return nil, &refProblem{reason: p.reason, message: "discoveryCredential: " + p.message, notGranted: p.notGranted}
	}
	secret := t.secrets[types.NamespacedName{Namespace: gatewaymodel.RefNamespace(dc.SecretRef.Namespace, route.Namespace), Name: string(dc.SecretRef.Name)}]
	dir := fx.mount(mounted, BackendSecretsDir+"/"+mounted)
	out := &config.DiscoveryCredential{Mechanism: dc.Mechanism, PasswordFile: dir + "/" + discoveryPasswordKey}
	if out.Mechanism == "" {
		out.Mechanism = config.MechanismScramSHA512
	}
	if _, ok := secret.Data[discoveryUsernameKey]; ok {
		if mounted != secret.Name { // a copy holds the keys it was asked for: add the username
			fx.copies = append(fx.copies, copyRequest{secret, []string{discoveryUsernameKey}})
		}
		out.UsernameFile = dir + "/" + discoveryUsernameKey
	} else {
		out.Username = secret.Name
	}
	return out, nil
}

// Keys of a discovery credential Secret, as a Strimzi KafkaUser's Secret has them (its username
// is the Secret's name).
const (
	discoveryPasswordKey = "password"
	discoveryUsernameKey = "username"
)

// resolveBackend finds a backendRef's target and how its upstream TLS resolves: a Service's from
// the KafkaBackendTLSPolicy that targets it, a Kafka's from its listener (kafka.go).
func (t *translator) resolveBackend(route *kroxyliciousv1alpha1.KafkaRoute, ref kroxyliciousv1alpha1.BackendReference) (backend, upstreamFunc, *refProblem) {
	if IsKafkaRef(ref) {
		return t.kafkaBackend(route, ref)
	}
	svc, svcPort, p := t.backendService(route, ref)
	if p != nil {
		return backend{}, nil, p
	}
	upstream := func(fx *effects) (*config.UpstreamTLS, *refProblem) { return t.upstreamTLS(fx, svc, *svcPort) }
	return backend{target: t.serviceTarget(svc, svcPort.Port)}, upstream, nil
}

// backendService finds the Service and port a backendRef names, in the route's namespace or,
// granted by a ReferenceGrant, another visible one.
func (t *translator) backendService(route *kroxyliciousv1alpha1.KafkaRoute, b kroxyliciousv1alpha1.BackendReference) (*corev1.Service, *corev1.ServicePort, *refProblem) {
	if b.Group != nil && *b.Group != gatewaymodel.CoreGroup || b.Kind != nil && *b.Kind != gatewaymodel.KindService {
		return nil, nil, &refProblem{reason: ReasonInvalidKind, message: "backendRefs must name a core Service or a Strimzi Kafka"}
	}
	ns := gatewaymodel.RefNamespace(b.Namespace, route.Namespace)
	name := string(b.Name)
	if ns != route.Namespace {
		if !t.visible(ns) {
			return nil, nil, &refProblem{reason: ReasonRefNotPermitted, message: fmt.Sprintf("Service %s/%s is in a namespace the operator does not watch", ns, name)}
		}
		from := gatewaymodel.From{Group: gatewaymodel.Group, Kind: gatewaymodel.KindRoute, Namespace: route.Namespace}
		if to := (gatewaymodel.To{Group: gatewaymodel.CoreGroup, Kind: gatewaymodel.KindService, Namespace: ns, Name: name}); !t.granted(from, to) {
			return nil, nil, notGranted(fmt.Sprintf("Service %s/%s is in another namespace and no ReferenceGrant there allows KafkaRoutes from namespace %s to refer to it", ns, name, route.Namespace), from, to)
		}
	}
	svc := t.services[types.NamespacedName{Namespace: ns, Name: name}]
	if svc == nil {
		return nil, nil, &refProblem{reason: ReasonBackendNotFound, message: fmt.Sprintf("Service %s/%s not found", ns, name)}
	}
	var svcPort *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == int32(b.Port) {
			svcPort = &svc.Spec.Ports[i]
		}
	}
	if svcPort == nil {
		return nil, nil, &refProblem{reason: ReasonBackendNotFound, message: fmt.Sprintf("Service %s/%s has no port %d", ns, name, b.Port)}
	}
	return svc, svcPort, nil
}

// serviceTarget is the address of a Service port: a fully qualified name with the root dot, so
// no resolv.conf search list or public DNS can turn it into another host.
func (t *translator) serviceTarget(svc *corev1.Service, port int32) string {
	return fmt.Sprintf("%s.%s.%s.:%d", svc.Name, svc.Namespace, t.clusterDomain(), port)
}

// clusterDomain is the in-cluster DNS suffix of Services (--cluster-domain), svc.cluster.local
// by default.
func (t *translator) clusterDomain() string {
	domain := strings.Trim(t.s.Env.ClusterDomain, ".")
	if domain == "" {
		domain = "svc.cluster.local"
	}
	return domain
}

// routeFilters resolves a rule's KafkaFilters into proxy filters, with the Secrets their
// placeholders name mounted through fx.
func (t *translator) routeFilters(fx *effects, route *kroxyliciousv1alpha1.KafkaRoute, refs []kroxyliciousv1alpha1.FilterReference) ([]config.Filter, *refProblem) {
	var filters []config.Filter
	for _, f := range refs {
		if f.Group != nil && *f.Group != gatewaymodel.FilterGroup || f.Kind != nil && *f.Kind != gatewaymodel.KindFilter {
			return nil, &refProblem{reason: ReasonInvalidKind, message: fmt.Sprintf("filter %q must be a filter.kroxylicious.io KafkaFilter", f.Name)}
		}
		kf := t.filters[string(f.Name)]
		if kf == nil {
			return nil, &refProblem{reason: ReasonFilterNotFound, message: fmt.Sprintf("KafkaFilter %s/%s not found", route.Namespace, f.Name)}
		}
		filter, p := t.filter(fx, kf)
		if p != nil {
			return nil, p
		}
		filters = append(filters, filter)
	}
	return filters, nil
}

// filter turns one KafkaFilter into a proxy filter: a type the proxy implements, its
// configuration with Secret placeholders replaced by paths, and those Secrets mounted.
func (t *translator) filter(fx *effects, kf *filterv1alpha1.KafkaFilter) (config.Filter, *refProblem) {
	if !slices.Contains(t.s.Env.FilterTypes, kf.Spec.Type) {
		implemented := "none"
		if len(t.s.Env.FilterTypes) > 0 {
			implemented = strings.Join(t.s.Env.FilterTypes, ", ")
		}
		return config.Filter{}, &refProblem{reason: ReasonUnsupportedValue, message: fmt.Sprintf("KafkaFilter %s has type %s, which the proxy does not implement (it implements: %s; see the operator's --proxy-filter-types)", kf.Name, kf.Spec.Type, implemented)}
	}
	cfg, refs, err := SubstituteFilterSecrets(kf.Spec.RawConfig())
	if err != nil {
		return config.Filter{}, &refProblem{reason: ReasonInvalidFilterSecretRef, message: fmt.Sprintf("KafkaFilter %s: %v", kf.Name, err)}
	}
	for _, r := range refs {
		if p := t.checkFilterRef(kf, r); p != nil {
			return config.Filter{}, p
		}
	}
	if check := t.s.Env.CheckFilter; check != nil {
		if err := check(kf.Spec.Type, cfg, t.filterFiles(kf.Namespace, refs)); err != nil {
			return config.Filter{}, &refProblem{reason: ReasonInvalidFilterConfig, message: fmt.Sprintf("KafkaFilter %s: %v", kf.Name, err)}
		}
	}
	for _, r := range refs {
		if r.Kind == KindConfigMap {
			fx.cmMounts[r.Dir()] = r.Secret
			fx.filterCM[r.Secret] = true
			continue
		}
		fx.mount(r.Secret, r.Dir())
		fx.filterSecret[r.Secret] = true
	}
	return config.Filter{Name: kf.Name, Type: kf.Spec.Type, Config: json.RawMessage(cfg)}, nil
}

// checkFilterRef reports a filter's Secret or ConfigMap that does not exist or lacks the key.
func (t *translator) checkFilterRef(kf *filterv1alpha1.KafkaFilter, r FilterSecretRef) *refProblem {
	name := types.NamespacedName{Namespace: kf.Namespace, Name: r.Secret}
	var keys map[string]bool
	if r.Kind == KindConfigMap {
		if cm := t.configMaps[name]; cm != nil {
			keys = map[string]bool{}
			for k := range cm.Data {
				keys[k] = true
			}
			for k := range cm.BinaryData {
				keys[k] = true
			}
		}
	} else if secret := t.secrets[name]; secret != nil {
		keys = map[string]bool{}
		for k := range secret.Data {
			keys[k] = true
		}
	}
	switch {
	case keys == nil:
		return &refProblem{reason: ReasonInvalidFilterSecretRef, message: fmt.Sprintf("KafkaFilter %s: %s %s/%s not found", kf.Name, r.Kind, kf.Namespace, r.Secret)}
	case r.Key != "" && !keys[r.Key]:
		return &refProblem{reason: ReasonInvalidFilterSecretRef, message: fmt.Sprintf("KafkaFilter %s: %s %s/%s has no key %q", kf.Name, r.Kind, kf.Namespace, r.Secret, r.Key)}
	}
	return nil
}

// filterFiles is what the proxy's pod will find under the filter Secrets' and ConfigMaps'
// mounts: each referenced object's keys, by path.
func (t *translator) filterFiles(ns string, refs []FilterSecretRef) map[string][]byte {
	files := map[string][]byte{}
	for _, r := range refs {
		name := types.NamespacedName{Namespace: ns, Name: r.Secret}
		if r.Kind == KindConfigMap {
			if cm := t.configMaps[name]; cm != nil {
				for k, v := range cm.Data {
					files[r.Dir()+"/"+k] = []byte(v)
				}
				for k, v := range cm.BinaryData {
					files[r.Dir()+"/"+k] = v
				}
			}
			continue
		}
		if secret := t.secrets[name]; secret != nil {
			for k, v := range secret.Data {
				files[r.Dir()+"/"+k] = v
			}
		}
	}
	return files
}

// upstreamTLS finds the KafkaBackendTLSPolicy of a backend Service port: the oldest policy that
// targets it wins, later ones are Conflicted. Only policies allowed to target the Service (in
// its namespace, or granted by a ReferenceGrant there) take part, so a policy from elsewhere
// cannot squat a Service by being older.
func (t *translator) upstreamTLS(fx *effects, svc *corev1.Service, port corev1.ServicePort) (*config.UpstreamTLS, *refProblem) {
	var matches []*policyState
	for _, ps := range t.policies {
		if !policyTargets(ps.policy, svc, port) {
			continue
		}
		p := ps.policy
		if p.Namespace != svc.Namespace && !t.granted(gatewaymodel.From{Group: gatewaymodel.Group, Kind: gatewaymodel.KindPolicy, Namespace: p.Namespace}, gatewaymodel.To{Group: gatewaymodel.CoreGroup, Kind: gatewaymodel.KindService, Namespace: svc.Namespace, Name: svc.Name}) {
			if !ps.used { // a policy that applies elsewhere for this gateway keeps that status
				ps.used = true
				ps.accepted = &refProblem{reason: ReasonInvalid, message: fmt.Sprintf("it targets Service %s/%s in another namespace, and no ReferenceGrant there allows it", svc.Namespace, svc.Name)}
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
			loser.accepted = &refProblem{reason: ReasonConflicted, message: fmt.Sprintf("KafkaBackendTLSPolicy %s/%s already applies to Service %s/%s port %d", winner.policy.Namespace, winner.policy.Name, svc.Namespace, svc.Name, port.Port)}
		}
	}
	t.evaluatePolicy(fx, winner, svc)
	if winner.accepted != nil {
		return nil, &refProblem{reason: ReasonInvalidBackendTLS, message: fmt.Sprintf("KafkaBackendTLSPolicy %s/%s: %s", winner.policy.Namespace, winner.policy.Name, winner.accepted.message), notGranted: winner.accepted.notGranted}
	}
	if winner.resolved != nil {
		return nil, &refProblem{reason: ReasonInvalidBackendTLS, message: fmt.Sprintf("KafkaBackendTLSPolicy %s/%s: %s", winner.policy.Namespace, winner.policy.Name, winner.resolved.message), notGranted: winner.resolved.notGranted}
	}
	up := *winner.tls
	up.CAFiles = append([]string(nil), winner.tls.CAFiles...)
	if t.clientCert != nil {
		up.CertificateFile, up.PrivateKeyFile = t.clientCert.CertificateFile, t.clientCert.PrivateKeyFile
	}
	return &up, nil
}

// policyTargets reports whether a policy targets a port of a Service.
func policyTargets(p *kroxyliciousv1alpha1.KafkaBackendTLSPolicy, svc *corev1.Service, port corev1.ServicePort) bool {
	for _, ref := range p.Spec.TargetRefs {
		ns := gatewaymodel.RefNamespace(ref.Namespace, p.Namespace)
		if ref.Kind != gatewaymodel.KindService || ns != svc.Namespace || string(ref.Name) != svc.Name {
			continue
		}
		if ref.SectionName == nil || *ref.SectionName == "" || string(*ref.SectionName) == port.Name {
			return true
		}
	}
	return false
}

// evaluatePolicy checks a policy once and builds its upstream TLS settings.
func (t *translator) evaluatePolicy(fx *effects, ps *policyState, svc *corev1.Service) {
	// Evaluated on every use, so each parentRef stages the policy's mounts for itself.
	ps.used = true
	ps.accepted, ps.resolved = nil, nil
	p := ps.policy
	if p.Namespace != svc.Namespace && !t.granted(gatewaymodel.From{Group: gatewaymodel.Group, Kind: gatewaymodel.KindPolicy, Namespace: p.Namespace}, gatewaymodel.To{Group: gatewaymodel.CoreGroup, Kind: gatewaymodel.KindService, Namespace: svc.Namespace, Name: svc.Name}) {
		ps.accepted = &refProblem{reason: ReasonInvalid, message: fmt.Sprintf("it targets Service %s/%s in another namespace, and no ReferenceGrant there allows it", svc.Namespace, svc.Name)}
		ps.tls = &config.UpstreamTLS{}
		return
	}
	if _, err := config.ResolveTLSOptions(p.Spec.Options); err != nil {
		ps.accepted = &refProblem{reason: ReasonInvalid, message: fmt.Sprintf("options: %v", err)}
	}
	up := &config.UpstreamTLS{Options: p.Spec.Options}
	if p.Spec.Validation.Hostname != nil {
		up.ServerName = *p.Spec.Validation.Hostname
	}
	var msgs []string
	reason, notGranted := ReasonInvalidCACertificateRef, false
	for _, ref := range p.Spec.Validation.CACertificateRefs {
		keys := strimzi.CACertEntries(nil)
		if secret := t.secrets[types.NamespacedName{Namespace: gatewaymodel.RefNamespace(ref.Namespace, p.Namespace), Name: string(ref.Name)}]; secret != nil {
			keys = caKeysOf(secret)
		}
		secret, prob := t.secretRef(fx, ref, gatewaymodel.From{Group: gatewaymodel.Group, Kind: gatewaymodel.KindPolicy, Namespace: p.Namespace}, keys, ReasonInvalidCACertificateRef, nil)
		if prob != nil {
			if prob.reason == ReasonRefNotPermitted || prob.reason == ReasonInvalidKind {
				reason = prob.reason
			}
			msgs = append(msgs, prob.message)
			notGranted = notGranted || prob.notGranted
			continue
		}
		dir := fx.mount(secret, BackendSecretsDir+"/"+secret)
		for _, k := range keys {
			up.CAFiles = append(up.CAFiles, dir+"/"+k)
		}
	}
	if len(msgs) > 0 {
		ps.resolved = &refProblem{reason: reason, message: strings.Join(msgs, "; "), notGranted: notGranted}
	}
	ps.tls = up
}
