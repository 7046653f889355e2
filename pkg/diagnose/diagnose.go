// Package diagnose explains kafkalink's condition reasons: what each means and what to do. It is
// the one table that kubectl kafkalink why reads; its test walks the reason constants of
// pkg/binding, pkg/bindingcontroller and pkg/gateway, so a reason added without an explanation
// fails the build's tests.
package diagnose

import "sort"

// Explanation says what a condition reason means and what to do about it.
type Explanation struct {
	// Healthy reasons are those of a condition in its good state (Accepted, Bound): nothing to do.
	Healthy bool
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

func healthy(meaning string) Explanation { return Explanation{Healthy: true, Meaning: meaning} }

func failing(meaning, action string) Explanation {
	return Explanation{Meaning: meaning, Action: action}
}
