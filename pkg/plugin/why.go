package plugin

import (
	"fmt"
	"strings"

	"github.com/kafkalink/kafkalink/pkg/diagnose"
)

// Reasons of the plugin's own lines, for states no controller writes.
const (
	reasonNoStatus   = "NoStatus"
	reasonNotFound   = "NotFound"
	reasonNotWritten = "NotWritten"
	reasonUnreadable = "Unreadable"
	// reasonPodNotStarted: a pod without a Ready condition, which no kubelet has reported.
	reasonPodNotStarted = "PodNotStarted"
)

// ownExplanations explain the plugin's own reasons; the controllers' are in pkg/diagnose.
var ownExplanations = map[string]diagnose.Explanation{
	reasonNoStatus: {Meaning: "no controller has written this condition",
		Action: "check that kafkalink-operator runs and watches this namespace (its --watch-namespaces), and its log"},
	reasonNotFound: {Meaning: "the object does not exist",
		Action: "create it, or fix the reference to it"},
	reasonNotWritten: {Meaning: "the connection has not been bound yet, so it names no Secret",
		Action: "fix the connection's failing condition above; the Secret follows"},
	reasonPodNotStarted: {Meaning: "the pod is not scheduled or not started: no kubelet has reported it",
		Action: "kubectl describe pod: unschedulable (resources, node selectors, taints), image pull failures, a ResourceQuota"},
	reasonUnreadable: {Meaning: "kubectl kafkalink could not read the object",
		Action: "check that its API is installed and that you may get it (kubectl auth can-i get)"},
}

// explain is the explanation of a line's reason.
func explain(n *Node) (diagnose.Explanation, bool) {
	reason := n.Reason
	if n.Status == "NotFound" {
		reason = reasonNotFound
	}
	if e, ok := ownExplanations[reason]; ok {
		return e, true
	}
	return diagnose.Explain(reason)
}

// Why explains a tree: every line that is not in its good state, root first, with its
// condition, message, meaning and what to do; or that all is well.
func Why(root *Node) string {
	var bad []*Node
	walk(root, func(n *Node) {
		if (n.State == StateFailing || n.State == StatePending) && !repeatsAChild(n) {
			bad = append(bad, n)
		}
		bad = append(bad, n.Also...)
	})
	var b strings.Builder
	if len(bad) == 0 {
		fmt.Fprintf(&b, "%s %s: %s\n", root.Kind, root.Name, root.summary())
		if e, ok := explain(root); ok {
			fmt.Fprintf(&b, "  meaning: %s\n", e.Meaning)
		}
		b.WriteString("  nothing to do: every condition below it is in its good state\n")
		return b.String()
	}
	for i, n := range bad {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s %s: %s\n", n.Kind, n.Name, strings.TrimSuffix(n.summary(), ": "+oneLine(n.Message)))
		if n.Message != "" {
			fmt.Fprintf(&b, "  message: %s\n", oneLine(n.Message))
		}
		if e, ok := explain(n); ok {
			fmt.Fprintf(&b, "  meaning: %s\n", e.Meaning)
			if e.Action != "" {
				fmt.Fprintf(&b, "  to do:   %s\n", e.Action)
			}
		}
	}
	return b.String()
}

// repeatsAChild reports whether a line only repeats the condition of one of its children (a
// route's line summarising its parents), which why then shows once.
func repeatsAChild(n *Node) bool {
	for _, c := range n.Children {
		if c.Condition == n.Condition && c.Status == n.Status && c.Reason == n.Reason && c.Message == n.Message {
			return true
		}
	}
	return false
}

func walk(n *Node, f func(*Node)) {
	f(n)
	for _, c := range n.Children {
		walk(c, f)
	}
}
