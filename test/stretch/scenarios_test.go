package stretch_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/test/framework"
)

const (
	perCluster = "cluster1.my-cluster-kafka-bootstrap.apps.svc.clusterset.local:9093,cluster2.my-cluster-kafka-bootstrap.apps.svc.clusterset.local:9093"
	clusterset = "my-cluster-kafka-bootstrap.apps.svc.clusterset.local:9093"
	limit      = 60 * time.Second
)

func (w *world) copiesInBothMembers(t *testing.T) {
	w.t = t
	w.connection("orders", "member-a", "member-b")
	w.eventually("both copies with per-cluster addresses", limit, func() (bool, string) {
		for _, m := range []string{"member-a", "member-b"} {
			if ok, why := w.copyHas(m, "orders", "bootstrap.servers", perCluster); !ok {
				return false, why
			}
		}
		return true, ""
	})
	w.eventually("status names both copies, synced", limit, func() (bool, string) {
		c := w.get("orders")
		if c.Status.Stretch == nil || c.Status.Stretch.Addressing != kafkav1beta2.AddressingPerCluster ||
			!slices.Equal(c.Status.Stretch.Clusters, []string{"cluster1", "cluster2"}) {
			return false, fmt.Sprintf("stretch %+v", c.Status.Stretch)
		}
		for _, m := range []string{"member-a", "member-b"} {
			st := targetStatus(c, m)
			if st == nil || !st.Synced || !st.Reachable || st.LastSyncTime == nil || st.Namespace != ns {
				return false, fmt.Sprintf("targets %+v", c.Status.Targets)
			}
		}
		return slices.Contains(c.Finalizers, "kafkalink.io/member-bindings") && c.Status.TargetsSynced == "2/2",
			fmt.Sprintf("finalizers %v, targetsSynced %q", c.Finalizers, c.Status.TargetsSynced)
	})
	copyA, err := w.members["member-a"].Client.CoreV1().Secrets(ns).Get(w.ctx, "orders", metav1.GetOptions{})
	w.must(err)
	if copyA.Type != "servicebinding.io/kafka" || copyA.Labels["app.kubernetes.io/managed-by"] != "kafkalink" ||
		copyA.Annotations["kafkalink.io/source"] != ns+"/orders" {
		t.Errorf("copy in member-a: type %s, labels %v, annotations %v", copyA.Type, copyA.Labels, copyA.Annotations)
	}
	central, err := w.central.Client.CoreV1().Secrets(ns).Get(w.ctx, "orders", metav1.GetOptions{})
	w.must(err)
	for k, v := range central.Data {
		if string(copyA.Data[k]) != string(v) {
			t.Errorf("copy entry %s differs from the central binding", k)
		}
	}

	// A copy deleted or edited by hand in a member is put back (the member's informer sees it).
	w.must(w.members["member-a"].Client.CoreV1().Secrets(ns).Delete(w.ctx, "orders", metav1.DeleteOptions{}))
	w.eventually("member-a's deleted copy restored", limit, func() (bool, string) {
		return w.copyHas("member-a", "orders", "bootstrap.servers", perCluster)
	})
	copyB, err := w.members["member-b"].Client.CoreV1().Secrets(ns).Get(w.ctx, "orders", metav1.GetOptions{})
	w.must(err)
	copyB.Data["password"] = []byte("tampered")
	_, err = w.members["member-b"].Client.CoreV1().Secrets(ns).Update(w.ctx, copyB, metav1.UpdateOptions{})
	w.must(err)
	w.eventually("member-b's edited copy restored", limit, func() (bool, string) {
		return w.copyHas("member-b", "orders", "password", "first")
	})

	// Exporting the bootstrap Service (MCS) moves every copy to its clusterset name.
	export := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceExport",
		"metadata": map[string]any{"name": "my-cluster-kafka-bootstrap", "namespace": ns},
	}}
	_, err = w.dyn.Resource(schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceexports"}).
		Namespace(ns).Create(w.ctx, export, metav1.CreateOptions{})
	w.must(err)
	w.eventually("both copies with the clusterset name", limit, func() (bool, string) {
		for _, m := range []string{"member-a", "member-b"} {
			if ok, why := w.copyHas(m, "orders", "bootstrap.servers", clusterset); !ok || strings.Contains(why, "cluster1.") {
				return false, why
			}
		}
		c := w.get("orders")
		return c.Status.Stretch != nil && c.Status.Stretch.Addressing == kafkav1beta2.AddressingServiceExport, fmt.Sprintf("stretch %+v", c.Status.Stretch)
	})
}

