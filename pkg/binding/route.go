package binding

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// Reasons a KafkaConnection that names a KafkaRoute is not Ready, besides the shared ones
// (ListenerNotFound, ListenerIncompatible, UserAuthenticationUnsupported, CACertificateMissing,
// RefNotPermitted and the user and store reasons).
const (
	// ReasonRouteNotFound: the KafkaRoute the connection names does not exist.
	ReasonRouteNotFound = "RouteNotFound"
	// ReasonGatewayNotFound: the route has no KafkaGateway parent, or the KafkaGateway of the
	// parentRef the binding uses does not exist.
	ReasonGatewayNotFound = "GatewayNotFound"
	// ReasonHostnameNotFound: spec.kafka.hostname is not one of the hostnames the route's parentRef
	// lists for the chosen listener, or that parentRef lists none.
	ReasonHostnameNotFound = "HostnameNotFound"
	// ReasonHostnameInvalid: the route hostname cannot be resolved to a bootstrap host (no '%' in
	// its first label, an in-cluster hostname naming another namespace, too long); the gateway
	// refuses it as well.
	ReasonHostnameInvalid = "HostnameInvalid"
	// ReasonRouteNotAccepted: the gateway controller has not accepted the route on the chosen
	// gateway for the route's current generation (yet, or because of a conflict it reports). A
	// binding is only written once the bootstrap host really leads to this route's cluster.
	ReasonRouteNotAccepted = "RouteNotAccepted"
)

// ProviderKafkaLink is the provider entry of a binding through a KafkaRoute: the addresses and
// the truststore are the proxy's, not Strimzi's (the credentials still are Strimzi's).
const ProviderKafkaLink = "kafkalink"

// RouteInput is everything a binding through a KafkaRoute is computed from, as the controller
// gathers it from its listers.
type RouteInput struct {
	// RouteKey is namespace/name of the route the connection names, for messages.
	RouteKey string
	// Route is the KafkaRoute; nil when it does not exist.
	Route *kroxyliciousv1alpha1.KafkaRoute
	// Gateways are the KafkaGateways of the route's namespace that its parentRefs name, by name.
	// A name without an entry does not exist.
	Gateways map[string]*kroxyliciousv1alpha1.KafkaGateway
	// Parameters are the KafkaGatewayParameters of the route's namespace, by name. Only
	// hostnames outside the cluster domain need them (ingress domains, Gateway API parents).
	Parameters map[string]*kroxyliciousv1alpha1.KafkaGatewayParameters
	// Secrets are the Secrets the binding may read (the listener certificates and the CA Secret),
	// by namespace/name. Only their ca.crt and tls.crt entries are read. A listener certificate
	// Secret the gateway may not use (another namespace, no ReferenceGrant) must be left out:
	// see GatewayMayUseSecret.
	Secrets map[string]*SecretData
	// RequestedListener is spec.kafka.listener.name: a gateway listener (sectionName).
	RequestedListener string
	// RequestedHostname is spec.kafka.hostname, one of the route's hostnames as written.
	RequestedHostname string
	// CASecretName is spec.kafka.caSecret.name, a Secret in the route's namespace; empty means
	// the ca.crt of the listener's certificate Secret.
	CASecretName string
	// ClusterDomain is the operator's --cluster-domain.
	ClusterDomain string
	// User is the parsed KafkaUser; nil when the connection names none.
	User *strimzi.KafkaUser
	// UserSecret is the user's credentials Secret; nil when it does not exist.
	UserSecret *SecretData
	// StoreFormats is spec.storeFormats; empty means DefaultStoreFormats.
	StoreFormats []string
	// Cache, when set, memoizes PKCS12 and JKS stores across calls; see StoreCache.
	Cache *StoreCache
}

// RouteChoice is where a binding through a route points: one listener of one gateway, and one of
// the route's hostnames there.
type RouteChoice struct {
	// Parent is the index of the parentRef in the route's spec.
	Parent int
	// Gateway is the KafkaGateway of that parentRef.
	Gateway *kroxyliciousv1alpha1.KafkaGateway
	// Listener is the gateway listener.
	Listener kroxyliciousv1alpha1.Listener
	// Host is the chosen hostname, resolved as the gateway serves it.
	Host gatewaymodel.Host
	// Port is the port clients connect to for that hostname.
	Port int32
}

