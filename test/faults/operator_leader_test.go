package faults_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/kafkalink/kafkalink/pkg/operator"
	"github.com/kafkalink/kafkalink/test/framework"
)

// Leader election timings of TestLeaderHandover: short, so a handover takes seconds.
const (
	opLease = 4 * time.Second
	opRenew = 3 * time.Second
	opRetry = 500 * time.Millisecond
)

// opLeaderArgs are the flags of an operator replica with leader election.
func opLeaderArgs() []string {
	return []string{"--leader-elect=true", "--leader-election-namespace=" + framework.OperatorNamespace,
		"--leader-election-lease-duration=" + opLease.String(), "--leader-election-renew-deadline=" + opRenew.String(),
		"--leader-election-retry-period=" + opRetry.String()}
}

// opRetryMax is the longest a candidate waits between two tries: client-go jitters the retry
// period by up to leaderelection.JitterFactor of itself.
var opRetryMax = time.Duration(float64(opRetry) * (1 + leaderelection.JitterFactor))

// TestLeaderHandover runs two operator replicas with leader election, each as its own
// ServiceAccount so the API server's audit log tells their writes apart, and takes the leader
// away three ways while a cluster CA renewal fans out to the binding Secrets: SIGKILL (the
// standby takes over once the Lease expires), SIGTERM (the leader releases the Lease and the
// standby takes it at its next try) and SIGSTOP past the Lease, then SIGCONT (the paused leader
// wakes up deposed). Each time the new leader finishes the renewal, the handover time is printed
// beside its bound, and the audit log shows no object written by both and no write of the old
// leader landing after the new leader's first: the write fence (pkg/operator/fence.go) stops a
// replica before another can start.
func TestLeaderHandover(t *testing.T) {
	r := newOpRig(t)
	const ns, n = "handover", 300
	cas := []([]byte){newOpCA(t, "cluster-ca v0"), newOpCA(t, "cluster-ca v1"), newOpCA(t, "cluster-ca v2"), newOpCA(t, "cluster-ca v3")}
	r.populate(ns, n, cas[0])
	v := r.view(ns)

	a := r.startOperator("replica-a", opLeaderArgs()...)
	r.waitLeader(a)
	b := r.startOperator("replica-b", opLeaderArgs()...)
	r.waitReady(b)
	r.waitUntil("all Ready", []*opProc{a, b}, func() (bool, string) {
		k := len(v.readyNames())
		return k == n, fmt.Sprintf("%d of %d Ready", k, n)
	})
	r.waitIdle(a)

	// SIGKILL: the Lease must expire. A candidate sees the last renewal at most one of its tries
	// after it happened, waits the Lease's duration, and takes it at its next try.
	expiry := opLease + 2*opRetryMax
	r.handover(t, v, n, opFault{name: "SIGKILL", old: a, new: b, bound: expiry, do: a.kill}, cas[1], cas[0])

	// SIGTERM: the leader stops its workers, shuts its write fence and releases the Lease; the
	// standby takes it at its next try.
	c := r.startOperator("replica-c", opLeaderArgs()...)
	r.waitReady(c)
	r.handover(t, v, n, opFault{name: "SIGTERM", old: b, new: c, bound: opRetryMax + time.Second, do: func() {
		b.signal(syscall.SIGTERM)
		select {
		case <-b.Done():
		case <-time.After(30 * time.Second):
			t.Fatalf("the leader did not stop within 30 s of SIGTERM:\n%s", opTail(b.Log()))
		}
		if b.Err() != nil {
			t.Errorf("the leader exited with %v after SIGTERM:\n%s", b.Err(), opTail(b.Log()))
		}
	}}, cas[2], cas[1])

	// SIGSTOP past the Lease: the idle leader is paused, the standby takes over, the renewal
	// starts, and the old leader is woken at once: its informers bring it the renewal and its
	// workers try to write, which its fence refuses (its last renewal is long past), until it
	// notices it lost the Lease and exits.
	d := r.startOperator("replica-d", opLeaderArgs()...)
	r.waitReady(d)
	from := r.handover(t, v, n, opFault{name: "SIGSTOP", old: c, new: d, bound: expiry, beforeRenewal: true,
		do: func() { c.signal(syscall.SIGSTOP) }, afterRenewal: func() { c.signal(syscall.SIGCONT) }}, cas[3], cas[2])
	select {
	case <-c.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("the deposed leader still runs 60 s after SIGCONT:\n%s", opTail(c.Log()))
	}
	if c.Err() == nil || !strings.Contains(c.Log(), "lost the leader Lease") {
		t.Errorf("the deposed leader exited with %v, without saying it lost the Lease:\n%s", c.Err(), opTail(c.Log()))
	}
	refused := strings.Count(c.Log(), operator.ErrNotLeading.Error())
	oldWrites, _, _ := r.checkFenced(t, "SIGSTOP, after the old leader exited", c, d, from)
	t.Logf("SIGSTOP: after SIGCONT the deposed leader's fence refused %d writes (its log) and %d reached the API server, before it exited", refused, len(oldWrites))
}

