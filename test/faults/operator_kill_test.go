package faults_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// opConnections is how many KafkaConnections TestOperatorKilledMidWork binds: 2,000, or
// $FAULTS_CONNECTIONS.
func opConnections(t *testing.T) int {
	if v := os.Getenv("FAULTS_CONNECTIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			t.Fatalf("FAULTS_CONNECTIONS=%q: want a number of at least 10", v)
		}
		return n
	}
	return 2000
}

// TestOperatorKilledMidWork SIGKILLs the operator twice in the middle of its work: while 2,000
// KafkaConnections are being bound (at about 30% Ready), and while a cluster CA renewal fans out to
// their Secrets (at about 30% renewed). Each time a new process, under another ServiceAccount so
// the audit log tells the two apart, finishes the work; it writes nothing (no Secret, no status)
// for the connections that were already current when the old one died; and no binding Secret is
// half-written (each equals a fresh run of the pure assembly, with the old CA or the new) or
// orphaned, at the kill and after recovery.
func TestOperatorKilledMidWork(t *testing.T) {
	r := newOpRig(t)
	n := opConnections(t)
	const ns = "killed"
	caOld, caNew := newOpCA(t, "cluster-ca v0"), newOpCA(t, "cluster-ca v1")
	r.populate(ns, n, caOld)
	v := r.view(ns)
	noLeaderElection := "--leader-elect=false"

	// Phase 1: binding.
	first := r.startOperator("first", noLeaderElection)
	started := time.Now()
	r.waitUntil("30% Ready", []*opProc{first}, func() (bool, string) {
		k := len(v.readyNames())
		return k >= n*3/10, fmt.Sprintf("%d of %d Ready", k, n)
	})
	first.kill()
	killedAfter := time.Since(started)
	atKill, badAtKill := r.checkBindings(ns)
	current := r.currentConnections(ns)
	t.Logf("binding: SIGKILL %.1f s after start with %d of %d Ready, %d binding Secrets written; %s",
		killedAfter.Seconds(), len(current), n, len(atKill[0]), badAtKill)

	second := r.startOperator("second", noLeaderElection)
	recovery := r.waitUntil("all Ready after the restart", []*opProc{second}, func() (bool, string) {
		k := len(v.readyNames())
		return k == n, fmt.Sprintf("%d of %d Ready", k, n)
	})
	r.waitIdle(second)
	after, bad := r.checkBindings(ns)
	if len(after[0]) != n {
		t.Errorf("after recovery %d of %d binding Secrets are whole", len(after[0]), n)
	}
	extra := r.writesTo(ns, second.user, current)
	t.Logf("binding: the new process's writes: %s; to the %d connections current at the kill: %d",
		opByKind(opWritesBy(r.writes(), second.user)), len(current), len(extra))
	for _, w := range extra {
		t.Errorf("the new process wrote %s (%s), current before the kill", w.object(), w.Verb)
	}
	t.Logf("SUMMARY | operator SIGKILL at %d%% Ready | %d KafkaConnections binding | at the kill %s; after recovery %s; %d writes to the %d already current | all Ready %.1f s after the new process started",
		100*len(current)/n, n, badAtKill, bad, len(extra), len(current), recovery.Seconds())

	// Phase 2: a cluster CA renewal fanning out.
	caName := strimzi.ClusterCASecretName(opKafka)
	oldData := r.secretData(ns, caName)
	r.renewCA(ns, caNew, caOld)
	newData := r.secretData(ns, caName)
	renewing := time.Now()
	r.waitUntil("30% renewed", []*opProc{second}, func() (bool, string) {
		k := len(v.trusting(caNew))
		return k >= n*3/10, fmt.Sprintf("%d of %d Secrets trust the new CA", k, n)
	})
	second.kill()
	killedAfter = time.Since(renewing)
	versions, badAtKill := r.checkBindings(ns, oldData, newData)
	renewed := versions[1]
	t.Logf("CA renewal: SIGKILL %.1f s after the renewal with %d of %d Secrets renewed, %d still on the old CA; %s",
		killedAfter.Seconds(), len(renewed), n, len(versions[0]), badAtKill)

	third := r.startOperator("third", noLeaderElection)
	recovery = r.waitUntil("all renewed after the restart", []*opProc{third}, func() (bool, string) {
		k := len(v.trusting(caNew))
		return k == n, fmt.Sprintf("%d of %d Secrets trust the new CA", k, n)
	})
	r.waitIdle(third)
	after, bad = r.checkBindings(ns)
	if len(after[0]) != n {
		t.Errorf("after recovery %d of %d binding Secrets are whole with the new CA", len(after[0]), n)
	}
	if ready := len(v.readyNames()); ready != n {
		t.Errorf("after recovery %d of %d connections are Ready", ready, n)
	}
	extra = r.writesTo(ns, third.user, renewed)
	t.Logf("CA renewal: the new process's writes: %s; to the %d Secrets renewed before the kill: %d",
		opByKind(opWritesBy(r.writes(), third.user)), len(renewed), len(extra))
	for _, w := range extra {
		t.Errorf("the new process wrote %s (%s), renewed before the kill", w.object(), w.Verb)
	}
	t.Logf("SUMMARY | operator SIGKILL at %d%% of a CA renewal | %d binding Secrets renewing | at the kill %s; after recovery %s; %d writes to the %d already renewed | all renewed %.1f s after the new process started",
		100*len(renewed)/n, n, badAtKill, bad, len(extra), len(renewed), recovery.Seconds())
}

// currentConnections are the connections that are Ready for their generation, read from the
// API server (the informers may lag).
func (r *opRig) currentConnections(ns string) map[string]bool {
	r.t.Helper()
	list, err := r.kl.KafkaV1beta2().KafkaConnections(ns).List(r.ctx, metav1.ListOptions{})
	r.must(err)
	out := map[string]bool{}
	for i := range list.Items {
		if opReady(&list.Items[i]) {
			out[list.Items[i].Name] = true
		}
	}
	return out
}

func (r *opRig) secretData(ns, name string) map[string][]byte {
	r.t.Helper()
	s, err := r.cp.Client.CoreV1().Secrets(ns).Get(r.ctx, name, metav1.GetOptions{})
	r.must(err)
	return s.Data
}

// writesTo are user's writes to the Secret, the connection or its status of each named
// connection in ns.
func (r *opRig) writesTo(ns, user string, names map[string]bool) []opWrite {
	var out []opWrite
	for _, w := range opWritesBy(r.writes(), user) {
		switch w.ObjectRef.Resource {
		case "secrets", "kafkaconnections":
			if w.ObjectRef.Namespace == ns && names[w.ObjectRef.Name] {
				out = append(out, w)
			}
		}
	}
	return out
}
