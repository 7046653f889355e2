package bindingcontroller

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
)

// ReadDeniedRecheck is how often a connection whose reads the API server refuses (401, 403) is
// synced again: the informers retry on their own, but a cache that recovers sends no event for
// objects it already held.
const ReadDeniedRecheck = 15 * time.Second

// readDenials are the binding controller's own informers' denials (see controller.ReadDenial);
// the Strimzi informers keep theirs (OptionalInformer.ReadDenied).
type readDenials struct {
	sources, bindings *controller.ReadDenial
}

// readDenied is the failure of the first read this connection needs that the API server refuses,
// nil when none is refused. Reads are checked in the order the binding makes them. The caches a
// connection to a KafkaRoute reads besides (routes, gateways, certificate Secrets) are the
// operator's shared informers, whose refusals are not tracked here.
func (r *reconciler) readDenied(conn *kafkav1beta2.KafkaConnection) *binding.Failure {
	type read struct {
		what string
		err  error
	}
	var reads []read
	if conn.Spec.Kafka.Kind == "" || conn.Spec.Kafka.Kind == kafkav1beta2.KindKafka {
		reads = append(reads, read{"Kafkas (kafka.strimzi.io)", r.strimzi.kafkas.ReadDenied()})
	}
	if _, ok := userKey(conn); ok {
		// Through a KafkaRoute too: the user and its Secret are read from the same caches.
		reads = append(reads, read{"KafkaUsers (kafka.strimzi.io)", r.strimzi.users.ReadDenied()})
	}
	if _, ok := userKey(conn); ok || conn.Spec.Kafka.Kind != kafkav1beta2.KindKafkaRoute {
		reads = append(reads, read{"Strimzi's Secrets (labelled strimzi.io/cluster)", r.denials.sources.Err()})
	}
	reads = append(reads, read{"binding Secrets (labelled kafkalink.io/binding)", r.denials.bindings.Err()})
	for _, rd := range reads {
		if rd.err != nil {
			return deniedFailure("list and watch "+rd.what, rd.err)
		}
	}
	return nil
}

// deniedFailure turns a 401 or 403 into the connection's failure, naming what was read; the API
// server's message names the verb, the resource and the operator's identity.
func deniedFailure(what string, err error) *binding.Failure {
	reason := binding.ReasonReadForbidden
	if apierrors.IsUnauthorized(err) {
		reason = binding.ReasonReadUnauthorized
	}
	return &binding.Failure{Reason: reason, Message: fmt.Sprintf(
		"the API server refused kafkalink's request to %s: %v; the operator's credentials need get, list and watch on them (manifests/rbac/binding.yaml)",
		what, err)}
}

// syncedOrDenied lets a controller start while an informer is refused: its connections then
// report the refusal instead of every connection waiting silently.
func syncedOrDenied(synced cache.InformerSynced, denied func() error) cache.InformerSynced {
	return func() bool { return synced() || denied() != nil }
}
