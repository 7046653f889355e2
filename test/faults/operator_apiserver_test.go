package faults_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
)

// opQuietWindow is how long TestAPIServerRestartAndWatchExpiry watches an idle operator for
// writes after the relists.
const opQuietWindow = 15 * time.Second

// TestAPIServerRestartAndWatchExpiry restarts kube-apiserver twice under an operator with 300
// connections bound. First a crash (SIGKILL): the watch streams break and the informers list
// again. Then a graceful stop (SIGTERM, as a rolling upgrade does), which ends the watches
// cleanly, so the informers try to resume them where they were; while it is down, etcd is
// compacted past every resource version they have seen (a write they do not watch went first), so
// the API server that comes back answers each resumed watch with "too old resource version" and
// the informers list again. After each restart a user's password changes (and after the first a
// connection is added) while the informers are still away. The operator must apply the changes,
// write nothing else (each relist hands it all 300 connections again, all current), and write
// nothing in a quiet window afterwards.
func TestAPIServerRestartAndWatchExpiry(t *testing.T) {
	r := newOpRig(t)
	const ns, n = "restart", 300
	r.populate(ns, n, newOpCA(t, "cluster-ca v0"))
	v := r.view(ns)
	// Without leader election: with it, an outage longer than the renew deadline (10 s by
	// default) ends the process, which its Deployment restarts (the case TestOperatorKilledMidWork
	// covers); this case is about the informers of a process that stays up.
	op := r.startOperator("operator", "--leader-elect=false", "-vmodule=reflector=4")
	r.waitUntil("all Ready", []*opProc{op}, func() (bool, string) {
		k := len(v.readyNames())
		return k == n, fmt.Sprintf("%d of %d Ready", k, n)
	})
	r.waitIdle(op)
	before := len(opWritesBy(r.writes(), op.user))

	// Restart 1, a crash: the API server is killed and comes back with the same etcd.
	down := time.Now()
	r.cp.StopAPIServer()
	r.must(r.cp.StartAPIServer(r.ctx))
	outage := time.Since(down)
	changedAt := time.Now()
	r.setPassword(ns, "user-00007", "changed-after-the-crash")
	const lateConn = "app-late"
	_, err := r.kl.KafkaV1beta2().KafkaConnections(ns).Create(r.ctx, &kafkav1beta2.KafkaConnection{
		ObjectMeta: metav1.ObjectMeta{Name: lateConn, Namespace: ns},
		Spec: kafkav1beta2.KafkaConnectionSpec{
			Kafka: kafkav1beta2.KafkaReference{APIVersion: "kafka.strimzi.io/v1beta2", Kind: "Kafka", Name: opKafka},
			User:  &kafkav1beta2.UserReference{APIVersion: "kafka.strimzi.io/v1beta2", Kind: "KafkaUser", Name: "user-00001"},
		},
	}, metav1.CreateOptions{})
	r.must(err)
	r.waitUntil("the changes after the crash applied", []*opProc{op}, func() (bool, string) {
		password := r.bindingPassword(v, "app-00007") == "changed-after-the-crash"
		late, err := v.conns.Get(lateConn)
		ready := err == nil && opReady(late)
		return password && ready, fmt.Sprintf("new password bound: %t, %s Ready: %t", password, lateConn, ready)
	})
	appliedAfterCrash := time.Since(changedAt)
	r.waitIdle(op)

	// Restart 2, graceful, with etcd compacted while the API server is down.
	_, err = r.cp.Client.CoreV1().ServiceAccounts(ns).Create(r.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bump"}}, metav1.CreateOptions{})
	r.must(err)
	expiredBefore := opExpired(op.Log())
	logFrom := len(op.Log())
	down = time.Now()
	r.cp.StopAPIServerWith(syscall.SIGTERM)
	rev, err := r.cp.CompactEtcd(r.ctx)
	r.must(err)
	r.must(r.cp.StartAPIServer(r.ctx))
	outage2 := time.Since(down)
	changedAt = time.Now()
	r.setPassword(ns, "user-00009", "changed-after-the-compaction")
	// Each informer resumes its watch at a compacted revision and gets "too old resource
	// version", or meets another error first (a just-started API server may refuse a request
	// its authorizer cannot judge yet): either way it lists again.
	r.waitUntilFor("the informers of KafkaConnections and Secrets to list again", time.Minute, []*opProc{op}, func() (bool, string) {
		log := op.Log()[logFrom:]
		conns := opRelisted(log, "*v1beta2.KafkaConnection")
		secrets := opRelisted(log, "*v1.Secret") >= 2 // the binding Secrets' informer and Strimzi's
		return conns > 0 && secrets, fmt.Sprintf("listed again: KafkaConnections %d, Secrets %t; the operator's last watch lines:\n%s", conns, secrets, opWatchLines(log))
	})
	r.waitUntil("the change after the compaction applied", []*opProc{op}, func() (bool, string) {
		ok := r.bindingPassword(v, "app-00009") == "changed-after-the-compaction"
		return ok, fmt.Sprintf("new password bound: %t", ok)
	})
	appliedAfterCompaction := time.Since(changedAt)
	r.waitIdle(op)
	expired := opExpired(op.Log()) - expiredBefore
	relisted := opRelisted(op.Log()[logFrom:], "")
	_, bad := r.checkBindings(ns)

	// What the operator wrote since the first restart: the changes only.
	since := opWritesBy(r.writes(), op.user)[before:]
	changed := map[string]bool{"app-00007": true, "app-00009": true, lateConn: true}
	beyond := 0
	for _, w := range since {
		if w.ObjectRef.Resource == "events" && strings.HasPrefix(w.ObjectRef.Name, lateConn+".") {
			continue // events about the new connection carry generated names
		}
		if !changed[w.ObjectRef.Name] {
			t.Errorf("after the restarts the operator wrote %s (%s), which did not change", w.object(), w.Verb)
			beyond++
		}
	}
	// A quiet window: nothing changes, so nothing is written.
	quietFrom := len(opWritesBy(r.writes(), op.user))
	time.Sleep(opQuietWindow)
	idle := opWritesBy(r.writes(), op.user)[quietFrom:]
	if len(idle) != 0 {
		t.Errorf("the idle operator wrote %d times in %s after the relists: %s", len(idle), opQuietWindow, opByKind(idle))
	}
	t.Logf("API server: crash outage %.1f s, graceful outage %.1f s with etcd compacted at revision %d; then the informers listed again %d times, and %d watches resumed at a compacted revision were answered \"too old\" (%d after the crash); operator writes since the first restart: %s; in the %s quiet window after: %d",
		outage.Seconds(), outage2.Seconds(), rev, relisted, expired, expiredBefore, opByKind(since), opQuietWindow, len(idle))
	t.Logf("SUMMARY | kube-apiserver crash, then graceful restart with etcd compacted (informers listed again %d times; %d resumed watches answered \"too old resource version\") | operator with %d connections bound; 3 changes made while its informers were away | %s; %d writes beyond the changes; %d idle writes in %s | changes applied %.1f s after the crash restart, %.1f s after the compaction restart",
		relisted, expired, n, bad, beyond, len(idle), opQuietWindow, appliedAfterCrash.Seconds(), appliedAfterCompaction.Seconds())
}

// setPassword changes a KafkaUser Secret's password, as Strimzi does when it is rotated.
func (r *opRig) setPassword(ns, user, password string) {
	r.t.Helper()
	secrets := r.cp.Client.CoreV1().Secrets(ns)
	s, err := secrets.Get(r.ctx, user, metav1.GetOptions{})
	r.must(err)
	s.Data["password"] = []byte(password)
	s.Data["sasl.jaas.config"] = []byte(`org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + password + `";`)
	_, err = secrets.Update(r.ctx, s, metav1.UpdateOptions{})
	r.must(err)
}

// bindingPassword is the password in a connection's binding Secret, as the test's informer has it.
func (r *opRig) bindingPassword(v *opView, conn string) string {
	s, err := v.secrets.Get(conn)
	if err != nil {
		return ""
	}
	return string(s.Data["password"])
}

// opExpired counts the operator's log lines of a watch ended by an expired resource version:
// "too old resource version" from the watch cache, "The resourceVersion for the provided watch
// is too old." from etcd (client-go's reflector logs them at -v=4, which -vmodule=reflector=4
// turns on).
func opExpired(log string) int {
	return opExpiredOf(log, "")
}

// opExpiredOf counts them for one informer type, such as "*v1.Secret" (all when empty).
func opExpiredOf(log, typ string) int {
	k := 0
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "Watch closed") && strings.Contains(line, "too old") && strings.Contains(line, `type="`+typ) {
			k++
		}
	}
	return k
}

// opWatchLines are the last lines of the log about watches, for a failure message.
func opWatchLines(log string) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "Watch clos") || strings.Contains(line, "watch ended") || strings.Contains(line, "ailed to watch") || strings.Contains(line, "Listing and watching") {
			out = append(out, line)
		}
	}
	return strings.Join(out[max(0, len(out)-30):], "\n")
}

// opRelisted counts the lists an informer type made (all types when empty), from the lines
// client-go's reflector logs at -v=2 and above.
func opRelisted(log, typ string) int {
	k := 0
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"Listing and watching"`) && strings.Contains(line, `type="`+typ) {
			k++
		}
	}
	return k
}