// BootstrapServers is the bootstrap host on the port clients use.
func (c RouteChoice) BootstrapServers() string {
	return net.JoinHostPort(c.Host.Bootstrap, strconv.Itoa(int(c.Port)))
}

// BuildRoute computes the binding of a connection that names a KafkaRoute, so that the proxied
// cluster looks to the application exactly like a real one:
//   - bootstrap.servers is the route's bootstrap host (the first in-cluster hostname unless one
//     is requested) on the port clients use, as pkg/gatewaymodel resolves it for the translator too;
//   - security.protocol is SSL, or SASL_SSL with a scram-sha-512 user, whose credentials are
//     assembled exactly as for a Strimzi Kafka (AssembleSecret);
//   - the truststore holds the ca.crt of the listener's certificate Secret (as cert-manager
//     writes it), or of spec.kafka.caSecret.
//
// tls and tls-external users are refused: the gateway terminates TLS, so a client certificate
// never reaches the Kafka cluster, which would see the proxy instead of the user. Listeners that
// require client certificates themselves (frontendValidation) are refused for the same reason:
// the binding carries no certificate the proxy would accept.
//
// The binding waits (RouteNotAccepted) until the gateway controller has accepted the route's
// current generation on the chosen parent, so a bootstrap host another route holds is never bound.
func BuildRoute(in RouteInput) (Result, *Failure) {
	if in.Route == nil {
		return Result{}, fail(ReasonRouteNotFound, fmt.Sprintf("KafkaRoute %s does not exist", in.RouteKey))
	}
	if in.User != nil {
		if f := checkRouteUser(in.User); f != nil {
			return Result{}, f
		}
	}
	rc, f := ChooseRoute(in)
	if f != nil {
		return Result{}, f
	}
	choice := Choice{
		// The listener as the shared assembly sees it: TLS always (the gateway only serves
		// kroxylicious.io/kafka-tls), SASL when a user is named, since the proxy passes the
		// SASL exchange through to the Kafka cluster.
		Listener:         strimzi.Listener{Name: string(rc.Listener.Name), Port: rc.Port, TLS: true},
		BootstrapServers: rc.BootstrapServers(),
		SecurityProtocol: ProtocolSSL,
	}
	if in.User != nil {
		choice.Listener.Authentication = strimzi.ListenerAuthSCRAMSHA512
		choice.SecurityProtocol = ProtocolSASLSSL
	}
	if f := checkAccepted(in.Route, rc); f != nil {
		return Result{Choice: choice}, f
	}
	ca, f := routeTrust(in, rc)
	if f != nil {
		return Result{Choice: choice}, f
	}
	data, f := AssembleSecret(SecretInput{
		Choice:       choice,
		CASecret:     ca,
		User:         in.User,
		UserSecret:   in.UserSecret,
		Provider:     ProviderKafkaLink,
		StoreFormats: in.StoreFormats,
		Cache:        in.Cache,
	})
	if f != nil {
		return Result{Choice: choice}, f
	}
	return Result{Choice: choice, Data: data}, nil
}

// checkRouteUser refuses users whose credentials cannot cross the gateway.
func checkRouteUser(u *strimzi.KafkaUser) *Failure {
	if f := checkUserAuthentication(u); f != nil {
		return f
	}
	switch u.Authentication {
	case strimzi.UserAuthTLS, strimzi.UserAuthTLSExternal:
		return fail(ReasonUserAuthenticationUnsupported, fmt.Sprintf(
			"KafkaUser %s uses %s authentication, which cannot pass a KafkaGateway: the gateway terminates TLS, so the client certificate never reaches the Kafka cluster (use a scram-sha-512 user, or connect to the Kafka directly)",
			userRef(u), u.Authentication))
	}
	return nil
}

