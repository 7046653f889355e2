// Package argocd_test shows kafkalink's objects as Argo CD sees them: the real operator under
// manifests/rbac on a local control plane, the argocd-cm patch merged with kubectl into an
// argocd-cm ConfigMap, and the scripts read back from that ConfigMap run (as Argo CD runs them)
// on the live objects while a user's mistakes are made and fixed.
package argocd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/kafkalink/kafkalink/pkg/argocd"
	"github.com/kafkalink/kafkalink/test/framework"
)

// waitLimit bounds every wait; it is a guard against hangs, not a performance assertion.
const waitLimit = 90 * time.Second

// world is a control plane with the operator running and argocd-cm patched.
type world struct {
	t       *testing.T
	ctx     context.Context
	cp      *framework.ControlPlane
	dyn     dynamic.Interface
	scripts map[string][]byte // by kind, as read back from argocd-cm
	op      *framework.Process
}

func newWorld(t *testing.T) *world {
	t.Helper()
	if testing.Short() {
		t.Skip("control-plane test")
	}
	ctx := context.Background()
	cp, err := framework.Start(ctx, framework.Options{Log: t.Logf, WithoutControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	kubeconfig, _, err := cp.InstallOperatorRBAC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: ctx, cp: cp}
	if w.dyn, err = dynamic.NewForConfig(cp.Config); err != nil {
		t.Fatal(err)
	}
	w.patchArgoCDConfigMap()
	binary, err := framework.BuildBinary("./cmd/kafkalink-operator", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	health := framework.FreeAddress()
	w.op, err = framework.StartProcess(t.TempDir(), "operator", binary, "--kubeconfig="+kubeconfig,
		"--health-address="+health, "--metrics-address="+framework.FreeAddress(), "--leader-elect=false")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.op.Stop(10 * time.Second) })
	if err := framework.WaitHTTP200(ctx, "http://"+health+"/healthz", waitLimit); err != nil {
		t.Fatalf("%v\n%s", err, w.op.Log())
	}
	return w
}

// patchArgoCDConfigMap creates an argocd-cm holding a setting of its own, merges the patch
// into it as docs/install.md says, and reads the scripts back from it.
func (w *world) patchArgoCDConfigMap() {
	w.t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		w.t.Fatal(err)
	}
	w.apply(`
apiVersion: v1
kind: Namespace
metadata: {name: argocd}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd}
data: {url: "https://argocd.example.com"}
`)
	if out, err := w.cp.Kubectl("-n", "argocd", "patch", "configmap", "argocd-cm", "--type", "merge",
		"--patch-file", filepath.Join(root, "manifests/argocd/argocd-cm-patch.yaml")); err != nil {
		w.t.Fatalf("%v: %s", err, out)
	}
	cm, err := w.cp.Client.CoreV1().ConfigMaps("argocd").Get(w.ctx, "argocd-cm", metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	if cm.Data["url"] != "https://argocd.example.com" {
		w.t.Errorf("the patch lost argocd-cm's own settings: %v", cm.Data)
	}
	w.scripts = map[string][]byte{}
	for _, c := range argocd.Checks {
		script, ok := cm.Data[c.ConfigKey()]
		if !ok {
			w.t.Fatalf("argocd-cm has no %s after the patch", c.ConfigKey())
		}
		w.scripts[c.Kind] = []byte(script)
	}
}

// apply applies YAML with kubectl, as a user (or Argo CD) would.
func (w *world) apply(yaml string) {
	w.t.Helper()
	f := filepath.Join(w.t.TempDir(), "objects.yaml")
	if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
		w.t.Fatal(err)
	}
	if out, err := w.cp.Kubectl("apply", "--server-side", "-f", f); err != nil {
		w.t.Fatalf("%v: %s", err, out)
	}
}

// waitHealth waits until the live object's health, by the script read from argocd-cm, has a
// status and a message that contains part.
func (w *world) waitHealth(gvr schema.GroupVersionResource, kind, ns, name, status, part string) {
	w.t.Helper()
	var last argocd.Result
	var lastErr error
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, waitLimit, true, func(ctx context.Context) (bool, error) {
		obj, err := w.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			lastErr = err
			return false, nil
		}
		last, lastErr = argocd.Run(w.scripts[kind], obj.Object)
		return lastErr == nil && last.Status == status && strings.Contains(last.Message, part), nil
	})
	if err != nil {
		w.t.Fatalf("%s %s/%s: want %s with %q, last %+v (%v)\noperator log tail:\n%s", kind, ns, name, status, part, last, lastErr, tail(w.op.Log()))
	}
	w.t.Logf("%s %s/%s: %s: %s", kind, ns, name, last.Status, last.Message)
}

