package gateway

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/proxy/config"
)

// progress is what decides the gateway's Programmed condition beyond its listeners.
type progress struct {
	// problems keep the gateway from being programmed, each with its reason, in the order met.
	problems []*refProblem
	// waiting lists what the gateway waits for (the Deployment, load balancer addresses,
	// TLSRoute parents) when nothing is wrong.
	waiting         []string
	deploymentReady bool
	unassigned      bool // a LoadBalancer Service has no address yet
}

// programmedReasons are the reasons of gateway problems that say more than the others, most
// telling first: when any is present, Programmed carries it.
var programmedReasons = []string{ReasonParentTerminatesTLS, ReasonTLSRouteNotAccepted, ReasonOpenShiftRoutesUnavailable, ReasonTLSRoutesUnavailable}

// gatewayStatus is the gateway's listener status and conditions.
func (t *translator) gatewayStatus(pr progress) kroxyliciousv1alpha1.KafkaGatewayStatus {
	var st kroxyliciousv1alpha1.KafkaGatewayStatus
	for _, l := range t.listeners {
		st.Listeners = append(st.Listeners, t.listenerStatus(l, pr.deploymentReady))
	}
	st.Listeners = limitTo(st.Listeners, maxListenerStatuses)
	st.Conditions = t.gatewayConditions(pr)
	return st
}

// listenerStatus is one listener's status: Accepted, ResolvedRefs, Conflicted and Programmed.
func (t *translator) listenerStatus(l *listenerState, deploymentReady bool) kroxyliciousv1alpha1.ListenerStatus {
	ls := kroxyliciousv1alpha1.ListenerStatus{Name: l.spec.Name, SupportedKinds: supportedKinds(), AttachedRoutes: l.attached}
	if l.accepted != nil {
		ls.Conditions = append(ls.Conditions, Condition(ConditionAccepted, false, l.accepted.reason, l.accepted.message, t.gen))
	} else {
		ls.Conditions = append(ls.Conditions, Condition(ConditionAccepted, true, ReasonAccepted, "listener accepted"+t.tlsNote(l.options, true), t.gen))
	}
	if p := t.noted(l.resolved); p != nil {
		ls.Conditions = append(ls.Conditions, Condition(ConditionResolvedRefs, false, p.reason, p.message, t.gen))
	} else {
		ls.Conditions = append(ls.Conditions, Condition(ConditionResolvedRefs, true, ReasonResolvedRefs, "every certificate reference resolved", t.gen))
	}
	if len(l.conflicts) > 0 {
		ls.Conditions = append(ls.Conditions, Condition(ConditionConflicted, true, ReasonHostnameConflict, strings.Join(limit(l.conflicts, maxListedNames), "; "), t.gen))
	} else {
		ls.Conditions = append(ls.Conditions, Condition(ConditionConflicted, false, ReasonNoConflicts, "no conflicts", t.gen))
	}
	switch {
	case l.accepted != nil:
		ls.Conditions = append(ls.Conditions, Condition(ConditionProgrammed, false, ReasonInvalid, "the listener is not accepted", t.gen))
	case !l.usable:
		ls.Conditions = append(ls.Conditions, Condition(ConditionProgrammed, false, ReasonInvalid, "the listener has no usable certificate", t.gen))
	case !deploymentReady:
		ls.Conditions = append(ls.Conditions, Condition(ConditionProgrammed, false, ReasonPending, "waiting for the proxy Deployment to be available", t.gen))
	default:
		ls.Conditions = append(ls.Conditions, Condition(ConditionProgrammed, true, ReasonProgrammed, "the proxy serves the listener", t.gen))
	}
	return ls
}

// gatewayConditions are the gateway's conditions, computed once: Accepted from its listeners
// and the operator's restrictions, Programmed from problems first, then what it waits for, then
// its listeners, and ResolvedRefs for the backend client certificate when there is one.
func (t *translator) gatewayConditions(pr progress) []metav1.Condition {
	var notAccepted []string
	valid := 0
	for _, l := range t.listeners {
		if l.accepted != nil {
			notAccepted = append(notAccepted, fmt.Sprintf("listener %q: %s", l.spec.Name, l.accepted.message))
		} else {
			valid++
		}
	}
	var conds []metav1.Condition
	switch {
	case len(notAccepted) == 0 && len(t.notAllowed) > 0:
		conds = append(conds, Condition(ConditionAccepted, true, ReasonNotAllowedByOperator, "the gateway is accepted; not applied, as the operator does not allow them: "+strings.Join(t.notAllowed, "; "), t.gen))
	case len(notAccepted) == 0:
		conds = append(conds, Condition(ConditionAccepted, true, ReasonAccepted, "the gateway is accepted", t.gen))
	case valid > 0:
		conds = append(conds, Condition(ConditionAccepted, true, ReasonListenersNotValid, strings.Join(notAccepted, "; "), t.gen))
	default:
		conds = append(conds, Condition(ConditionAccepted, false, ReasonListenersNotValid, strings.Join(notAccepted, "; "), t.gen))
	}
	conds = append(conds, t.programmed(pr, valid))
	conds = append(conds, readyCondition(conds[0], conds[1], t.gen))
	if t.gw.Spec.BackendTLS != nil && t.gw.Spec.BackendTLS.ClientCertificateRef != nil {
		if p := t.noted(t.clientCertProblem); p != nil {
			conds = append(conds, Condition(ConditionResolvedRefs, false, p.reason, "backendTLS.clientCertificateRef: "+p.message, t.gen))
		} else {
			conds = append(conds, Condition(ConditionResolvedRefs, true, ReasonResolvedRefs, "every reference resolved", t.gen))
		}
	}
	return conds
}

