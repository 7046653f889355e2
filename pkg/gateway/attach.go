package gateway

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/proxy/config"
)

// DefaultMaxGeneratedObjectsPerGateway is the operator's default bound
// (--max-generated-objects-per-gateway, Environment.MaxGeneratedObjects) on the Services, OpenShift
// Routes and TLSRoutes one gateway generates for its routes. A parentRef that could go over it is
// not accepted (LimitExceeded); the routes attached before it keep working. Every host is a
// ClusterIP Service, and Service IPs are a cluster-wide resource: 1024 is a quarter of GKE's
// default Service range (a /20, 4,096 addresses), so one namespace's gateway cannot take them all,
// and it is what one route at its own limit (MaxHostsPerRoute, 1024 hosts) needs in Services.
const DefaultMaxGeneratedObjectsPerGateway = 1024

// attachRoutes attaches every parentRef of the gateway's routes that names this gateway, oldest
// route first (as Gateway API orders conflicting routes), and writes each route's parent status.
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
			accepted, resolved, brokers := tooBig, (*refProblem)(nil), (*metav1.Condition)(nil)
			var more []metav1.Condition
			if tooBig == nil {
				accepted, resolved, brokers = t.attach(route, pr)
				if brokers != nil {
					more = append(more, *brokers)
				}
				more = append(more, t.serviceDiagnostics(route, pr)...)
			}
			parents = append(parents, routeParentStatus(route, pr, t.noted(accepted), t.noted(resolved), more))
		}
		res.RouteParents[route.Name] = limitTo(parents, maxRouteParentStatuses)
	}
}

// routeParentStatus is the status entry of one parentRef: Accepted and ResolvedRefs, then the
// diagnostic conditions in more (BrokerIDsMatch, BackendTLS).
func routeParentStatus(route *kroxyliciousv1alpha1.KafkaRoute, pr kroxyliciousv1alpha1.KafkaRouteParentReference, accepted, resolved *refProblem, more []metav1.Condition) kroxyliciousv1alpha1.RouteParentStatus {
	ref := kroxyliciousv1alpha1.ParentReference{Group: pr.Group, Kind: pr.Kind, Name: pr.Name, SectionName: pr.SectionName}
	if ref.Group == nil {
		g := gatewaymodel.Group
		ref.Group = &g
	}
	if ref.Kind == nil {
		k := gatewaymodel.KindGateway
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
	conds := append([]metav1.Condition{acc, rr}, more...)
	return kroxyliciousv1alpha1.RouteParentStatus{ParentRef: ref, ControllerName: ControllerName, Conditions: conds}
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
	return gatewaymodel.IsGatewayParent(pr) && string(pr.Name) == t.gw.Name
}

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
			return &refProblem{reason: ReasonLimitExceeded, message: fmt.Sprintf("parentRef %s lists %d broker ids, more than the %d a parentRef may list", pr.Name, ids, kroxyliciousv1alpha1.MaxBrokerIDsPerParentRef)}
		}
		hosts += len(pr.Hostnames) * (ids + 1)
	}
	if hosts > kroxyliciousv1alpha1.MaxHostsPerRoute {
		return &refProblem{reason: ReasonLimitExceeded, message: fmt.Sprintf("the route asks for %d hosts (the sum over parentRefs of hostnames x (broker ids + 1)), more than the %d a route may ask for: each host needs its own Service", hosts, kroxyliciousv1alpha1.MaxHostsPerRoute)}
	}
	return nil
}

