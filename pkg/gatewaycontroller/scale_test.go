package gatewaycontroller

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

// manyRoutes adds n routes of brokers brokers each to the gateway "gw", route-0000 onwards.
func manyRoutes(f *fixture, from, n, brokers int) {
	ids := make([]int32, brokers)
	for i := range ids {
		ids[i] = int32(i)
	}
	for i := from; i < from+n; i++ {
		f.add(newRoute(fmt.Sprintf("route-%04d", i), "gw", func(r *kroxyliciousv1alpha1.KafkaRoute) {
			r.Spec.ParentRefs[0].Brokers[0].AdvertisedBrokerIds = ids
			r.Spec.ParentRefs[0].Hostnames = []kroxyliciousv1alpha1.PercentHostname{kroxyliciousv1alpha1.PercentHostname(fmt.Sprintf("c%04d-%%.%s.svc.cluster.local", i, testNamespace))}
		}))
	}
}

// countWrites counts writes by "verb resource".
func countWrites(writes []string) map[string]int {
	out := map[string]int{}
	for _, w := range writes {
		verb, rest, _ := strings.Cut(w, " ")
		resource, _, _ := strings.Cut(rest, " ")
		out[verb+" "+resource]++
	}
	return out
}

// The work of a sync follows what changed, not the size of the gateway: a route added to a
// gateway of 200 routes of 10 brokers writes that route's 11 Services and its status, the proxy
// configuration (which the proxy reloads: the Deployment stays) and the gateway's attachedRoutes;
// nothing of the other 200 routes is written again, and a sync with nothing changed writes
// nothing.
func TestSyncWorkFollowsTheChangeNotTheGatewaySize(t *testing.T) {
	const routes, brokers = 200, 10
	f := newFixture(t)
	// Room for a Warning event per route (the fake recorder blocks when full).
	f.recorder = record.NewFakeRecorder(10 * routes)
	f.c.env.Recorder = f.recorder
	f.c.env.Options.MaxGeneratedObjectsPerGateway = (routes + 1) * (brokers + 1)
	f.add(newGateway("gw"), newService("kafka"), newCertSecret(t, "cert"))
	manyRoutes(f, 0, routes, brokers)
	f.sync("gw")
	first := countWrites(f.writes())
	if got, want := first["patch services"], routes*(brokers+1); got != want {
		t.Fatalf("first sync: %d Services applied, want %d (writes %v)", got, want, first)
	}
	if got := first["update kafkaroutes/status"]; got != routes {
		t.Fatalf("first sync: %d route status written, want %d", got, routes)
	}
	f.settle()

	f.sync("gw")
	if w := f.writes(); len(w) > 0 {
		t.Fatalf("an unchanged gateway of %d routes wrote %d times: %v", routes, len(w), countWrites(w))
	}

	manyRoutes(f, routes, 1, brokers)
	f.sync("gw")
	want := map[string]int{
		"patch services":              brokers + 1,
		"patch configmaps":            1,
		"update kafkagateways/status": 1,
		"update kafkaroutes/status":   1,
	}
	got := countWrites(f.writes())
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("one route added to %d: writes %v, want %v", routes, got, want)
	}
}