func tail(s string) string {
	if len(s) > 6000 {
		return s[len(s)-6000:]
	}
	return s
}

var (
	gvrConnection = schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1beta2", Resource: "kafkaconnections"}
	gvrKafka      = schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1", Resource: "kafkas"}
	gvrGateway    = schema.GroupVersionResource{Group: "kroxylicious.io", Version: "v1alpha1", Resource: "kafkagateways"}
	gvrRoute      = schema.GroupVersionResource{Group: "kroxylicious.io", Version: "v1alpha1", Resource: "kafkaroutes"}
	gvrParameters = schema.GroupVersionResource{Group: "kroxylicious.io", Version: "v1alpha1", Resource: "kafkagatewayparameters"}
)

// TestArgoCDHealthOfLiveObjects walks a KafkaConnection from a missing Kafka (Degraded) through
// a Kafka Strimzi has not reconciled (Progressing) to Bound (Healthy), and a gateway and route
// from a missing certificate and backend (Degraded) to waiting for the proxy pods (Progressing)
// and accepted (Healthy), reading health as Argo CD would at each step.
func TestArgoCDHealthOfLiveObjects(t *testing.T) {
	w := newWorld(t)
	w.apply(`
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: orders, namespace: apps}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1, kind: Kafka, name: my-cluster}
`)
	w.waitHealth(gvrConnection, "KafkaConnection", "apps", "orders", "Degraded", "KafkaNotFound: Kafka apps/my-cluster does not exist")

	// Strimzi has not reported the listener yet: the connection waits.
	w.apply(`
apiVersion: kafka.strimzi.io/v1
kind: Kafka
metadata: {name: my-cluster, namespace: apps}
spec:
  kafka:
    listeners: [{name: plain, port: 9092, type: internal, tls: false}]
`)
	w.waitHealth(gvrConnection, "KafkaConnection", "apps", "orders", "Progressing", "BootstrapNotReady")

	kafka, err := w.dyn.Resource(gvrKafka).Namespace("apps").Get(w.ctx, "my-cluster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kafka.Object["status"] = map[string]any{
		"observedGeneration": kafka.GetGeneration(),
		"listeners": []any{map[string]any{"name": "plain", "bootstrapServers": "my-cluster-kafka-bootstrap.apps.svc:9092",
			"addresses": []any{map[string]any{"host": "my-cluster-kafka-bootstrap.apps.svc", "port": int64(9092)}}}},
	}
	if _, err := w.dyn.Resource(gvrKafka).Namespace("apps").UpdateStatus(w.ctx, kafka, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitHealth(gvrConnection, "KafkaConnection", "apps", "orders", "Healthy", `binds listener "plain"`)

	// A gateway whose certificate Secret is missing, and a route to a Service that is not there.
	w.apply(`
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGateway
metadata: {name: gw, namespace: apps}
spec:
  listeners:
    - name: tls
      port: 9292
      protocol: kroxylicious.io/kafka-tls
      tls: {certificateRefs: [{kind: Secret, name: gw-tls}]}
---
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaRoute
metadata: {name: orders, namespace: apps}
spec:
  parentRefs:
    - name: gw
      sectionName: tls
      hostnames: [orders-%.apps.svc.cluster.local]
      brokers: [{advertisedBrokerIds: [0]}]
      rules: [{name: all, backendRefs: [{name: backend, port: 9092}]}]
`)
	w.waitHealth(gvrGateway, "KafkaGateway", "apps", "gw", "Degraded", "listener tls: InvalidCertificateRef: Secret apps/gw-tls not found")
	w.waitHealth(gvrRoute, "KafkaRoute", "apps", "orders", "Degraded", "KafkaGateway gw listener tls: BackendNotFound: Service apps/backend not found")

	// Fixed: the gateway waits for its proxy pods (no kubelet here), the route is accepted.
	w.apply(framework.WithTestKeyPair(`
apiVersion: v1
kind: Secret
metadata: {name: gw-tls, namespace: apps}
type: kubernetes.io/tls
stringData: {tls.crt: CERT, tls.key: KEY}
---
apiVersion: v1
kind: Service
metadata: {name: backend, namespace: apps}
spec: {ports: [{port: 9092}]}
`))
	w.waitHealth(gvrGateway, "KafkaGateway", "apps", "gw", "Progressing", "DeploymentNotAvailable")
	w.waitHealth(gvrRoute, "KafkaRoute", "apps", "orders", "Healthy", "Accepted by KafkaGateway gw listener tls")

	// A kind without status is Healthy, saying where its problems show.
	w.apply(`
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGatewayParameters
metadata: {name: params, namespace: apps}
spec: {}
`)
	w.waitHealth(gvrParameters, "KafkaGatewayParameters", "apps", "params", "Healthy", "InvalidParameters")
}
