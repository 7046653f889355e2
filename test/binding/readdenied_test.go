package binding_test

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReadForbiddenIsTheConnectionsReason runs the binding controller with its RBAC lacking one
// permission (list and watch on KafkaUsers), as an administrator's trimmed role would: a
// connection that names a user says so in its Ready reason (ReadForbidden, with the verb and the
// resource as the API server words them) as the Strimzi proposal's step 4.1 asks, while a
// connection without a user is bound; once the permission is back the first one binds too.
func TestReadForbiddenIsTheConnectionsReason(t *testing.T) {
	h := newHarness(t, "", bindingOnly)
	const role = "kafkalink-operator-binding"
	withUsers, err := h.kube.RbacV1().ClusterRoles().Get(h.ctx, role, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	trimmed := withUsers.DeepCopy()
	removed := false
	for i, rule := range trimmed.Rules {
		if j := slices.Index(rule.Resources, "kafkausers"); j >= 0 {
			trimmed.Rules[i].Resources = slices.Delete(slices.Clone(rule.Resources), j, j+1)
			removed = true
		}
	}
	if !removed {
		t.Fatalf("ClusterRole %s grants nothing on kafkausers: the test no longer trims what it means to", role)
	}
	if _, err := h.kube.RbacV1().ClusterRoles().Update(h.ctx, trimmed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.startOperator("operator")

	ns := h.namespace("denied")
	h.setKafka(ns, "my-cluster", []listener{plain, scram}, nil)
	h.setClusterCA(ns, "my-cluster", h.clusterCA.CertPEM)
	h.setUser(ns, "alice", "my-cluster", "scram-sha-512", false, scramSecret("alices-password"))
	h.createConnection(connection(ns, "with-user", "my-cluster", "alice", "", ""))
	h.createConnection(connection(ns, "no-user", "my-cluster", "", "", ""))

	conn := h.waitReason(ns, "with-user", "ReadForbidden")
	msg := ""
	for _, c := range conn.Status.Conditions {
		if c.Type == "Ready" {
			msg = c.Message
		}
	}
	for _, want := range []string{"list and watch KafkaUsers", `cannot list resource "kafkausers"`, "manifests/rbac/binding.yaml"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message %q does not contain %q", msg, want)
		}
	}
	h.waitEvent(ns, "with-user", "Warning", "ReadForbidden")
	h.waitReason(ns, "no-user", "Bound")
	h.checkNoSecret(ns, "with-user")

	// The permission comes back: the informer lists again and the connection binds.
	withUsers.ResourceVersion = ""
	current, err := h.kube.RbacV1().ClusterRoles().Get(h.ctx, role, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	current.Rules = withUsers.Rules
	if _, err := h.kube.RbacV1().ClusterRoles().Update(h.ctx, current, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitReason(ns, "with-user", "Bound")
	h.waitSecret(ns, "with-user", "alice's credentials", func(d map[string][]byte) bool { return string(d["password"]) == "alices-password" })
}
