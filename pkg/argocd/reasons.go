package argocd

import "github.com/kafkalink/kafkalink/pkg/diagnose"

// Health is an Argo CD health status code.
type Health = diagnose.Health

// The health status codes the checks return (Argo CD also knows Suspended, Missing and Unknown;
// Missing and Unknown are Argo CD's own verdicts, and nothing of kafkalink's is ever suspended).
const (
	Healthy     = diagnose.Healthy
	Progressing = diagnose.Progressing
	Degraded    = diagnose.Degraded
)

// Reasons classifies every condition reason kafkalink writes, as pkg/diagnose does (the one
// table of reasons; its tests walk the controllers' Reason constants). For gateway kinds, a
// condition in its good state (Accepted, Programmed, ResolvedRefs, BrokerIDsMatch True) is
// Healthy unless its reason is Degraded: an Accepted=True gateway whose labels the operator does
// not allow, or some of whose listeners are not valid, does not do all it says. A condition in
// its bad state is Progressing when its reason is, else Degraded.
var Reasons = func() map[string]Health {
	out := map[string]Health{}
	for _, r := range diagnose.Reasons() {
		e, _ := diagnose.Explain(r)
		out[r] = e.Health
	}
	return out
}()