// attach attaches one parentRef of a route and returns its Accepted and ResolvedRefs problems,
// and for a Kafka backend that also lists brokers, whether they match. A parentRef refused before
// its references are resolved still has them resolved, for the ResolvedRefs condition, with
// their effects thrown away.
func (t *translator) attach(route *kroxyliciousv1alpha1.KafkaRoute, pr kroxyliciousv1alpha1.KafkaRouteParentReference) (accepted, resolved *refProblem, brokers *metav1.Condition) {
	// 1. Select the listeners (sectionName, or all) that take routes.
	listeners, p := t.selectListeners(pr)
	if p != nil {
		return p, t.refsProblem(route, pr), nil
	}
	// 2. The broker ids, which give the per-broker hosts: listed, or a Kafka backend's.
	ids, brokers, p := t.parentBrokerIDs(route, pr)
	if p != nil {
		return p, t.refsProblem(route, pr), nil
	}
	// 3. The hosts: each hostname resolved to bootstrap and broker hosts and an exposure.
	hosts, p := t.hosts(pr)
	if p != nil {
		return p, t.refsProblem(route, pr), brokers
	}
	mapping, p := brokerMapping(pr)
	if p == nil && mapping == kroxyliciousv1alpha1.BrokerIdentityMappingHash {
		p = t.hashHosts(hosts)
	}
	if p != nil {
		return p, t.refsProblem(route, pr), brokers
	}
	// 4. The references (backend, filters, upstream TLS), with their effects held back in fx.
	fx := newEffects()
	b, resolved := t.resolveRefs(fx, route, pr)
	if mapping == kroxyliciousv1alpha1.BrokerIdentityMappingHash {
		fx.mount(BrokerIdentitySecretName(t.gw.Name), BrokerIdentityDir)
	}
	// 5. The plan: the virtual clusters, Services and Routes the parentRef adds.
	plan := t.plan(route.Name, listeners, hosts, ids, b, resolved == nil)
	if p := t.checkPlan(route.Name, plan); p != nil {
		return p, resolved, brokers
	}
	// 6. Claims: no clash with itself, earlier routes, or objects the gateway does not control.
	if p := t.checkClaims(route.Name, plan); p != nil {
		return p, resolved, brokers
	}
	// 7. Commit: the parentRef is accepted; its effects count once its references resolve.
	t.commit(route.Name, plan, listeners)
	if resolved == nil {
		t.apply(fx)
	}
	return nil, resolved, brokers
}

// parentBrokerIDs are a parentRef's broker ids: its Kafka backend's broker nodes
// (kafkaBrokerIDs), or the brokers it lists.
func (t *translator) parentBrokerIDs(route *kroxyliciousv1alpha1.KafkaRoute, pr kroxyliciousv1alpha1.KafkaRouteParentReference) ([]int32, *metav1.Condition, *refProblem) {
	if ref, ok := kafkaRef(pr); ok {
		return t.kafkaBrokerIDs(route, pr, ref)
	}
	ids, p := brokerIDs(pr)
	return ids, nil, p
}

// selectListeners are the accepted listeners a parentRef attaches to: its sectionName, or every
// listener. Routes attach to accepted listeners even before their certificates resolve; they are
// then simply not served yet. Only listeners that are not accepted refuse routes.
func (t *translator) selectListeners(pr kroxyliciousv1alpha1.KafkaRouteParentReference) ([]*listenerState, *refProblem) {
	selected := t.servedListeners()
	if pr.SectionName != nil && *pr.SectionName != "" {
		l := t.byName[string(*pr.SectionName)]
		if l == nil {
			return nil, &refProblem{reason: ReasonNoMatchingParent, message: fmt.Sprintf("gateway %s has no listener %q", t.gw.Name, *pr.SectionName)}
		}
		selected = []*listenerState{l}
	}
	var accepted []*listenerState
	var why []string
	for _, l := range selected {
		switch {
		case l.accepted != nil:
			why = append(why, fmt.Sprintf("listener %q is not accepted: %s", l.spec.Name, l.accepted.message))
		case !l.usable:
			why = append(why, fmt.Sprintf("listener %q has no usable certificate", l.spec.Name))
		}
		if l.accepted == nil {
			accepted = append(accepted, l)
		}
	}
	if len(accepted) == 0 {
		return nil, &refProblem{reason: ReasonNotAllowedByListeners, message: strings.Join(why, "; ")}
	}
	return accepted, nil
}

