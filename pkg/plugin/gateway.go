package plugin

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/gateway"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// Condition types the trees show, in the order they are preferred when all are good.
var (
	gatewayConditions  = []string{gateway.ConditionProgrammed, gateway.ConditionAccepted, ConditionReady}
	listenerConditions = []string{gateway.ConditionProgrammed, gateway.ConditionAccepted, gateway.ConditionResolvedRefs, gateway.ConditionConflicted}
	parentConditions   = []string{gateway.ConditionAccepted, gateway.ConditionResolvedRefs, gateway.ConditionBrokerIDsMatch, gateway.ConditionBackendTLS}
)

// GatewayWorld is what a KafkaGateway's tree shows, as gathered from the API server.
type GatewayWorld struct {
	Gateway *kroxyliciousv1alpha1.KafkaGateway
	// Routes are the KafkaRoutes of the gateway's namespace; those not naming it are ignored.
	Routes []*kroxyliciousv1alpha1.KafkaRoute
	// Services and Pods are those labelled with the gateway (wellknown.LabelGateway).
	Services []corev1.Service
	Pods     []corev1.Pod
}

// GatewayTree is the tree of a KafkaGateway: its listeners with the routes attached to each
// (their backends and per-host Services), routes naming no listener it has, its other
// Services, its proxy pods and its member clusters.
func GatewayTree(w GatewayWorld) *Node {
	g := w.Gateway
	root := conditionNode("KafkaGateway", key(g.Namespace, g.Name), g.Status.Conditions, gatewayConditions)
	listeners := map[string]bool{}
	for _, l := range g.Spec.Listeners {
		listeners[string(l.Name)] = true
		n := conditionNode("listener", string(l.Name), listenerStatus(g, string(l.Name)), listenerConditions, gateway.ConditionConflicted)
		n.Detail = fmt.Sprintf("port %d", l.Port)
		for _, r := range w.Routes {
			if ref := parentRefTo(r, g.Name, string(l.Name)); ref != nil {
				n.Children = append(n.Children, attachedRouteNode(r, ref, w.Services))
			}
		}
		root.Children = append(root.Children, n)
	}
	for _, r := range w.Routes {
		for i := range r.Spec.ParentRefs {
			ref := &r.Spec.ParentRefs[i]
			if namesGateway(r, ref, g.Name) && ref.SectionName != nil && !listeners[string(*ref.SectionName)] {
				root.Children = append(root.Children, attachedRouteNode(r, ref, w.Services))
			}
		}
	}
	for _, s := range w.Services {
		if s.Labels[wellknown.LabelRoute] == "" {
			root.Children = append(root.Children, serviceNode(s))
		}
	}
	for _, p := range w.Pods {
		root.Children = append(root.Children, podNode(p))
	}
	for _, m := range g.Status.Members {
		root.Children = append(root.Children, memberNode(m))
	}
	return root
}

// RouteTree is the tree of a KafkaRoute alone: one line per parent with its conditions.
func RouteTree(r *kroxyliciousv1alpha1.KafkaRoute) *Node {
	return routeNode(r)
}

// routeNode is a route with a line per parentRef, its worst condition on the route's line.
func routeNode(r *kroxyliciousv1alpha1.KafkaRoute) *Node {
	root := &Node{Kind: "KafkaRoute", Name: key(r.Namespace, r.Name)}
	for i := range r.Spec.ParentRefs {
		ref := &r.Spec.ParentRefs[i]
		n := conditionNode("parent", parentName(r, ref), parentStatus(r, ref), parentConditions)
		n.Children = backendNodes(r, ref)
		root.Children = append(root.Children, n)
		if root.Condition == "" || rank(n.State) > rank(root.State) {
			root.Condition, root.Status, root.Reason, root.Message, root.State = n.Condition, n.Status, n.Reason, n.Message, n.State
		}
	}
	return root
}

// attachedRouteNode is a route under a gateway listener: the parentRef's conditions, its
// backends and the route's per-host Services.
func attachedRouteNode(r *kroxyliciousv1alpha1.KafkaRoute, ref *kroxyliciousv1alpha1.KafkaRouteParentReference, services []corev1.Service) *Node {
	n := conditionNode("KafkaRoute", key(r.Namespace, r.Name), parentStatus(r, ref), parentConditions)
	n.Children = backendNodes(r, ref)
	for _, s := range services {
		if s.Labels[wellknown.LabelRoute] == r.Name {
			n.Children = append(n.Children, serviceNode(s))
		}
	}
	return n
}

