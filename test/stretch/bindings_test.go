package stretch_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/test/framework"
)

// The namespace of everything in this test, in every cluster.
const ns = "apps"

// world is the central cluster (Strimzi's objects, kafkalink) and its members.
type world struct {
	t        *testing.T
	ctx      context.Context
	central  *framework.ControlPlane
	members  map[string]*framework.ControlPlane // member-a, member-b
	dyn      dynamic.Interface
	kl       kafkalinkclient.Interface
	operator *framework.Process
	pid      int
	proxyBin string
	ca       [2]*bindingtest.CA // the cluster CA before and after a renewal
}

// TestStretchBindings runs kafkalink in a central cluster with two member clusters, each its
// own etcd and kube-apiserver: a stretch Kafka's connections are bound with addresses that
// survive a lost cluster and copied into both members, follow rotations there, wait for a member
// that is down without holding up the rest, and are cleaned up through the finalizer.
func TestStretchBindings(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three control planes")
	}
	w := startWorld(t)
	w.stretchKafka()

	t.Run("copies in both members with per-cluster addresses, then the clusterset name", w.copiesInBothMembers)
	t.Run("a password rotation and a CA renewal reach both members", w.rotationsReachBothMembers)
	t.Run("member-b down: the rest goes on, member-b catches up when it is back", w.memberDown)
	t.Run("deletion removes the copies, waiting only for a member that is down", w.deletion)
	t.Run("a KafkaGateway's proxy runs in both members and serves a client through each", w.gatewayInMembers)
	t.Run("an idle operator writes nothing, centrally or in the members", w.idle)
	t.Run("member credentials are in no status and no log line", w.secretsKept)
	t.Run("operator memory with two members attached", w.memory)
	t.Run("a member API server the operator may not reach is refused, in status", w.serverNotAllowed)
}

func startWorld(t *testing.T) *world {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := &world{t: t, ctx: ctx, members: map[string]*framework.ControlPlane{}}
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for _, name := range []string{"central", "member-a", "member-b"} {
		wg.Go(func() {
			opts := framework.Options{WithoutControllerManager: true, StrimziVersion: "none", WithoutGatewayAPI: true}
			if name == "central" {
				opts.StrimziVersion = "1.2.0"
			}
			cp, err := framework.Start(ctx, opts)
			if err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
				return
			}
			t.Cleanup(cp.Stop)
			mu.Lock()
			defer mu.Unlock()
			if name == "central" {
				w.central = cp
			} else {
				w.members[name] = cp
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("three control planes started in %s", time.Since(start).Round(time.Millisecond))
	w.must(w.central.InstallCRDFiles(ctx, serviceExportCRD(t)))
	w.must(w.central.AddStretchFields(ctx))
	var err error
	if w.dyn, err = dynamic.NewForConfig(w.central.Config); err != nil {
		t.Fatal(err)
	}
	if w.kl, err = kafkalinkclient.NewForConfig(w.central.Config); err != nil {
		t.Fatal(err)
	}
	w.createNamespace(w.central)
	for name, member := range w.members {
		w.createNamespace(member)
		w.registerMember(name, member)
	}
	w.startOperator()
	return w
}

func (w *world) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) createNamespace(cp *framework.ControlPlane) {
	_, err := cp.Client.CoreV1().Namespaces().Create(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		w.t.Fatal(err)
	}
}

// registerMember applies manifests/member/rbac.yaml in the member, binds it in the namespace, and
// stores a kubeconfig of its ServiceAccount (a token, no admin credentials) in the central
// cluster, as docs/stretch.md says.
func (w *world) registerMember(name string, member *framework.ControlPlane) {
	root, err := framework.RepoRoot()
	w.must(err)
	_, err = member.Kubectl("apply", "-f", root+"/manifests/member/rbac.yaml")
	w.must(err)
	_, err = member.Kubectl("-n", ns, "create", "rolebinding", "kafkalink-member", "--clusterrole", "kafkalink-member",
		"--serviceaccount", "kafkalink-member:kafkalink-member")
	w.must(err)
	path, _, err := member.ServiceAccountKubeconfig(w.ctx, "kafkalink-member", "kafkalink-member")
	w.must(err)
	kubeconfig, err := os.ReadFile(path)
	w.must(err)
	w.checkMemberRBAC(name, kubeconfig)
	_, err = w.central.Client.CoreV1().Secrets(ns).Create(w.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	}, metav1.CreateOptions{})
	w.must(err)
}

// checkMemberRBAC shows the member kubeconfig allows Secrets in the bound namespace and nothing
// elsewhere.
func (w *world) checkMemberRBAC(name string, kubeconfig []byte) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	w.must(err)
	client, err := kubernetes.NewForConfig(cfg)
	w.must(err)
	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "rbac-probe"}}
	if _, err := client.CoreV1().Secrets(ns).Create(w.ctx, probe, metav1.CreateOptions{}); err != nil {
		w.t.Fatalf("%s: the member role cannot create a Secret in %s: %v", name, ns, err)
	}
	w.must(client.CoreV1().Secrets(ns).Delete(w.ctx, "rbac-probe", metav1.DeleteOptions{}))
	if _, err := client.CoreV1().Secrets("default").Create(w.ctx, probe, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		w.t.Fatalf("%s: creating a Secret outside the bound namespace: %v, want Forbidden", name, err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).List(w.ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		w.t.Fatalf("%s: listing ConfigMaps: %v, want Forbidden", name, err)
	}
}

