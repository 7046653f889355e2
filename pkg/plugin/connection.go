package plugin

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

// ConditionReady is the condition of KafkaConnections and of Strimzi's Kafka and KafkaUser.
const ConditionReady = "Ready"

// ConnectionWorld is what a KafkaConnection's tree shows, as gathered from the API server.
type ConnectionWorld struct {
	Connection *kafkav1beta2.KafkaConnection
	// Kafka is the Strimzi Kafka of spec.kafka; nil when it does not exist or is a route.
	Kafka *unstructured.Unstructured
	// Route is the KafkaRoute of spec.kafka; nil when it does not exist or is a Kafka.
	Route *kroxyliciousv1alpha1.KafkaRoute
	// User is the KafkaUser of spec.user; nil when there is none or it does not exist.
	User *unstructured.Unstructured
	// Secret is the binding Secret of status.binding; nil when none is named or it does not exist.
	Secret *corev1.Secret
	// Unreadable says, by kind, why an object could not be read (Strimzi not installed, no
	// permission); such objects show as not read rather than as missing.
	Unreadable map[string]string
}

// ConnectionTree is the tree of a KafkaConnection: its Kafka (or KafkaRoute) and listener, its
// KafkaUser, its binding Secret and its member-cluster targets.
func ConnectionTree(w ConnectionWorld) *Node {
	c := w.Connection
	root := conditionNode("KafkaConnection", key(c.Namespace, c.Name), c.Status.Conditions, []string{ConditionReady})
	root.Children = append(root.Children, backendNode(w))
	if u := c.Spec.User; u != nil {
		ns := namespaceOr(u.Namespace, c.Namespace)
		n := objectNode(w, "KafkaUser", key(ns, u.Name), w.User)
		if ns != c.Namespace {
			// The binding controller copies no credentials across namespaces without a grant.
			n.Detail = "needs a ReferenceGrant in " + ns + " from KafkaConnections of " + c.Namespace
		}
		root.Children = append(root.Children, n)
	}
	if o := c.Spec.OAuth; o != nil {
		root.Children = append(root.Children, &Node{Kind: "OAuth client", Name: key(c.Namespace, o.ClientSecretRef.Name), State: StateInfo})
	}
	root.Children = append(root.Children, secretNode(c, w.Secret))
	for _, t := range c.Status.Targets {
		root.Children = append(root.Children, targetNode(t))
	}
	return root
}

// backendNode is the Kafka or KafkaRoute the connection binds, with the chosen listener.
func backendNode(w ConnectionWorld) *Node {
	c := w.Connection
	ref := c.Spec.Kafka
	name := key(namespaceOr(ref.Namespace, c.Namespace), ref.Name)
	var n *Node
	if ref.Kind == kafkav1beta2.KindKafkaRoute {
		if w.Route == nil {
			n = objectNode(w, "KafkaRoute", name, nil)
		} else {
			n = routeNode(w.Route)
		}
	} else {
		n = objectNode(w, "Kafka", name, w.Kafka)
	}
	if c.Status.Listener != "" {
		n.Children = append(n.Children, &Node{Kind: "listener", Name: c.Status.Listener, Detail: "bootstrap " + c.Status.BootstrapServers})
	}
	return n
}

// objectNode is a Strimzi object's line with its Ready condition, or why it is not there.
func objectNode(w ConnectionWorld, kind, name string, u *unstructured.Unstructured) *Node {
	if why, ok := w.Unreadable[kind]; ok {
		return &Node{Kind: kind, Name: name, Status: "Unreadable", State: StatePending, Reason: "Unreadable", Message: why}
	}
	if u == nil {
		return missing(kind, name, fmt.Sprintf("%s %s does not exist", kind, name))
	}
	return conditionNode(kind, name, unstructuredConditions(u), []string{ConditionReady})
}

func secretNode(c *kafkav1beta2.KafkaConnection, s *corev1.Secret) *Node {
	if c.Status.Binding == nil || c.Status.Binding.Name == "" {
		return &Node{Kind: "Secret", Name: "(none)", Reason: "NotWritten", State: StatePending, Message: "no binding written yet"}
	}
	name := key(c.Namespace, c.Status.Binding.Name)
	if s == nil {
		return missing("Secret", name, "the binding Secret "+name+" does not exist")
	}
	return &Node{Kind: "Secret", Name: name, Detail: fmt.Sprintf("%s, %d entries", s.Type, len(s.Data))}
}

func targetNode(t kafkav1beta2.TargetStatus) *Node {
	n := &Node{Kind: "target", Name: t.Name, Detail: fmt.Sprintf("namespace %s", t.Namespace), Condition: "Synced", Message: t.Message}
	switch {
	case t.Synced:
		n.Status, n.State = string(metav1.ConditionTrue), StateOK
	case !t.Reachable:
		n.Status, n.Reason, n.State = string(metav1.ConditionFalse), "TargetsUnavailable", StateFailing
	default:
		n.Status, n.State = string(metav1.ConditionFalse), StateFailing
	}
	return n
}

func namespaceOr(ns, fallback string) string {
	if ns == "" {
		return fallback
	}
	return ns
}

// unstructuredConditions reads status.conditions of a foreign object (Strimzi's), ignoring
// entries of another shape.
func unstructuredConditions(u *unstructured.Unstructured) []metav1.Condition {
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []metav1.Condition
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		out = append(out, metav1.Condition{Type: str("type"), Status: metav1.ConditionStatus(str("status")), Reason: str("reason"), Message: str("message")})
	}
	return out
}