func (w *world) rotationsReachBothMembers(t *testing.T) {
	w.t = t
	w.setSecret("app-user", map[string][]byte{"password": []byte("second")})
	w.eventually("the new password in both copies", limit, func() (bool, string) {
		return w.bothHave("password", "second")
	})

	w.setSecret("my-cluster-cluster-ca-cert", map[string][]byte{"ca.crt": w.ca[1].CertPEM, "ca-2025.crt": w.ca[0].CertPEM})
	w.eventually("both CAs in both copies", limit, func() (bool, string) {
		for _, m := range []string{"member-a", "member-b"} {
			s, err := w.members[m].Client.CoreV1().Secrets(ns).Get(w.ctx, "orders", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if n := len(bindingtest.PEMCertificates(s.Data["ssl.truststore.crt"])); n != 2 {
				return false, fmt.Sprintf("%s trusts %d certificates", m, n)
			}
		}
		return true, ""
	})
}

func (w *world) bothHave(key, want string) (bool, string) {
	for _, m := range []string{"member-a", "member-b"} {
		if ok, why := w.copyHas(m, "orders", key, want); !ok {
			return false, why
		}
	}
	return true, ""
}

func (w *world) memberDown(t *testing.T) {
	w.t = t
	b := w.members["member-b"]
	b.StopAPIServer()
	w.setSecret("app-user", map[string][]byte{"password": []byte("third")})
	w.eventually("member-a's copy follows while member-b is down", limit, func() (bool, string) {
		return w.copyHas("member-a", "orders", "password", "third")
	})
	w.eventually("status names member-b unreachable", limit, func() (bool, string) {
		c := w.get("orders")
		st := targetStatus(c, "member-b")
		return st != nil && !st.Reachable && st.Message != "" && c.Status.TargetsSynced == "1/2", fmt.Sprintf("member-b %+v, %s", st, c.Status.TargetsSynced)
	})
	// The central reconciliation goes on: a new connection to member-a only is bound and copied.
	w.connection("billing", "member-a")
	w.eventually("a new connection bound and copied while member-b is down", limit, func() (bool, string) {
		c := w.get("billing")
		st := targetStatus(c, "member-a")
		return st != nil && st.Synced && c.Status.Binding != nil, fmt.Sprintf("billing %+v", c.Status)
	})
	if ok, why := w.copyHas("member-a", "billing", "password", "third"); !ok {
		t.Errorf("billing in member-a: %s", why)
	}

	restart := time.Now()
	w.must(b.StartAPIServer(w.ctx))
	t.Logf("member-b's API server restarted and ready in %s", time.Since(restart).Round(time.Millisecond))
	w.eventually("member-b's copy current and reported after its API server was ready (no operator restart)", limit, func() (bool, string) {
		if ok, why := w.copyHas("member-b", "orders", "password", "third"); !ok {
			return false, why
		}
		st := targetStatus(w.get("orders"), "member-b")
		return st != nil && st.Reachable && st.Synced, fmt.Sprintf("member-b %+v", st)
	})
}

// idle: once everything is current, the operator writes nothing, centrally or in a member.
func (w *world) idle(t *testing.T) {
	w.t = t
	count := func() (n int) {
		for _, cp := range []*framework.ControlPlane{w.central, w.members["member-a"], w.members["member-b"]} {
			for _, user := range []string{framework.OperatorUser, framework.ServiceAccountUser("kafkalink-member", "kafkalink-member")} {
				writes, err := cp.Writes(user)
				w.must(err)
				n += len(writes)
			}
		}
		return n
	}
	before := count()
	time.Sleep(5 * time.Second)
	if after := count(); after != before {
		t.Errorf("%d writes in 5 s of idleness", after-before)
	}
}

// secretsKept: the members' tokens appear in no status and no operator log line.
func (w *world) secretsKept(t *testing.T) {
	w.t = t
	statuses, log := w.connections(), w.operator.Log()
	for name := range w.members {
		s, err := w.central.Client.CoreV1().Secrets(ns).Get(w.ctx, name+"-kubeconfig", metav1.GetOptions{})
		w.must(err)
		token := memberToken(t, s.Data["kubeconfig"])
		if strings.Contains(statuses, token) || strings.Contains(log, token) {
			t.Errorf("%s's token is in a status or the operator's log", name)
		}
	}
}

func (w *world) deletion(t *testing.T) {
	w.t = t
	conns := w.kl.KafkaV1beta2().KafkaConnections(ns)
	// A target removed from spec has its copy removed.
	c := w.get("orders")
	c.Spec.Targets = c.Spec.Targets[:1] // member-a only
	_, err := conns.Update(w.ctx, c, metav1.UpdateOptions{})
	w.must(err)
	w.eventually("member-b's copy removed with its target", limit, func() (bool, string) {
		return w.gone("member-b", "orders")
	})
	w.eventually("member-b gone from status", limit, func() (bool, string) {
		c := w.get("orders")
		return targetStatus(c, "member-b") == nil, fmt.Sprintf("targets %+v", c.Status.Targets)
	})

	// A deleted connection removes its copies, then its finalizer.
	w.must(conns.Delete(w.ctx, "orders", metav1.DeleteOptions{}))
	w.eventually("orders gone with its copy", limit, func() (bool, string) {
		if ok, why := w.gone("member-a", "orders"); !ok {
			return false, why
		}
		_, err := conns.Get(w.ctx, "orders", metav1.GetOptions{})
		return err != nil, "orders still exists"
	})

	// A member down during deletion holds only its own copy; abandoning it lets the connection go.
	w.connection("audit", "member-a", "member-b")
	w.eventually("audit copied to both members", limit, func() (bool, string) {
		c := w.get("audit")
		a, b := targetStatus(c, "member-a"), targetStatus(c, "member-b")
		return a != nil && a.Synced && b != nil && b.Synced, fmt.Sprintf("targets %+v", c.Status.Targets)
	})
	w.members["member-b"].StopAPIServer()
	w.must(conns.Delete(w.ctx, "audit", metav1.DeleteOptions{}))
	w.eventually("member-a's copy of audit removed while member-b is down", limit, func() (bool, string) {
		return w.gone("member-a", "audit")
	})
	w.eventually("audit waits for member-b and says so", limit, func() (bool, string) {
		c := w.get("audit")
		st := targetStatus(c, "member-b")
		return c.DeletionTimestamp != nil && st != nil && !st.Reachable, fmt.Sprintf("audit %+v", c.Status.Targets)
	})
	w.must(w.members["member-b"].StartAPIServer(w.ctx))
	w.eventually("audit gone once member-b removed its copy", limit, func() (bool, string) {
		if ok, why := w.gone("member-b", "audit"); !ok {
			return false, why
		}
		_, err := conns.Get(w.ctx, "audit", metav1.GetOptions{})
		return err != nil, "audit still exists"
	})

	w.members["member-b"].StopAPIServer()
	defer func() { w.must(w.members["member-b"].StartAPIServer(w.ctx)) }()
	w.connection("abandoned", "member-a", "member-b")
	w.eventually("abandoned copied to member-a", limit, func() (bool, string) {
		return w.copyHas("member-a", "abandoned", "password", "third")
	})
	w.must(conns.Delete(w.ctx, "abandoned", metav1.DeleteOptions{}))
	w.abandon("abandoned", "member-b")
	w.eventually("an abandoned member's copy does not hold the connection", limit, func() (bool, string) {
		_, err := conns.Get(w.ctx, "abandoned", metav1.GetOptions{})
		return err != nil, "abandoned still exists"
	})
}

// gone reports whether a member no longer has a Secret.
func (w *world) gone(member, name string) (bool, string) {
	_, err := w.members[member].Client.CoreV1().Secrets(ns).Get(w.ctx, name, metav1.GetOptions{})
	if err == nil {
		return false, fmt.Sprintf("%s still has %s", member, name)
	}
	return strings.Contains(err.Error(), "not found"), err.Error()
}

func (w *world) memory(t *testing.T) {
	w.t = t
	hwm, rss := framework.ProcessMemory(t, w.pid)
	t.Logf("operator with two members attached: peak RSS %.1f MiB, RSS now %.1f MiB", float64(hwm)/1024, float64(rss)/1024)
}

// serverNotAllowed: a target whose clusterUrl points at an API server outside
// --allowed-member-servers (here the central cluster's own, with member-a's credentials) gets no
// request from the operator, and its status says why; abandoning it lets the connection go.
func (w *world) serverNotAllowed(t *testing.T) {
	w.t = t
	conns := w.kl.KafkaV1beta2().KafkaConnections(ns)
	c := &kafkav1beta2.KafkaConnection{
		ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: ns},
		Spec: kafkav1beta2.KafkaConnectionSpec{
			Kafka: kafkav1beta2.KafkaReference{APIVersion: "kafka.strimzi.io/v1", Kind: "Kafka", Name: "my-cluster"},
			User:  &kafkav1beta2.UserReference{APIVersion: "kafka.strimzi.io/v1", Kind: "KafkaUser", Name: "app-user"},
			Targets: []kafkav1beta2.BindingTarget{{Name: "central", Cluster: kafkav1beta2.ClusterTarget{
				Secret: "member-a-kubeconfig", ClusterURL: w.central.Config.Host}}},
		},
	}
	_, err := conns.Create(w.ctx, c, metav1.CreateOptions{})
	w.must(err)
	w.eventually("the target refused, naming the flag", limit, func() (bool, string) {
		st := targetStatus(w.get("elsewhere"), "central")
		return st != nil && !st.Reachable && !st.Synced && strings.Contains(st.Message, "--allowed-member-servers"), fmt.Sprintf("%+v", st)
	})
	if _, err := w.central.Client.CoreV1().Secrets(ns).Get(w.ctx, "elsewhere", metav1.GetOptions{}); err != nil {
		t.Fatalf("the central binding itself is written as usual: %v", err)
	}
	w.must(conns.Delete(w.ctx, "elsewhere", metav1.DeleteOptions{}))
	w.abandon("elsewhere", "central")
	w.eventually("the refused target does not hold the connection", limit, func() (bool, string) {
		_, err := conns.Get(w.ctx, "elsewhere", metav1.GetOptions{})
		return err != nil, "elsewhere still exists"
	})
}

// abandon sets kafkalink.io/abandon-targets on a connection, retrying while the operator writes
// its status in between.
func (w *world) abandon(name, targets string) {
	w.t.Helper()
	conns := w.kl.KafkaV1beta2().KafkaConnections(ns)
	w.must(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := w.get(name)
		c.Annotations = map[string]string{"kafkalink.io/abandon-targets": targets}
		_, err := conns.Update(w.ctx, c, metav1.UpdateOptions{})
		return err
	}))
}