// memberToken is the bearer token of a member kubeconfig.
func memberToken(t *testing.T, kubeconfig []byte) string {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil || cfg.BearerToken == "" {
		t.Fatalf("member kubeconfig without a token: %v", err)
	}
	return cfg.BearerToken
}

func (w *world) startOperator() {
	kubeconfig, _, err := w.central.InstallOperatorRBAC(w.ctx)
	w.must(err)
	dir := w.t.TempDir()
	binary, err := framework.BuildBinary("./cmd/kafkalink-operator", dir)
	w.must(err)
	w.proxyBin, err = framework.BuildBinary("./cmd/kafkalink-proxy", dir)
	w.must(err)
	w.operator, err = framework.StartProcess(dir, "operator", binary, "--kubeconfig="+kubeconfig,
		"--health-address="+framework.FreeAddress(), "--metrics-address="+framework.FreeAddress(), "--leader-elect=false",
		"--proxy-image="+stretchImage, "--v=2",
		"--allowed-member-servers="+w.members["member-a"].Config.Host+","+w.members["member-b"].Config.Host)
	w.must(err)
	w.t.Cleanup(func() { _ = w.operator.Stop(15 * time.Second) })
	w.pid = framework.FindProcess(w.t, binary)
}

var gvr = func(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1", Resource: resource}
}

// create makes an object from YAML and then sets its status, as Strimzi would.
func (w *world) create(resource, doc string, status map[string]any) {
	w.t.Helper()
	var obj map[string]any
	w.must(yaml.Unmarshal([]byte(doc), &obj))
	u := &unstructured.Unstructured{Object: obj}
	client := w.dyn.Resource(gvr(resource)).Namespace(ns)
	created, err := client.Create(w.ctx, u, metav1.CreateOptions{})
	w.must(err)
	if status != nil {
		status["observedGeneration"] = created.GetGeneration()
		created.Object["status"] = status
		_, err = client.UpdateStatus(w.ctx, created, metav1.UpdateOptions{})
		w.must(err)
	}
}

// stretchKafka creates a stretch Kafka with a TLS+SCRAM internal listener, node pools in
// member-a (Submariner cluster1) and member-b (cluster2), the cluster CA and a SCRAM user.
func (w *world) stretchKafka() {
	w.ca[0] = bindingtest.NewCA(w.t, "cluster-ca v0", time.Now().Add(-time.Hour))
	w.ca[1] = bindingtest.NewCA(w.t, "cluster-ca v1", time.Now().Add(-time.Minute))
	w.create("kafkas", `
apiVersion: kafka.strimzi.io/v1
kind: Kafka
metadata: {name: my-cluster, annotations: {strimzi.io/stretch-mode: enabled, strimzi.io/node-pools: enabled}}
spec:
  kafka:
    listeners:
    - {name: tls, port: 9093, type: internal, tls: true, authentication: {type: scram-sha-512}}
`, map[string]any{"listeners": []any{map[string]any{"name": "tls", "bootstrapServers": "my-cluster-kafka-bootstrap.apps.svc:9093"}},
		"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}})
	for i, member := range []string{"member-a", "member-b"} {
		w.create("kafkanodepools", fmt.Sprintf(`
apiVersion: kafka.strimzi.io/v1
kind: KafkaNodePool
metadata: {name: pool-%[1]d, labels: {strimzi.io/cluster: my-cluster}}
spec:
  replicas: 3
  roles: [broker, controller]
  storage: {type: ephemeral}
  target: {clusterUrl: "https://%[2]s.example", secret: %[2]s-kubeconfig}
  crossClusterTechnology: {technology: submariner, configuration: {submarinerClusterId: cluster%[1]d}}
`, i+1, member), map[string]any{"nodeIds": []any{int64(i * 3), int64(i*3 + 1), int64(i*3 + 2)}})
	}
	w.setSecret("my-cluster-cluster-ca-cert", map[string][]byte{"ca.crt": w.ca[0].CertPEM})
	w.create("kafkausers", `
apiVersion: kafka.strimzi.io/v1
kind: KafkaUser
metadata: {name: app-user, labels: {strimzi.io/cluster: my-cluster}}
spec: {authentication: {type: scram-sha-512}}
`, map[string]any{"username": "app-user", "secret": "app-user",
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}}})
	w.setSecret("app-user", map[string][]byte{"password": []byte("first")})
}