// readyCondition is the gateway's Ready condition: True when Accepted and Programmed both are,
// else False with the reason and message of the first of them that is not.
func readyCondition(accepted, programmed metav1.Condition, generation int64) metav1.Condition {
	for _, c := range []metav1.Condition{accepted, programmed} {
		if c.Status != metav1.ConditionTrue {
			return Condition(ConditionReady, false, c.Reason, c.Type+": "+c.Message, generation)
		}
	}
	return Condition(ConditionReady, true, ReasonReady, "the gateway is accepted and programmed", generation)
}

// programmed is the gateway's Programmed condition, given how many listeners are accepted.
func (t *translator) programmed(pr progress, validListeners int) metav1.Condition {
	switch {
	case len(pr.problems) > 0:
		msgs := make([]string, 0, len(pr.problems))
		for _, p := range pr.problems {
			msgs = append(msgs, p.message)
		}
		return Condition(ConditionProgrammed, false, programmedReason(pr.problems), strings.Join(msgs, "; "), t.gen)
	case len(pr.waiting) > 0:
		reason := ReasonPending
		if !pr.deploymentReady {
			reason = ReasonDeploymentNotAvailable
		} else if pr.unassigned {
			reason = ReasonAddressNotAssigned
		}
		return Condition(ConditionProgrammed, false, reason, strings.Join(pr.waiting, "; "), t.gen)
	case validListeners == 0:
		return Condition(ConditionProgrammed, false, ReasonInvalid, "no listener is accepted", t.gen)
	default:
		return Condition(ConditionProgrammed, true, ReasonProgrammed, "the proxy is available", t.gen)
	}
}

// programmedReason is the reason of a Programmed condition with problems: the most telling of
// programmedReasons present, else the first problem's.
func programmedReason(problems []*refProblem) string {
	for _, reason := range programmedReasons {
		for _, p := range problems {
			if p.reason == reason {
				return reason
			}
		}
	}
	return problems[0].reason
}

// supportedKinds are the route kinds every listener takes: KafkaRoute.
func supportedKinds() []kroxyliciousv1alpha1.RouteGroupKind {
	g := gatewaymodel.Group
	return []kroxyliciousv1alpha1.RouteGroupKind{{Group: &g, Kind: gatewaymodel.KindRoute}}
}

// policyStatus writes the ancestor status of every policy for this gateway: an entry for the
// policies that target its backends, nil (remove) for the others.
func (t *translator) policyStatus(res *Result) {
	for key, ps := range t.policies {
		if !ps.used {
			res.PolicyAncestors[key] = nil
			continue
		}
		gen := ps.policy.Generation
		ns := kroxyliciousv1alpha1.Namespace(t.ns)
		entry := &kroxyliciousv1alpha1.PolicyAncestorStatus{
			AncestorRef: kroxyliciousv1alpha1.ParentReference{
				Group: ptr.To(gatewaymodel.Group), Kind: ptr.To(gatewaymodel.KindGateway), Namespace: &ns, Name: kroxyliciousv1alpha1.ObjectName(t.gw.Name),
			},
			ControllerName: ControllerName,
		}
		if ps.accepted != nil {
			entry.Conditions = append(entry.Conditions, Condition(ConditionAccepted, false, ps.accepted.reason, ps.accepted.message, gen))
		} else {
			entry.Conditions = append(entry.Conditions, Condition(ConditionAccepted, true, ReasonAccepted, "the policy applies to backends of this gateway"+t.tlsNote(ps.policy.Spec.Options, false), gen))
		}
		if p := t.noted(ps.resolved); p != nil {
			entry.Conditions = append(entry.Conditions, Condition(ConditionResolvedRefs, false, p.reason, p.message, gen))
		} else {
			entry.Conditions = append(entry.Conditions, Condition(ConditionResolvedRefs, true, ReasonResolvedRefs, "every CA certificate reference resolved", gen))
		}
		res.PolicyAncestors[key] = entry
	}
}

// tlsNote says, for a status message, which TLS protocols and suites are in force for options
// that set any, and what they asked for that cannot be enforced (config.TLSParams.Describe);
// for a listener, also that the proxy runs in FIPS 140-3 mode, which applies to all of them.
func (t *translator) tlsNote(opts map[string]string, listener bool) string {
	var parts []string
	if len(opts) > 0 {
		if p, err := config.ResolveTLSOptions(opts); err == nil {
			parts = append(parts, "TLS "+p.Describe())
		}
	}
	if listener && t.fipsFor != "" {
		parts = append(parts, "the proxy runs in FIPS 140-3 mode for "+t.fipsFor+", which leaves ChaCha20-Poly1305 and the curves FIPS does not approve out of every listener")
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}
