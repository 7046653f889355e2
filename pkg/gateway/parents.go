package gateway

import (
	"fmt"

	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

// ReasonParentTerminatesTLS: a Gateway API Gateway the parameters name as a TLSRoute parent
// terminates TLS on the listener the TLSRoutes would attach to. The proxy routes by SNI and
// presents the listener's certificates itself, so it needs the client's TLS untouched
// (tls.mode: Passthrough); behind a terminating listener it would be sent plain TCP.
const ReasonParentTerminatesTLS = "ParentTerminatesTLS"

// gatewayAPIGroup is Gateway API's group, the default group of a parentRef.
const gatewayAPIGroup = "gateway.networking.k8s.io"

// checkParents splits the parameters' parentRefs into those the generated TLSRoutes may name
// and, for the others, why not: a parent Gateway the snapshot holds whose selected TLS listener
// terminates TLS (a listener's tls.mode defaults to Terminate). A parent the snapshot does not
// hold (another kind, a namespace the operator cannot see, not created yet) is kept: its
// TLSRoutes' status says whether it takes them.
func (t *translator) checkParents() (keep []kroxyliciousv1alpha1.GatewayParentReference, refused []string) {
	for _, p := range t.parentRefs {
		gw := t.parentGateway(p)
		if gw == nil {
			keep = append(keep, p)
			continue
		}
		if l := terminatingListener(gw, p); l != nil {
			refused = append(refused, fmt.Sprintf("Gateway %s/%s listener %q (protocol %s, port %d) terminates TLS, but the proxy needs the client's TLS passed through to route by SNI and present its own certificates: set tls.mode: Passthrough on that listener, or name a Passthrough listener in the parameters' parentRefs (sectionName); no TLSRoute names this parent until then",
				gw.Namespace, gw.Name, l.Name, l.Protocol, l.Port))
			continue
		}
		keep = append(keep, p)
	}
	return keep, refused
}

// parentGateway is the Gateway API Gateway a parentRef names, when the snapshot holds it.
func (t *translator) parentGateway(p kroxyliciousv1alpha1.GatewayParentReference) *gatewayv1.Gateway {
	if ptr.Deref(p.Group, gatewayAPIGroup) != gatewayAPIGroup || ptr.Deref(p.Kind, "Gateway") != "Gateway" {
		return nil
	}
	ns := t.ns
	if p.Namespace != nil && *p.Namespace != "" {
		ns = string(*p.Namespace)
	}
	for _, gw := range t.s.ParentGateways {
		if gw != nil && gw.Namespace == ns && gw.Name == string(p.Name) {
			return gw
		}
	}
	return nil
}

// terminatingListener is the first TLS listener a parentRef selects (by sectionName and port, or
// all of them) that terminates TLS; nil when none does. Listeners of other protocols take no
// TLSRoutes, so they do not count.
func terminatingListener(gw *gatewayv1.Gateway, p kroxyliciousv1alpha1.GatewayParentReference) *gatewayv1.Listener {
	for i := range gw.Spec.Listeners {
		l := &gw.Spec.Listeners[i]
		if p.SectionName != nil && *p.SectionName != "" && string(l.Name) != string(*p.SectionName) {
			continue
		}
		if p.Port != nil && int32(*p.Port) != int32(l.Port) {
			continue
		}
		if l.Protocol != gatewayv1.TLSProtocolType {
			continue
		}
		if l.TLS == nil || l.TLS.Mode == nil || *l.TLS.Mode == gatewayv1.TLSModeTerminate {
			return l
		}
	}
	return nil
}