// brokerIDs are a parentRef's broker ids, sorted and each once.
func brokerIDs(pr kroxyliciousv1alpha1.KafkaRouteParentReference) ([]int32, *refProblem) {
	if _, p := brokerMapping(pr); p != nil {
		return nil, p
	}
	idSet := map[int32]bool{}
	for _, b := range pr.Brokers {
		for _, id := range b.AdvertisedBrokerIds {
			if id < 0 {
				return nil, &refProblem{reason: ReasonUnsupportedValue, message: fmt.Sprintf("broker id %d is negative", id)}
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
		return nil, &refProblem{reason: ReasonUnsupportedValue, message: "brokers lists no advertisedBrokerIds"}
	}
	return ids, nil
}

// hosts resolves a parentRef's hostnames (gatewaymodel.ResolveHost), refusing those under an
// ingress domain the operator does not allow.
func (t *translator) hosts(pr kroxyliciousv1alpha1.KafkaRouteParentReference) ([]gatewaymodel.Host, *refProblem) {
	var hosts []gatewaymodel.Host
	for _, hn := range pr.Hostnames {
		if d := t.deniedDomain(string(hn)); d != "" {
			return nil, &refProblem{reason: ReasonUnsupportedValue, message: fmt.Sprintf("hostname %s is under ingress domain %s, which the operator does not allow", hn, d)}
		}
		h, err := gatewaymodel.ResolveHost(string(hn), t.ns, t.s.Env.ClusterDomain, t.ingressDomains, len(t.parentRefs) > 0)
		if err != nil {
			return nil, &refProblem{reason: ReasonUnsupportedValue, message: err.Error()}
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return nil, &refProblem{reason: ReasonUnsupportedValue, message: "hostnames is empty"}
	}
	return hosts, nil
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

// claim is a generated object a parentRef needs, and who needs it: two needs of one object by
// different owners clash.
type claim struct {
	key   ObjectKey
	owner string
	what  string
}

type pendingSNI struct {
	listener *listenerState
	claim    sniClaim
}

type svcKey struct {
	name string
	lb   bool
}

// plan works out what a parentRef adds on each listener for each host: a virtual cluster (served
// only when its references resolve and the listener is usable), its SNI hosts, and the Services
// and Routes or TLSRoutes that expose the hosts. This is where a hostname becomes Service names:
// one LoadBalancer Service per route, or one ClusterIP Service per host named by the host's first
// label (Host.BootstrapServiceName, Host.BrokerServiceName).
func (t *translator) plan(route string, listeners []*listenerState, hosts []gatewaymodel.Host, ids []int32, b backend, serve bool) *pending {
	p := &pending{}
	for _, l := range listeners {
		port := int32(l.spec.Port)
		for _, h := range hosts {
			vc := config.VirtualCluster{
				Name:            fmt.Sprintf("%s/%s/%s", route, l.spec.Name, h.Pattern),
				Listener:        string(l.spec.Name),
				BootstrapHost:   h.Bootstrap,
				BrokerPattern:   h.BrokerPattern,
				TargetBootstrap: b.target,
				UpstreamBrokers: b.brokers,
				UpstreamTLS:     b.upstream,
				Discovery:       b.discovery,
				Filters:         b.filters,
				AdvertisedPort:  gatewaymodel.AdvertisedPort(h.Exposure, t.parentRefs),
				BrokerIdentity:  brokerIdentity(h),
			}
			p.sni = append(p.sni, pendingSNI{l, sniClaim{route, vc}})
			if serve && l.usable {
				p.vcs = append(p.vcs, vc)
			}
			if h.Exposure == gatewaymodel.ExposeLoadBalancer {
				p.addService(route, true, route, l, false)
				continue
			}
			p.addHostObjects(route, l, h, ids, port)
		}
	}
	return p
}

// addHostObjects adds the per-host ClusterIP Services of one hostname on one listener, and the
// OpenShift Routes or TLSRoutes that expose them.
func (p *pending) addHostObjects(route string, l *listenerState, h gatewaymodel.Host, ids []int32, port int32) {
	type perHost struct{ host, svc string }
	all := []perHost{{h.Bootstrap, h.BootstrapServiceName()}}
	for _, id := range ids {
		all = append(all, perHost{h.BrokerHost(id), h.BrokerServiceName(id)})
	}
	for _, ph := range all {
		p.addService(ph.svc, false, route, l, h.Exposure != gatewaymodel.ExposeInCluster)
		dr := &desiredRoute{name: ph.svc, route: route, host: ph.host, service: ph.svc, port: port, listener: string(l.spec.Name)}
		owner := route + "|" + ph.host + "|" + dr.listener
		switch h.Exposure {
		case gatewaymodel.ExposeOpenShiftRoute:
			p.os = append(p.os, dr)
			p.claims = append(p.claims, claim{ObjectKey{KindRoute, ph.svc}, owner, "host " + ph.host})
		case gatewaymodel.ExposeTLSRoute:
			p.tls = append(p.tls, dr)
			p.claims = append(p.claims, claim{ObjectKey{KindTLSRoute, ph.svc}, owner, "host " + ph.host})
		}
	}
}

// addService adds a listener's port to a pending Service, adding the Service if new.
// exposedOutside tells that the host is exposed through an OpenShift Route or TLSRoute.
func (p *pending) addService(name string, lb bool, route string, l *listenerState, exposedOutside bool) {
	if p.svcIndex == nil {
		p.svcIndex = map[svcKey]*desiredService{}
	}
	if s := p.svcIndex[svcKey{name, lb}]; s != nil {
		s.ports[l.portName] = int32(l.spec.Port)
		s.exposedOutside = s.exposedOutside || exposedOutside
		return
	}
	s := &desiredService{name: name, lb: lb, route: route, ports: map[string]int32{l.portName: int32(l.spec.Port)}, exposedOutside: exposedOutside}
	p.svcIndex[svcKey{name, lb}] = s
	p.svcs = append(p.svcs, s)
}

// checkPlan bounds what one gateway generates (every host is a Service, and maybe a Route or
// TLSRoute), checks the generated names, and adds the Services to the plan's claims.
func (t *translator) checkPlan(route string, p *pending) *refProblem {
	if have, more, most := len(t.svcs)+len(t.osRoutes)+len(t.tlsRoutes), len(p.svcs)+len(p.os)+len(p.tls), t.s.Env.maxGeneratedObjects(); have+more > most {
		return &refProblem{reason: ReasonLimitExceeded, message: fmt.Sprintf("the gateway already generates %d Services and Routes for its routes, and this parentRef needs %d more: at most %d per gateway (the operator's --max-generated-objects-per-gateway)", have, more, most)}
	}
	for _, svc := range p.svcs {
		what, owner := "the LoadBalancer of route "+route, route+"|LoadBalancer"
		if !svc.lb {
			what, owner = "a host of route "+route, route+"|ClusterIP"
		}
		if err := checkServiceName(svc.name, what); err != nil {
			return &refProblem{reason: ReasonUnsupportedValue, message: err.Error()}
		}
		p.claims = append(p.claims, claim{ObjectKey{KindService, svc.name}, owner, what})
	}
	for _, dr := range append(append([]*desiredRoute(nil), p.os...), p.tls...) {
		if len(validation.IsDNS1123Subdomain(dr.name)) > 0 {
			return &refProblem{reason: ReasonUnsupportedValue, message: fmt.Sprintf("the object name %q for host %s is not valid", dr.name, dr.host)}
		}
	}
	return nil
}

// checkServiceName reports why name cannot be a Service name: Services are DNS-1035 labels
// (a letter first, at most 63 characters). Names are never truncated to fit.
func checkServiceName(name, what string) error {
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return fmt.Errorf("the Service name %q for %s is not valid (%s); kafkalink never shortens names, so choose a shorter or different hostname prefix or route name",
			name, what, strings.Join(errs, "; "))
	}
	return nil
}

// checkClaims finds the first clash of the pending parentRef with itself, with earlier routes and
// with objects the gateway does not control.
func (t *translator) checkClaims(route string, p *pending) *refProblem {
	local := map[ObjectKey]claim{}
	for _, c := range p.claims {
		if t.foreign[c.key] {
			return &refProblem{reason: ReasonNameInUse, message: fmt.Sprintf("%s needs %s %s, which exists and is not managed by this gateway", c.what, c.key.Kind, c.key.Name)}
		}
		if owner, ok := t.claims[c.key]; ok && owner != c.owner {
			other := t.claimRoute[c.key]
			if other != route {
				t.conflictOnListeners(p, fmt.Sprintf("route %s: %s needs %s %s, already generated for route %s", route, c.what, c.key.Kind, c.key.Name, other))
				return &refProblem{reason: ReasonHostnameConflict, message: fmt.Sprintf("%s needs %s %s, already generated for route %s", c.what, c.key.Kind, c.key.Name, other)}
			}
			return &refProblem{reason: ReasonUnsupportedValue, message: fmt.Sprintf("%s needs %s %s, which another hostname of this route already needs", c.what, c.key.Kind, c.key.Name)}
		}
		if prev, ok := local[c.key]; ok && prev.owner != c.owner {
			return &refProblem{reason: ReasonUnsupportedValue, message: fmt.Sprintf("%s and %s both map to %s %s", prev.what, c.what, c.key.Kind, c.key.Name)}
		}
		local[c.key] = c
	}
	// SNI: the proxy must route every host of a listener to exactly one virtual cluster.
	for i, ps := range p.sni {
		for _, held := range ps.listener.sni {
			if clash := sniClash(held.vc, ps.claim.vc); clash != "" {
				msg := fmt.Sprintf("hostname %s on listener %q overlaps route %s: %s", ps.claim.vc.BootstrapHost, ps.listener.spec.Name, held.route, clash)
				ps.listener.conflicts = append(ps.listener.conflicts, fmt.Sprintf("route %s: %s", route, msg))
				return &refProblem{reason: ReasonHostnameConflict, message: msg}
			}
		}
		for _, other := range p.sni[:i] {
			if other.listener == ps.listener {
				if clash := sniClash(other.claim.vc, ps.claim.vc); clash != "" {
					return &refProblem{reason: ReasonUnsupportedValue, message: fmt.Sprintf("hostnames of this route overlap on listener %q: %s", ps.listener.spec.Name, clash)}
				}
			}
		}
	}
	return nil
}

// conflictOnListeners reports a clash with another route on every listener the parentRef uses.
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

// commit adds an accepted parentRef's plan to the model: its claims, SNI hosts, Services,
// Routes, TLSRoutes and virtual clusters.
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
			have.exposedOutside = have.exposedOutside || s.exposedOutside
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