// ChooseRoute picks the gateway listener and hostname of a binding through a route:
//  1. the listener: spec.kafka.listener when set (the first parentRef that attaches to a
//     listener of that name); else the first KafkaGateway parentRef's sectionName; else that
//     gateway's only listener, or its first in name order;
//  2. the hostname: spec.kafka.hostname when set, which must be one of that parentRef's
//     hostnames as written; else its first in-cluster hostname; else its first hostname.
func ChooseRoute(in RouteInput) (RouteChoice, *Failure) {
	r := in.Route
	routeRef := r.Namespace + "/" + r.Name
	var parents []int
	for i, pr := range r.Spec.ParentRefs {
		if gatewaymodel.IsGatewayParent(pr) {
			parents = append(parents, i)
		}
	}
	if len(parents) == 0 {
		return RouteChoice{}, fail(ReasonGatewayNotFound, fmt.Sprintf("KafkaRoute %s has no KafkaGateway in its parentRefs", routeRef))
	}
	var rc RouteChoice
	var f *Failure
	if in.RequestedListener != "" {
		rc, f = chooseRequestedListener(in, parents)
	} else {
		rc, f = chooseFirstParentListener(in, parents[0])
	}
	if f != nil {
		return RouteChoice{}, f
	}
	if f := checkRouteListener(rc.Gateway, rc.Listener); f != nil {
		return RouteChoice{}, f
	}
	return chooseHost(in, rc)
}

// chooseRequestedListener picks the first KafkaGateway parentRef that attaches to a listener named
// spec.kafka.listener.
func chooseRequestedListener(in RouteInput, parents []int) (RouteChoice, *Failure) {
	r := in.Route
	routeRef := r.Namespace + "/" + r.Name
	var missing, offered []string
	for _, i := range parents {
		pr := r.Spec.ParentRefs[i]
		gw := in.Gateways[string(pr.Name)]
		if gw == nil {
			missing = append(missing, string(pr.Name))
			continue
		}
		if pr.SectionName != nil && *pr.SectionName != "" {
			offered = append(offered, fmt.Sprintf("%s/%s", pr.Name, *pr.SectionName))
			if string(*pr.SectionName) != in.RequestedListener {
				continue
			}
		} else {
			offered = append(offered, fmt.Sprintf("%s/{%s}", pr.Name, strings.Join(listenerNamesOf(gw), ",")))
		}
		if l, ok := gatewayListener(gw, in.RequestedListener); ok {
			return RouteChoice{Parent: i, Gateway: gw, Listener: l}, nil
		}
	}
	if len(offered) == 0 {
		return RouteChoice{}, fail(ReasonGatewayNotFound, fmt.Sprintf("KafkaGateway %s/%s named by KafkaRoute %s does not exist",
			r.Namespace, strings.Join(missing, ", "), routeRef))
	}
	msg := fmt.Sprintf("KafkaRoute %s attaches to no gateway listener %q (it attaches to %s)", routeRef, in.RequestedListener, strings.Join(offered, ", "))
	if len(missing) > 0 {
		msg += fmt.Sprintf("; KafkaGateway %s does not exist", strings.Join(missing, ", "))
	}
	return RouteChoice{}, fail(ReasonListenerNotFound, msg)
}

// chooseFirstParentListener picks the listener of the first KafkaGateway parentRef (index i):
// its sectionName, else the gateway's first listener in name order.
func chooseFirstParentListener(in RouteInput, i int) (RouteChoice, *Failure) {
	r := in.Route
	routeRef := r.Namespace + "/" + r.Name
	pr := r.Spec.ParentRefs[i]
	gw := in.Gateways[string(pr.Name)]
	if gw == nil {
		return RouteChoice{}, fail(ReasonGatewayNotFound, fmt.Sprintf("KafkaGateway %s/%s named by KafkaRoute %s does not exist", r.Namespace, pr.Name, routeRef))
	}
	name := ""
	if pr.SectionName != nil && *pr.SectionName != "" {
		name = string(*pr.SectionName)
	} else if names := listenerNamesOf(gw); len(names) > 0 {
		name = names[0]
	}
	l, ok := gatewayListener(gw, name)
	if !ok {
		if name == "" {
			return RouteChoice{}, fail(ReasonListenerNotFound, fmt.Sprintf("KafkaGateway %s/%s has no listeners", gw.Namespace, gw.Name))
		}
		return RouteChoice{}, fail(ReasonListenerNotFound, fmt.Sprintf("KafkaGateway %s/%s has no listener %q (sectionName of KafkaRoute %s; it has %s)",
			gw.Namespace, gw.Name, name, routeRef, quotedList(listenerNamesOf(gw))))
	}
	return RouteChoice{Parent: i, Gateway: gw, Listener: l}, nil
}

