// Package plugin is kubectl kafkalink: the status trees of KafkaGateways and KafkaConnections,
// the diagnosis of their failing conditions, and the client configuration of a binding. The trees
// are built by pure functions from objects the commands gather; rendering is pure too.
package plugin

import (
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// State is how a tree line reads: healthy, failing, waiting, or a plain fact.
type State int

// The states of a Node.
const (
	// StateInfo is a line without a condition (a Service, a listener's address).
	StateInfo State = iota
	// StateOK is a condition in its good state.
	StateOK
	// StatePending is a condition that is Unknown or not written yet.
	StatePending
	// StateFailing is a condition in its bad state, or an object that does not exist.
	StateFailing
)

// Node is one line of a status tree and the lines below it.
type Node struct {
	// Kind and Name say what the line is about: "KafkaRoute", "team-a/orders".
	Kind, Name string
	// Detail is a fact to show after the name (a port, an address).
	Detail string
	// Condition is the key condition's type, Status its status ("" when none).
	Condition, Status string
	// Reason and Message are the key condition's.
	Reason, Message string
	// State is how the line reads.
	State State
	// Children are the lines below.
	Children []*Node
	// Also are the object's other conditions that are not in their good state: the line shows
	// the key one, why explains them all (a route can lack both a policy and the right ids).
	Also []*Node
}

// conditionNode is a node whose key condition is the first failing, else the first pending,
// else the first present of types; negative types are bad when True (Conflicted).
func conditionNode(kind, name string, conds []metav1.Condition, types []string, negative ...string) *Node {
	n := &Node{Kind: kind, Name: name, State: StatePending}
	var best *metav1.Condition
	bestState := State(-1)
	for _, typ := range types {
		c := findCondition(conds, typ)
		if c == nil {
			continue
		}
		st := conditionState(c, contains(negative, typ))
		if best == nil || rank(st) > rank(bestState) {
			best, bestState = c, st
		}
	}
	if best == nil {
		n.Condition, n.Reason = types[0], "NoStatus"
		n.Message = "no " + types[0] + " condition yet: the controller has not processed this object"
		return n
	}
	n.Condition, n.Status, n.Reason, n.Message, n.State = best.Type, string(best.Status), best.Reason, best.Message, bestState
	for _, typ := range types {
		c := findCondition(conds, typ)
		if c == nil || c == best || c.Reason == best.Reason {
			continue // a summary condition (Ready) repeats the key one's reason
		}
		if st := conditionState(c, contains(negative, typ)); st == StateFailing || st == StatePending {
			n.Also = append(n.Also, &Node{Kind: kind, Name: name, Condition: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, State: st})
		}
	}
	return n
}

// rank orders states by how much a reader needs to see them.
func rank(s State) int {
	switch s {
	case StateFailing:
		return 3
	case StatePending:
		return 2
	case StateOK:
		return 1
	}
	return 0
}

func conditionState(c *metav1.Condition, negative bool) State {
	switch {
	case c.Status == metav1.ConditionUnknown:
		return StatePending
	case (c.Status == metav1.ConditionTrue) != negative:
		return StateOK
	}
	return StateFailing
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// missing is a node for an object that does not exist.
func missing(kind, name, message string) *Node {
	return &Node{Kind: kind, Name: name, Status: "NotFound", State: StateFailing, Message: message}
}

// ANSI colours of the states.
const (
	colourReset  = "\x1b[0m"
	colourGreen  = "\x1b[32m"
	colourYellow = "\x1b[33m"
	colourRed    = "\x1b[31m"
)

// Render writes the trees, one line per node; colour marks the states with ANSI colours.
func Render(w io.Writer, roots []*Node, colour bool) error {
	var b strings.Builder
	for _, root := range roots {
		renderNode(&b, root, "", "", colour)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func renderNode(b *strings.Builder, n *Node, first, rest string, colour bool) {
	b.WriteString(first)
	b.WriteString(n.Kind + " " + n.Name)
	if n.Detail != "" {
		b.WriteString("  " + n.Detail)
	}
	if s := n.summary(); s != "" {
		b.WriteString("  " + paint(s, n.State, colour))
	}
	b.WriteString("\n")
	for i, c := range n.Children {
		if i == len(n.Children)-1 {
			renderNode(b, c, rest+"└─ ", rest+"   ", colour)
		} else {
			renderNode(b, c, rest+"├─ ", rest+"│  ", colour)
		}
	}
}

// summary is the condition part of a line: Type=Status Reason, and the message when the
// condition is not in its good state.
func (n *Node) summary() string {
	var s string
	switch {
	case n.Status == "NotFound":
		s = "NotFound"
	case n.Condition != "" && n.Status != "":
		s = n.Condition + "=" + n.Status
		if n.Reason != "" {
			s += " " + n.Reason
		}
	case n.Condition != "":
		s = n.Condition + "? " + n.Reason
	case n.Reason != "":
		s = n.Reason
	}
	if n.State != StateOK && n.State != StateInfo && n.Message != "" {
		s += ": " + oneLine(n.Message)
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func paint(s string, st State, colour bool) string {
	if !colour {
		return s
	}
	switch st {
	case StateOK:
		return colourGreen + s + colourReset
	case StatePending:
		return colourYellow + s + colourReset
	case StateFailing:
		return colourRed + s + colourReset
	}
	return s
}

// key is namespace/name.
func key(namespace, name string) string { return fmt.Sprintf("%s/%s", namespace, name) }