// opFault is one way TestLeaderHandover takes the leader away.
type opFault struct {
	name     string
	old, new *opProc
	// bound is how long the handover may take by the leader election protocol.
	bound time.Duration
	do    func()
	// beforeRenewal runs do before the CA renewal starts, not once it is under way.
	beforeRenewal bool
	// afterRenewal, when set, runs right after the renewal starts.
	afterRenewal func()
}

// handover runs a fault on the leader during a cluster CA renewal to caNew (caOld kept beside
// it): with the renewal a quarter done, or before it when f.beforeRenewal. It waits for the
// standby to take the Lease and finish, prints the figures and checks the audit log. It returns
// when the renewal started.
func (r *opRig) handover(t *testing.T, v *opView, n int, f opFault, caNew, caOld []byte) (from time.Time) {
	t.Helper()
	const ns = "handover"
	from = time.Now()
	changesBefore := v.changeCounts()
	var faultAt, acquired time.Time
	renewedAtFault := 0
	if f.beforeRenewal {
		faultAt = time.Now()
		f.do()
		acquired = r.waitLeader(f.new)
	}
	r.renewCA(ns, caNew, caOld)
	if f.afterRenewal != nil {
		f.afterRenewal()
	}
	if !f.beforeRenewal {
		r.waitUntil(f.name+": renewal under way", []*opProc{f.old, f.new}, func() (bool, string) {
			k := len(v.trusting(caNew))
			return k >= n/4, fmt.Sprintf("%d of %d Secrets renewed", k, n)
		})
		renewedAtFault = len(v.trusting(caNew))
		faultAt = time.Now()
		f.do()
		acquired = r.waitLeader(f.new)
	}
	handover := acquired.Sub(faultAt)
	r.waitUntil(f.name+": renewal finished by the new leader", []*opProc{f.new}, func() (bool, string) {
		k := len(v.trusting(caNew))
		return k == n, fmt.Sprintf("%d of %d Secrets renewed", k, n)
	})
	finished := time.Since(faultAt)
	r.waitIdle(f.new)
	_, bad := r.checkBindings(ns)
	oldWrites, newWrites, both := r.checkFenced(t, f.name, f.old, f.new, from)
	// An object both wrote, one after the other, is one the new leader's cache had not yet seen
	// the old leader's last write to: it applied the same data again, which changed nothing.
	// A second change would be a real double write.
	changesAfter := v.changeCounts()
	for _, name := range both {
		if k := changesAfter[name] - changesBefore[name]; k != 1 {
			t.Errorf("%s: binding Secret %s changed %d times in the renewal, written by both replicas", f.name, name, k)
		}
	}
	over := ""
	if handover > f.bound {
		over = " (over the bound: the machine is loaded)"
	}
	t.Logf("%s: the standby took the Lease %.2f s after the fault, bound %.2f s%s; renewal finished %.1f s after the fault; writes since the renewal: old leader %s; new leader %s",
		f.name, handover.Seconds(), f.bound.Seconds(), over, finished.Seconds(), opByKind(oldWrites), opByKind(newWrites))
	t.Logf("SUMMARY | operator leader %s (leader election, 2 replicas) | CA renewal of %d Secrets, %d done at the fault | %s; no write of the old leader after the new one's first; %d Secrets applied again unchanged by the new leader (its cache behind the old's last writes), none changed twice | Lease taken over in %.2f s (bound %.2f s), renewal done %.1f s after the fault",
		f.name, n, renewedAtFault, bad, len(both), handover.Seconds(), f.bound.Seconds(), finished.Seconds())
	return from
}