// checkRouteListener refuses listeners a binding cannot use: not kafka-tls, without
// certificates, or asking for client certificates.
func checkRouteListener(gw *kroxyliciousv1alpha1.KafkaGateway, l kroxyliciousv1alpha1.Listener) *Failure {
	gwRef := gw.Namespace + "/" + gw.Name
	switch {
	case l.Protocol != kroxyliciousv1alpha1.ProtocolKafkaTLS:
		return fail(ReasonListenerIncompatible, fmt.Sprintf("listener %q of KafkaGateway %s has protocol %q; kafkalink serves %s only",
			l.Name, gwRef, l.Protocol, kroxyliciousv1alpha1.ProtocolKafkaTLS))
	case l.TLS == nil || len(l.TLS.CertificateRefs) == 0:
		return fail(ReasonListenerIncompatible, fmt.Sprintf("listener %q of KafkaGateway %s has no tls.certificateRefs", l.Name, gwRef))
	case l.TLS.FrontendValidation != nil && len(l.TLS.FrontendValidation.CACertificateRefs) > 0:
		return fail(ReasonListenerIncompatible, fmt.Sprintf(
			"listener %q of KafkaGateway %s requires client certificates (tls.frontendValidation), and a binding through a gateway carries none: the gateway terminates TLS, so a KafkaUser's certificate would never reach the Kafka cluster", l.Name, gwRef))
	}
	return nil
}

// chooseHost picks the hostname of the chosen parentRef (spec.kafka.hostname, else the first
// in-cluster one, else the first), resolved as the gateway serves it, and the port clients use.
func chooseHost(in RouteInput, rc RouteChoice) (RouteChoice, *Failure) {
	r, gw := in.Route, rc.Gateway
	routeRef := r.Namespace + "/" + r.Name
	pr := r.Spec.ParentRefs[rc.Parent]
	ingressDomains, gatewayParents := gatewayExposure(gw, in.Parameters)
	if len(pr.Hostnames) == 0 {
		return RouteChoice{}, fail(ReasonHostnameNotFound, fmt.Sprintf("parentRef %s of KafkaRoute %s lists no hostnames", pr.Name, routeRef))
	}
	var chosen *gatewaymodel.Host
	for _, hn := range pr.Hostnames {
		if in.RequestedHostname != "" && string(hn) != in.RequestedHostname {
			continue
		}
		h, err := gatewaymodel.ResolveHost(string(hn), gw.Namespace, in.ClusterDomain, ingressDomains, len(gatewayParents) > 0)
		if err != nil {
			return RouteChoice{}, fail(ReasonHostnameInvalid, fmt.Sprintf("hostname %q of KafkaRoute %s: %v", hn, routeRef, err))
		}
		if chosen == nil || (h.Exposure == gatewaymodel.ExposeInCluster && chosen.Exposure != gatewaymodel.ExposeInCluster) {
			chosen = &h
		}
		if h.Exposure == gatewaymodel.ExposeInCluster || in.RequestedHostname != "" {
			break
		}
	}
	if chosen == nil {
		written := make([]string, len(pr.Hostnames))
		for i, hn := range pr.Hostnames {
			written[i] = string(hn)
		}
		return RouteChoice{}, fail(ReasonHostnameNotFound, fmt.Sprintf("KafkaRoute %s has no hostname %q for KafkaGateway %s (it has %s)",
			routeRef, in.RequestedHostname, gw.Name, quotedList(written)))
	}
	rc.Host = *chosen
	// The port clients are told, exactly as the gateway translator advertises it.
	rc.Port = gatewaymodel.AdvertisedPort(rc.Host.Exposure, gatewayParents)
	if rc.Port == 0 {
		rc.Port = int32(rc.Listener.Port)
	}
	return rc, nil
}

