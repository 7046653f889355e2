// Package diagnose explains kafkalink's condition reasons: what each means and what to do. It is
// the one table that kubectl kafkalink why reads; its test walks the reason constants of
// pkg/binding, pkg/bindingcontroller and pkg/gateway, so a reason added without an explanation
// fails the build's tests.
package diagnose

import "sort"

// Health is what a reason says of its object, in Argo CD's health codes (pkg/argocd's checks
// classify by it).
type Health string

const (
	// Healthy: the reason of a condition in its good state (Accepted, Bound): nothing to do.
	Healthy Health = "Healthy"
	// Progressing: a reason that goes away by itself once another controller (Strimzi, the
	// gateway controller, the Deployment) catches up.
	Progressing Health = "Progressing"
	// Degraded: a reason that needs a change to the object or to what it names.
	Degraded Health = "Degraded"
)

// Explanation says what a condition reason means and what to do about it.
type Explanation struct {
	Health Health
	// Meaning says what kafkalink found.
	Meaning string
	// Action says what to change; empty for healthy reasons.
	Action string
}

// Explain returns the explanation of a reason, and whether there is one.
func Explain(reason string) (Explanation, bool) {
	e, ok := explanations[reason]
	return e, ok
}

// Reasons lists every explained reason, sorted.
func Reasons() []string {
	out := make([]string, 0, len(explanations))
	for r := range explanations {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

func healthy(meaning string) Explanation { return Explanation{Health: Healthy, Meaning: meaning} }

// waiting is a Progressing reason: the action is what to check if it lasts.
func waiting(meaning, action string) Explanation {
	return Explanation{Health: Progressing, Meaning: meaning, Action: action}
}

func failing(meaning, action string) Explanation {
	return Explanation{Health: Degraded, Meaning: meaning, Action: action}
}