// setSecret creates or replaces a Strimzi-made Secret of the central cluster.
func (w *world) setSecret(name string, data map[string][]byte) {
	w.t.Helper()
	secrets := w.central.Client.CoreV1().Secrets(ns)
	s, err := secrets.Get(w.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = secrets.Create(w.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"strimzi.io/cluster": "my-cluster"}}, Data: data}, metav1.CreateOptions{})
		w.must(err)
		return
	}
	w.must(err)
	s.Data = data
	_, err = secrets.Update(w.ctx, s, metav1.UpdateOptions{})
	w.must(err)
}

func (w *world) connection(name string, targets ...string) {
	w.t.Helper()
	c := &kafkav1beta2.KafkaConnection{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kafkav1beta2.KafkaConnectionSpec{
			Kafka:        kafkav1beta2.KafkaReference{APIVersion: "kafka.strimzi.io/v1", Kind: "Kafka", Name: "my-cluster"},
			User:         &kafkav1beta2.UserReference{APIVersion: "kafka.strimzi.io/v1", Kind: "KafkaUser", Name: "app-user"},
			StoreFormats: []string{"PEM"},
		},
	}
	for _, target := range targets {
		c.Spec.Targets = append(c.Spec.Targets, kafkav1beta2.BindingTarget{Name: target,
			Cluster: kafkav1beta2.ClusterTarget{Secret: target + "-kubeconfig"}})
	}
	_, err := w.kl.KafkaV1beta2().KafkaConnections(ns).Create(w.ctx, c, metav1.CreateOptions{})
	w.must(err)
}

// eventually polls cond every 100 ms until it holds or limit passes, then fails with what it
// last said.
func (w *world) eventually(what string, limit time.Duration, cond func() (bool, string)) time.Duration {
	w.t.Helper()
	start := time.Now()
	last := ""
	for time.Since(start) < limit {
		ok, why := cond()
		if ok {
			took := time.Since(start)
			w.t.Logf("%s: %s", what, took.Round(time.Millisecond))
			return took
		}
		last = why
		select {
		case <-w.operator.Done():
			w.t.Fatalf("operator exited: %v\n%s", w.operator.Err(), tail(w.operator.Log()))
		case <-time.After(100 * time.Millisecond):
		}
	}
	w.t.Fatalf("%s: not after %s: %s\nconnections:\n%s\noperator log:\n%s", what, limit, last, w.connections(), tail(w.operator.Log()))
	return 0
}

// connections prints every connection's status, for failure messages.
func (w *world) connections() string {
	list, err := w.kl.KafkaV1beta2().KafkaConnections(ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, c := range list.Items {
		out, _ := yaml.Marshal(map[string]any{"name": c.Name, "finalizers": c.Finalizers, "status": c.Status})
		b.Write(out)
	}
	return b.String()
}

func tail(s string) string {
	if len(s) > 6000 {
		return s[len(s)-6000:]
	}
	return s
}

// copyHas reports whether a member's copy of a binding holds an entry with this value.
func (w *world) copyHas(member, name, key, want string) (bool, string) {
	s, err := w.members[member].Client.CoreV1().Secrets(ns).Get(w.ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	if got := string(s.Data[key]); !strings.Contains(got, want) {
		return false, fmt.Sprintf("%s %s=%q", member, key, got)
	}
	return true, ""
}

func (w *world) get(name string) *kafkav1beta2.KafkaConnection {
	c, err := w.kl.KafkaV1beta2().KafkaConnections(ns).Get(w.ctx, name, metav1.GetOptions{})
	w.must(err)
	return c
}

func targetStatus(c *kafkav1beta2.KafkaConnection, name string) *kafkav1beta2.TargetStatus {
	for i := range c.Status.Targets {
		if c.Status.Targets[i].Name == name {
			return &c.Status.Targets[i]
		}
	}
	return nil
}

func serviceExportCRD(t *testing.T) string {
	t.Helper()
	file, err := framework.ServiceExportCRDFile()
	if err != nil {
		t.Fatal(err)
	}
	return file
}