// checkFenced checks, from the audit log, that no write of old completed after new's first
// write, counting writes whose request arrived at or after since. The Lease, which both write by
// design, is left out. It returns each one's writes and the names of the Secrets both wrote (one
// after the other).
func (r *opRig) checkFenced(t *testing.T, fault string, old, new *opProc, since time.Time) (oldWrites, newWrites []opWrite, both []string) {
	t.Helper()
	all := r.writes()
	pick := func(user string) []opWrite {
		var out []opWrite
		for _, w := range opWritesBy(all, user) {
			if w.ObjectRef.Resource != "leases" && !w.RequestReceived.Before(&metav1.MicroTime{Time: since}) {
				out = append(out, w)
			}
		}
		return out
	}
	oldWrites, newWrites = pick(old.user), pick(new.user)
	if len(newWrites) == 0 {
		return oldWrites, newWrites, nil
	}
	first := newWrites[0].RequestReceived
	for _, w := range newWrites {
		if w.RequestReceived.Before(&first) {
			first = w.RequestReceived
		}
	}
	written := map[string]bool{}
	for _, w := range newWrites {
		written[w.object()] = true
	}
	for _, w := range oldWrites {
		if !w.Completed.Before(&first) {
			t.Errorf("%s: the old leader's write %s %s completed at %s, after the new leader's first write at %s",
				fault, w.Verb, w.object(), w.Completed.Format(time.RFC3339Nano), first.Format(time.RFC3339Nano))
		}
		if written[w.object()] && w.ObjectRef.Resource == "secrets" {
			both = append(both, w.ObjectRef.Name)
		} else if written[w.object()] {
			t.Errorf("%s: %s was written by both replicas", fault, w.object())
		}
	}
	return oldWrites, newWrites, both
}

// waitLeader waits until p holds the leader Lease and returns when it acquired it (the Lease's
// acquireTime, written by p).
func (r *opRig) waitLeader(p *opProc) time.Time {
	r.t.Helper()
	var acquired time.Time
	r.waitUntil(p.name+" to lead", []*opProc{p}, func() (bool, string) {
		lease, err := r.cp.Client.CoordinationV1().Leases(framework.OperatorNamespace).Get(r.ctx, "kafkalink-operator", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		holder := ""
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		if holder == "" || !opBecameLeader(p.Log(), holder) {
			return false, "the Lease is held by " + holder
		}
		acquired = lease.Spec.AcquireTime.Time
		return true, ""
	})
	return acquired
}

// waitReady waits until p's /readyz answers 200: its informers have synced, so as a standby it
// can take over at once.
func (r *opRig) waitReady(p *opProc) {
	r.t.Helper()
	if err := framework.WaitHTTP200(r.ctx, p.health+"/readyz", opWaitLimit); err != nil {
		r.t.Fatalf("%v\n%s", err, opTail(p.Log()))
	}
}

// opBecameLeader reports whether an operator's log says it became leader as identity (a
// standby's log names the leader too, on another line).
func opBecameLeader(log, identity string) bool {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "Became leader") && strings.Contains(line, identity) {
			return true
		}
	}
	return false
}