func backendNodes(r *kroxyliciousv1alpha1.KafkaRoute, ref *kroxyliciousv1alpha1.KafkaRouteParentReference) []*Node {
	var out []*Node
	for _, rule := range ref.Rules {
		for _, b := range rule.BackendRefs {
			kind := "Service"
			if b.Kind != nil {
				kind = *b.Kind
			}
			ns := r.Namespace
			if b.Namespace != nil {
				ns = string(*b.Namespace)
			}
			out = append(out, &Node{Kind: "backend", Name: fmt.Sprintf("%s %s:%d", kind, key(ns, string(b.Name)), b.Port), Detail: "rule " + string(rule.Name)})
		}
	}
	return out
}

func serviceNode(s corev1.Service) *Node {
	var ports []string
	for _, p := range s.Spec.Ports {
		ports = append(ports, fmt.Sprint(p.Port))
	}
	return &Node{Kind: "Service", Name: key(s.Namespace, s.Name), Detail: fmt.Sprintf("%s port %s", s.Spec.Type, strings.Join(ports, ","))}
}

func podNode(p corev1.Pod) *Node {
	n := &Node{Kind: "pod", Name: key(p.Namespace, p.Name), Detail: string(p.Status.Phase), Condition: ConditionReady, State: StatePending,
		Reason: reasonPodNotStarted, Message: "no kubelet has reported the pod yet"}
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.PodReady {
			continue
		}
		n.Status, n.Reason, n.Message = string(c.Status), c.Reason, c.Message
		n.State = conditionState(&metav1.Condition{Status: metav1.ConditionStatus(c.Status)}, false)
	}
	return n
}

func memberNode(m kroxyliciousv1alpha1.GatewayMemberStatus) *Node {
	n := &Node{Kind: "member", Name: m.Name, Condition: gateway.ConditionProgrammed, Message: m.Message}
	switch {
	case m.Programmed:
		n.Status, n.State = string(metav1.ConditionTrue), StateOK
	case !m.Reachable:
		n.Status, n.Reason, n.State = string(metav1.ConditionFalse), "Unreachable", StateFailing
	default:
		n.Status, n.State = string(metav1.ConditionFalse), StateFailing
	}
	return n
}

func listenerStatus(g *kroxyliciousv1alpha1.KafkaGateway, name string) []metav1.Condition {
	for _, l := range g.Status.Listeners {
		if string(l.Name) == name {
			return l.Conditions
		}
	}
	return nil
}

// namesGateway reports whether a parentRef names the KafkaGateway of the route's namespace.
func namesGateway(r *kroxyliciousv1alpha1.KafkaRoute, ref *kroxyliciousv1alpha1.KafkaRouteParentReference, gatewayName string) bool {
	return string(ref.Name) == gatewayName && (ref.Kind == nil || *ref.Kind == "KafkaGateway")
}

// parentRefTo is the route's parentRef attaching it to the gateway's listener: one naming the
// listener, or naming no listener (which attaches to all).
func parentRefTo(r *kroxyliciousv1alpha1.KafkaRoute, gatewayName, listener string) *kroxyliciousv1alpha1.KafkaRouteParentReference {
	for i := range r.Spec.ParentRefs {
		ref := &r.Spec.ParentRefs[i]
		if namesGateway(r, ref, gatewayName) && (ref.SectionName == nil || string(*ref.SectionName) == listener) {
			return ref
		}
	}
	return nil
}

// parentStatus is the conditions the gateway controller wrote for a parentRef.
func parentStatus(r *kroxyliciousv1alpha1.KafkaRoute, ref *kroxyliciousv1alpha1.KafkaRouteParentReference) []metav1.Condition {
	for _, p := range r.Status.Parents {
		if string(p.ParentRef.Name) == string(ref.Name) && sameSection(p.ParentRef.SectionName, ref.SectionName) {
			return p.Conditions
		}
	}
	return nil
}

func sameSection(a, b *kroxyliciousv1alpha1.SectionName) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func parentName(r *kroxyliciousv1alpha1.KafkaRoute, ref *kroxyliciousv1alpha1.KafkaRouteParentReference) string {
	name := "KafkaGateway " + key(r.Namespace, string(ref.Name))
	if ref.SectionName != nil {
		name += " listener " + string(*ref.SectionName)
	}
	return name
}

// sortRoutes orders routes by name, so that trees are stable.
func sortRoutes(routes []*kroxyliciousv1alpha1.KafkaRoute) {
	sort.Slice(routes, func(i, j int) bool { return routes[i].Name < routes[j].Name })
}