// gatewayExposure reads what ResolveHost and AdvertisedPort need from the gateway's
// KafkaGatewayParameters: the ingress domains and the Gateway API parents. A missing
// parametersRef or object means neither (the gateway reports it itself).
func gatewayExposure(gw *kroxyliciousv1alpha1.KafkaGateway, params map[string]*kroxyliciousv1alpha1.KafkaGatewayParameters) (ingressDomains []string, parents []kroxyliciousv1alpha1.GatewayParentReference) {
	p := params[gatewaymodel.ParametersName(gw)]
	if p == nil {
		return nil, nil
	}
	return p.Spec.IngressDomains, p.Spec.ParentRefs
}

// CertificateSecrets are the namespace/name keys of the Secrets the listeners of a gateway
// present, deduplicated and sorted.
func CertificateSecrets(gw *kroxyliciousv1alpha1.KafkaGateway) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range gw.Spec.Listeners {
		for _, key := range gatewaymodel.CertificateSecrets(gw, l) {
			if !seen[key] {
				seen[key] = true
				out = append(out, key)
			}
		}
	}
	sort.Strings(out)
	return out
}

// checkAccepted requires the gateway controller's Accepted=True for the route's current
// generation on the chosen parentRef.
func checkAccepted(r *kroxyliciousv1alpha1.KafkaRoute, rc RouteChoice) *Failure {
	pr := r.Spec.ParentRefs[rc.Parent]
	routeRef := r.Namespace + "/" + r.Name
	section := ""
	if pr.SectionName != nil {
		section = string(*pr.SectionName)
	}
	for _, ps := range r.Status.Parents {
		ref := ps.ParentRef
		if ps.ControllerName != gatewaymodel.ControllerName || ref.Name != pr.Name ||
			gatewaymodel.RefNamespace(ref.Namespace, r.Namespace) != r.Namespace {
			continue
		}
		got := ""
		if ref.SectionName != nil {
			got = string(*ref.SectionName)
		}
		if got != section {
			continue
		}
		for _, c := range ps.Conditions {
			if c.Type != gatewaymodel.ConditionAccepted {
				continue
			}
			switch {
			case c.ObservedGeneration != r.Generation:
				return fail(ReasonRouteNotAccepted, fmt.Sprintf("KafkaGateway %s has not yet accepted generation %d of KafkaRoute %s", pr.Name, r.Generation, routeRef))
			case c.Status != "True":
				return fail(ReasonRouteNotAccepted, fmt.Sprintf("KafkaGateway %s does not accept KafkaRoute %s: %s: %s", pr.Name, routeRef, c.Reason, c.Message))
			}
			return nil
		}
	}
	return fail(ReasonRouteNotAccepted, fmt.Sprintf("KafkaGateway %s has not yet accepted KafkaRoute %s (no Accepted condition in its status.parents)", pr.Name, routeRef))
}

