package binding_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/test/framework"
)

// bindClusterRole binds a ClusterRole to a user in one namespace, as a cluster admin grants a team
// the built-in edit or view role.
func (h *harness) bindClusterRole(ns, user, role string) {
	h.t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
	}
	if _, err := h.kube.RbacV1().RoleBindings(ns).Create(h.ctx, rb, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// TestAppTeamWithBuiltInEditRole impersonates a user who holds only Kubernetes' built-in `edit`
// ClusterRole in one namespace: kafkalink-edit, aggregated into it, lets them create
// KafkaConnections there and read the binding Secret the operator writes, and nothing lets them
// read another namespace's Secrets, neither directly nor through kafkalink (a connection naming a
// KafkaUser in a namespace without a ReferenceGrant gets RefNotPermitted and no credentials). A
// `view` user reads KafkaConnections but no Secret.
func TestAppTeamWithBuiltInEditRole(t *testing.T) {
	h := newHarness(t, "", realOperator)
	h.startOperator("operator")
	nsA, nsB := h.namespace("team-a"), h.namespace("team-b")

	// The platform team's objects, made as admin: a Kafka in each namespace, and a SCRAM user
	// in B whose password team A must never see.
	h.setKafka(nsA, "local", []listener{plain}, nil)
	h.setKafka(nsB, "shared", []listener{plain, scram}, nil)
	h.setClusterCA(nsB, "shared", h.clusterCA.CertPEM)
	const secretPassword = "team-b-only-Pa55word"
	h.setUser(nsB, "bob", "shared", "scram-sha-512", false, scramSecret(secretPassword))
	h.bindClusterRole(nsA, "jane", "edit")
	h.bindClusterRole(nsA, "victor", "view")

	jane := h.cp.Impersonating("jane")
	janeKube, err := kubernetes.NewForConfig(jane)
	if err != nil {
		t.Fatal(err)
	}
	janeKL, err := kafkalinkclient.NewForConfig(jane)
	if err != nil {
		t.Fatal(err)
	}
	janeGW, err := gatewayclient.NewForConfig(jane)
	if err != nil {
		t.Fatal(err)
	}

	// kube-controller-manager aggregates kafkalink-edit into edit shortly after start.
	h.poll("jane (edit in team-a) to be allowed to create a KafkaConnection", func() (bool, error) {
		_, err := janeKL.KafkaV1beta2().KafkaConnections(nsA).Create(h.ctx, connection(nsA, "orders", "local", "", "", ""), metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})
	h.waitReason(nsA, "orders", "Bound")
	s, err := janeKube.CoreV1().Secrets(nsA).Get(h.ctx, "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("jane cannot read her binding Secret: %v", err)
	}
	if string(s.Data["bootstrap.servers"]) != "local-kafka-bootstrap.team-a.svc:9092" {
		t.Errorf("binding Secret bootstrap.servers = %q", s.Data["bootstrap.servers"])
	}
	if err := janeKL.KafkaV1beta2().KafkaConnections(nsA).Delete(h.ctx, "orders", metav1.DeleteOptions{}); err != nil {
		t.Errorf("jane cannot delete her KafkaConnection: %v", err)
	}

	// Team B's Secrets: not directly, not by granting herself access, not through kafkalink.
	if _, err := janeKube.CoreV1().Secrets(nsB).Get(h.ctx, "bob", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("jane reads a Secret in team-b: err %v", err)
	}
	if _, err := janeKube.CoreV1().Secrets(nsB).List(h.ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("jane lists Secrets in team-b: err %v", err)
	}
	if _, err := janeKL.KafkaV1beta2().KafkaConnections(nsB).Create(h.ctx, connection(nsB, "x", "shared", "bob", "", ""), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("jane creates a KafkaConnection in team-b: err %v", err)
	}
	grant := &gatewayv1beta1.ReferenceGrant{
		ObjectMeta: metav1.ObjectMeta{Name: "let-me-in", Namespace: nsB},
		Spec: gatewayv1beta1.ReferenceGrantSpec{
			From: []gatewayv1beta1.ReferenceGrantFrom{{Group: "kafka.strimzi.io", Kind: "KafkaConnection", Namespace: gatewayv1beta1.Namespace(nsA)}},
			To:   []gatewayv1beta1.ReferenceGrantTo{{Group: "kafka.strimzi.io", Kind: "KafkaUser"}},
		},
	}
	if _, err := janeGW.GatewayV1beta1().ReferenceGrants(nsB).Create(h.ctx, grant, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("jane creates a ReferenceGrant in team-b: err %v", err)
	}
	steal := connection(nsA, "steal", "shared", "bob", nsB, "scram")
	steal.Spec.Kafka.Namespace = nsB
	if _, err := janeKL.KafkaV1beta2().KafkaConnections(nsA).Create(h.ctx, steal, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := h.waitReason(nsA, "steal", "RefNotPermitted")
	if c.Status.Binding != nil {
		t.Errorf("status.binding = %+v without a ReferenceGrant", c.Status.Binding)
	}
	secrets, err := janeKube.CoreV1().Secrets(nsA).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		for k, v := range s.Data {
			if bytes.Contains(v, []byte(secretPassword)) {
				t.Errorf("team-b's password reached team-a in Secret %s, entry %s", s.Name, k)
			}
		}
	}

	// view: kafkalink kinds yes (kafkalink-view aggregates into view), Secrets no.
	victor := h.cp.Impersonating("victor")
	victorKL, err := kafkalinkclient.NewForConfig(victor)
	if err != nil {
		t.Fatal(err)
	}
	victorKube, err := kubernetes.NewForConfig(victor)
	if err != nil {
		t.Fatal(err)
	}
	h.poll("victor (view in team-a) to be allowed to list KafkaConnections and KafkaGateways", func() (bool, error) {
		if _, err := victorKL.KafkaV1beta2().KafkaConnections(nsA).Get(h.ctx, "steal", metav1.GetOptions{}); err != nil {
			return false, nil
		}
		_, err := victorKL.KroxyliciousV1alpha1().KafkaGateways(nsA).List(h.ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if _, err := victorKube.CoreV1().Secrets(nsA).List(h.ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("victor (view) lists Secrets: err %v", err)
	}
	if err := victorKL.KafkaV1beta2().KafkaConnections(nsA).Delete(h.ctx, "steal", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("victor (view) deletes a KafkaConnection: err %v", err)
	}
}

// TestNamespacedInstall applies the bundle hack/render-namespaced.sh renders for two namespaces,
// as a cluster admin would, and runs the real operator with --watch-namespaces and leader
// election under the ServiceAccount token that bundle binds: a connection in a watched namespace
// becomes Bound, nothing the operator does is forbidden, and its identity cannot write Secrets
// anywhere else.
func TestNamespacedInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("control-plane test")
	}
	ctx := context.Background()
	// No kube-controller-manager: nothing here needs garbage collection or role aggregation.
	cp, err := framework.Start(ctx, framework.Options{Log: t.Logf, WithoutControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const watched = "ns1,ns2"
	for _, ns := range []string{"ns1", "ns2", "ns3"} {
		if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bundle, err := exec.Command("bash", filepath.Join(root, "hack", "render-namespaced.sh"), watched).Output()
	if err != nil {
		t.Fatalf("hack/render-namespaced.sh %s: %v", watched, err)
	}
	dir := t.TempDir()
	bundleFile := filepath.Join(dir, "install-namespaced.yaml")
	if err := os.WriteFile(bundleFile, bundle, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cp.Kubectl("apply", "--server-side", "--force-conflicts", "-f", bundleFile); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	crbs, err := cp.Client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, crb := range crbs.Items {
		for _, s := range crb.Subjects {
			if s.Kind == "ServiceAccount" && s.Namespace == framework.OperatorNamespace {
				t.Errorf("the namespaced bundle binds ClusterRole %s to %s cluster-wide", crb.RoleRef.Name, s.Name)
			}
		}
	}

	kubeconfig, opConfig, err := cp.ServiceAccountKubeconfig(ctx, framework.OperatorNamespace, framework.OperatorServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	binary, err := framework.BuildBinary("./cmd/kafkalink-operator", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ctx: ctx, cp: cp, kube: cp.Client, binary: binary, kubeconfig: kubeconfig, dir: dir, version: "v1"}
	if h.kl, err = kafkalinkclient.NewForConfig(cp.Config); err != nil {
		t.Fatal(err)
	}
	if h.dyn, err = dynamic.NewForConfig(cp.Config); err != nil {
		t.Fatal(err)
	}
	h.clusterCA = bindingtest.NewCA(t, "cluster-ca v0", time.Now().Add(-time.Hour))

	health, metrics := framework.FreeAddress(), framework.FreeAddress()
	h.op, err = framework.StartProcess(dir, "operator", binary,
		"--kubeconfig="+kubeconfig, "--health-address="+health, "--metrics-address="+metrics,
		"--watch-namespaces="+watched, "--leader-elect=true", "--v=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.op.Stop(10 * time.Second) })
	h.metrics = "http://" + metrics + "/metrics"
	// /readyz: every controller's informers in both namespaces have listed and watch.
	if err := framework.WaitHTTP200(ctx, "http://"+health+"/readyz", waitLimit); err != nil {
		t.Fatalf("%v\n%s", err, h.op.Log())
	}

	h.setKafka("ns1", "my-cluster", []listener{plain, scram}, nil)
	h.setClusterCA("ns1", "my-cluster", h.clusterCA.CertPEM)
	h.setUser("ns1", "alice", "my-cluster", "scram-sha-512", false, scramSecret("ns1-password"))
	h.createConnection(connection("ns1", "app", "my-cluster", "alice", "", ""))
	conn := h.waitReason("ns1", "app", "Bound")
	if conn.Status.Binding == nil || conn.Status.Binding.Name != "app" {
		t.Fatalf("status = %+v", conn.Status)
	}
	h.waitSecret("ns1", "app", "alice's credentials", func(d map[string][]byte) bool { return string(d["password"]) == "ns1-password" })
	h.poll("the operator to hold its Lease in kafkalink-system", func() (bool, error) {
		l, err := cp.Client.CoordinationV1().Leases(framework.OperatorNamespace).Get(ctx, "kafkalink-operator", metav1.GetOptions{})
		return err == nil && holder(l) != "", nil
	})

	// The operator's identity: Secrets in a watched namespace, and nowhere else.
	op, err := kubernetes.NewForConfig(opConfig)
	if err != nil {
		t.Fatal(err)
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	probe := func(ns string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}}
	}
	if _, err := op.CoreV1().Secrets("ns2").Create(ctx, probe("ns2"), dryRun); err != nil {
		t.Errorf("the operator cannot create a Secret in watched ns2: %v", err)
	}
	for _, ns := range []string{"ns3", "kube-system", framework.OperatorNamespace} {
		if _, err := op.CoreV1().Secrets(ns).Create(ctx, probe(ns), dryRun); !apierrors.IsForbidden(err) {
			t.Errorf("the operator may create a Secret in %s: err %v", ns, err)
		}
		if _, err := op.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the operator may list Secrets in %s: err %v", ns, err)
		}
	}
	if _, err := op.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the operator may list Secrets cluster-wide: err %v", err)
	}
	if _, err := op.AppsV1().Deployments("ns3").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the operator may list Deployments in ns3: err %v", err)
	}

	// A connection in an unwatched namespace is left alone.
	h.createConnection(connection("ns3", "app", "my-cluster", "", "", ""))
	h.setKafka("ns2", "other", []listener{plain}, nil)
	h.createConnection(connection("ns2", "app", "other", "", "", ""))
	h.waitReason("ns2", "app", "Bound")
	if c, err := h.kl.KafkaV1beta2().KafkaConnections("ns3").Get(ctx, "app", metav1.GetOptions{}); err != nil || len(c.Status.Conditions) > 0 {
		t.Errorf("the connection in unwatched ns3 has status %+v (%v)", c.Status, err)
	}
	if log := h.op.Log(); strings.Contains(strings.ToLower(log), "forbidden") {
		t.Errorf("the operator was refused something under the namespaced RBAC:\n%s", log)
	}
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