// routeTrust gathers the CA certificates clients trust: spec.kafka.caSecret's ca.crt, or the
// ca.crt of the listener's certificate Secrets that cover the bootstrap host (all of them when
// none or only one can tell). Only ca.crt is read: the other *.crt of a cert-manager Secret is the
// server certificate itself, not a CA.
func routeTrust(in RouteInput, rc RouteChoice) (*SecretData, *Failure) {
	if in.CASecretName != "" {
		key := in.Route.Namespace + "/" + in.CASecretName
		s := in.Secrets[key]
		if s == nil {
			return nil, fail(ReasonCACertificateMissing, fmt.Sprintf("Secret %s (spec.kafka.caSecret) does not exist", key))
		}
		if len(s.Data[caCertEntry]) == 0 {
			return nil, fail(ReasonCACertificateMissing, fmt.Sprintf("Secret %s (spec.kafka.caSecret) has no %s", key, caCertEntry))
		}
		return &SecretData{Name: key, Data: map[string][]byte{caCertEntry: s.Data[caCertEntry]}}, nil
	}
	keys := gatewaymodel.CertificateSecrets(rc.Gateway, rc.Listener)
	var present []string
	for _, k := range keys {
		if in.Secrets[k] != nil {
			present = append(present, k)
		}
	}
	where := fmt.Sprintf("listener %q of KafkaGateway %s/%s", rc.Listener.Name, rc.Gateway.Namespace, rc.Gateway.Name)
	if len(present) == 0 {
		// One message whether the Secret is missing or the gateway may not use it (another
		// namespace without a ReferenceGrant): a connection learns nothing about other
		// namespaces' Secrets.
		return nil, fail(ReasonCACertificateMissing, fmt.Sprintf("the certificate Secret of %s (%s) does not exist, or is in another namespace and no ReferenceGrant lets the KafkaGateway use it", where, strings.Join(keys, ", ")))
	}
	if len(present) > 1 {
		// The proxy presents, per host, a certificate whose names cover it: trust the CAs of those.
		var covering []string
		for _, k := range present {
			if covers(in.Secrets[k].Data[corev1.TLSCertKey], rc.Host.Bootstrap) {
				covering = append(covering, k)
			}
		}
		if len(covering) > 0 {
			present = covering
		}
	}
	var bundle bytes.Buffer
	for _, k := range present {
		ca := in.Secrets[k].Data[caCertEntry]
		if len(ca) == 0 {
			return nil, fail(ReasonCACertificateMissing, fmt.Sprintf(
				"Secret %s, the certificate of %s, has no %s (cert-manager writes it for CA and self-signed issuers); name a Secret holding the CA in spec.kafka.caSecret",
				k, where, caCertEntry))
		}
		if _, f := parseCertificates(ca, fmt.Sprintf("entry %s of Secret %s", caCertEntry, k)); f != nil {
			return nil, f
		}
		bundle.Write(ca)
		if !bytes.HasSuffix(ca, []byte("\n")) {
			bundle.WriteByte('\n')
		}
	}
	return &SecretData{Name: strings.Join(present, ", "), Data: map[string][]byte{caCertEntry: bundle.Bytes()}}, nil
}

// covers reports whether the first certificate of a PEM chain is valid for host by name.
func covers(chain []byte, host string) bool {
	block, _ := pem.Decode(chain)
	if block == nil || block.Type != "CERTIFICATE" {
		return false
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false
	}
	return c.VerifyHostname(host) == nil
}

// gatewayListener is the gateway's listener of a name.
func gatewayListener(gw *kroxyliciousv1alpha1.KafkaGateway, name string) (kroxyliciousv1alpha1.Listener, bool) {
	for _, l := range gw.Spec.Listeners {
		if string(l.Name) == name && name != "" {
			return l, true
		}
	}
	return kroxyliciousv1alpha1.Listener{}, false
}

// listenerNamesOf are a gateway's listener names, sorted.
func listenerNamesOf(gw *kroxyliciousv1alpha1.KafkaGateway) []string {
	names := make([]string, 0, len(gw.Spec.Listeners))
	for _, l := range gw.Spec.Listeners {
		names = append(names, string(l.Name))
	}
	sort.Strings(names)
	return names
}

// quotedList quotes names for a message, or says none.
func quotedList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// GatewayMayUseSecret reports whether KafkaGateway gw may use the Secret namespace/name key as a
// listener certificate, by the rule pkg/gateway applies too (gatewaymodel.Granted: same
// namespace, or a ReferenceGrant in the Secret's namespace from KafkaGateways of the gateway's
// namespace to that Secret). grants are the ReferenceGrants of the Secret's namespace. A binding reads the CA only of such Secrets, so a
// route cannot be used to read ca.crt from any Secret in the cluster.
func GatewayMayUseSecret(gw *kroxyliciousv1alpha1.KafkaGateway, key string, grants []*gatewayv1beta1.ReferenceGrant) bool {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	return gatewaymodel.Granted(grants,
		gatewaymodel.From{Group: gatewaymodel.Group, Kind: gatewaymodel.KindGateway, Namespace: gw.Namespace},
		gatewaymodel.To{Group: gatewaymodel.CoreGroup, Kind: gatewaymodel.KindSecret, Namespace: ns, Name: name})
}
