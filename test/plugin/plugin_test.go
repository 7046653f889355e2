package plugin_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kafkalink/kafkalink/test/framework"
)

// strimziObjects are a Kafka with a SCRAM listener and its KafkaUser orders, whose statuses the
// test writes as Strimzi would.
const strimziObjects = `
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kafka.strimzi.io/v1
kind: Kafka
metadata: {name: my-cluster, namespace: team-a}
spec:
  kafka:
    listeners:
      - {name: scram, port: 9094, type: internal, tls: false, authentication: {type: scram-sha-512}}
---
apiVersion: kafka.strimzi.io/v1
kind: KafkaUser
metadata: {name: orders-app, namespace: team-a, labels: {strimzi.io/cluster: my-cluster}}
spec:
  authentication: {type: scram-sha-512}
---
apiVersion: v1
kind: Secret
metadata: {name: orders-app, namespace: team-a, labels: {strimzi.io/cluster: my-cluster, strimzi.io/kind: KafkaUser}}
stringData:
  password: orders-password
  sasl.jaas.config: org.apache.kafka.common.security.scram.ScramLoginModule required username="orders-app" password="orders-password";
`

// connections are a connection whose user exists and one whose user does not.
const connections = `
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: orders, namespace: team-a}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: my-cluster}
  user: {apiVersion: kafka.strimzi.io/v1beta2, kind: KafkaUser, name: orders-app}
  storeFormats: [PEM]
---
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: billing, namespace: team-a}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: my-cluster}
  user: {apiVersion: kafka.strimzi.io/v1beta2, kind: KafkaUser, name: billing}
`

// checkColour runs the plugin on a terminal (util-linux script gives it a pseudo-terminal):
// the failing line is red; with --no-color, or NO_COLOR set, nothing is coloured.
func checkColour(t *testing.T, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Log("util-linux script is missing: the colour on a terminal is not checked")
		return
	}
	onTerminal := func(env string, extra ...string) string {
		line := env + " " + plugin + " --kubeconfig " + cp.Kubeconfig + " " + strings.Join(append(append([]string(nil), args...), extra...), " ")
		out, err := exec.Command("script", "-qec", line, "/dev/null").CombinedOutput()
		if err != nil {
			t.Fatalf("script -c %s: %v\n%s", line, err, out)
		}
		return string(out)
	}
	const red = "\x1b[31mReady=False UserNotFound"
	if out := onTerminal("NO_COLOR="); !strings.Contains(out, red) {
		t.Errorf("on a terminal the failing Ready is not red:\n%q", out)
	}
	for _, out := range []string{onTerminal("NO_COLOR=", "--no-color"), onTerminal("NO_COLOR=1")} {
		if strings.Contains(out, "\x1b[") {
			t.Errorf("--no-color or NO_COLOR still colours:\n%q", out)
		}
	}
}

// kubectlPlugin runs the control plane's kubectl with the plugin on PATH, as kubectl's plugin
// mechanism finds it (kubectl-kafkalink makes "kubectl kafkalink").
func kubectlPlugin(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(cp.BinDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig, "PATH="+filepath.Dir(plugin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// setReady writes a Strimzi object's status: Ready, reconciled, and the extra fields.
func setReady(t *testing.T, resource, ns, name string, extra map[string]any) {
	t.Helper()
	client := dyn.Resource(schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1", Resource: resource}).Namespace(ns)
	obj, err := client.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]any{
		"observedGeneration": obj.GetGeneration(),
		"conditions":         []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}},
	}
	for k, v := range extra {
		status[k] = v
	}
	obj.Object["status"] = status
	if _, err := client.UpdateStatus(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits for the connection's Ready reason.
func waitReason(t *testing.T, ns, name, reason string) {
	t.Helper()
	poll(t, "KafkaConnection "+ns+"/"+name+" Ready reason "+reason, func() (bool, error) {
		c, err := kl.KafkaV1beta2().KafkaConnections(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == "Ready" && cond.Reason == reason && cond.ObservedGeneration == c.Generation {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestConnections: status, why and config of a Ready connection, and of one whose KafkaUser is
// missing, against the operator's real status.
func TestConnections(t *testing.T) {
	apply(t, strimziObjects)
	setReady(t, "kafkas", "team-a", "my-cluster", map[string]any{"listeners": []any{map[string]any{
		"name": "scram", "bootstrapServers": "my-cluster-kafka-bootstrap.team-a.svc:9094",
	}}})
	setReady(t, "kafkausers", "team-a", "orders-app", map[string]any{"username": "orders-app", "secret": "orders-app"})
	apply(t, connections)
	waitReason(t, "team-a", "orders", "Bound")
	waitReason(t, "team-a", "billing", "UserNotFound")

	golden(t, "connection-ready-status", kafkalink(t, "status", "kafkaconnection/orders", "-n", "team-a"))
	viaKubectl := kubectlPlugin(t, "kafkalink", "status", "kafkaconnection/orders", "-n", "team-a")
	golden(t, "connection-ready-status", viaKubectl)
	checkColour(t, "status", "kafkaconnection/billing", "-n", "team-a")
	golden(t, "connection-ready-why", kafkalink(t, "why", "kconn/orders", "-n", "team-a"))
	golden(t, "connection-user-missing-status", kafkalink(t, "status", "kafkaconnection/billing", "-n", "team-a"))
	golden(t, "connection-user-missing-why", kafkalink(t, "why", "kafkaconnection/billing", "-n", "team-a"))
	golden(t, "namespace-status", kafkalink(t, "status", "-n", "team-a"))
	golden(t, "connection-ready-config-kcat", kafkalink(t, "config", "orders", "--client", "kcat", "-n", "team-a"))

	dir := filepath.Join(t.TempDir(), "orders")
	out := kafkalink(t, "config", "orders", "--client", "java", "--dir", dir, "-n", "team-a")
	if !strings.Contains(out, "wrote "+filepath.Join(dir, "client.properties")) {
		t.Fatalf("config --dir said:\n%s", out)
	}
	info, err := os.Stat(filepath.Join(dir, "client.properties"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("client.properties, which holds the password, has mode %v", info.Mode().Perm())
	}
}

// scenario1Support is what seed scenario 1 needs from the cluster besides its own objects,
// minus the backend Service, which is what goes wrong here.
const scenario1Support = `
apiVersion: v1
kind: Namespace
metadata: {name: my-namespace}
---
apiVersion: v1
kind: Namespace
metadata: {name: kafka}
---
apiVersion: v1
kind: Secret
metadata: {name: my-cert, namespace: my-namespace}
stringData: {tls.crt: CERT, tls.key: KEY}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: routes-from-my-namespace, namespace: kafka}
spec:
  from: [{group: kroxylicious.io, kind: KafkaRoute, namespace: my-namespace}]
  to: [{group: "", kind: Service}]
`

// podName matches the generated part of a proxy pod's name.
var podName = regexp.MustCompile(`(simple)-[a-z0-9]+-[a-z0-9]{5}`)

// TestGatewayBackendMissing: seed scenario 1 copied as written, with no Service kafka/my-cluster:
// status shows the route's BackendNotFound under its listener, and why explains it.
func TestGatewayBackendMissing(t *testing.T) {
	apply(t, scenario1Support)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := cp.Kubectl("apply", "-f", filepath.Join(root, "manifests", "examples", "seeds", "scenario-1-in-cluster.yaml")); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// The proxy pods are created by kube-controller-manager and stay Pending (no kubelet):
	// wait for them and for the route's status, then for the output to settle.
	poll(t, "the proxy pods and the route's ResolvedRefs condition", func() (bool, error) {
		pods, err := cp.Client.CoreV1().Pods("my-namespace").List(context.Background(), metav1.ListOptions{LabelSelector: "kafkalink.io/gateway=simple"})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		r, err := kl.KroxyliciousV1alpha1().KafkaRoutes("my-namespace").Get(context.Background(), "my-route", metav1.GetOptions{})
		if err != nil || len(r.Status.Parents) == 0 {
			return false, err
		}
		for _, c := range r.Status.Parents[0].Conditions {
			if c.Type == "ResolvedRefs" && c.Status == metav1.ConditionFalse {
				return true, nil
			}
		}
		return false, nil
	})
	status := func() string {
		return podName.ReplaceAllString(kafkalink(t, "status", "kafkagateway/simple", "-n", "my-namespace"), "$1-<pod>")
	}
	if *update {
		waitGatewayProgrammedReason(t)
	} else {
		want, _ := os.ReadFile(filepath.Join("testdata", "gateway-backend-missing-status.golden"))
		poll(t, "the gateway's status tree to be the golden one", func() (bool, error) { return status() == string(want), nil })
	}
	golden(t, "gateway-backend-missing-status", status())
	golden(t, "gateway-backend-missing-why", podName.ReplaceAllString(kafkalink(t, "why", "kafkagateway/simple", "-n", "my-namespace"), "$1-<pod>"))
	golden(t, "route-backend-missing-why", kafkalink(t, "why", "kafkaroute/my-route", "-n", "my-namespace"))
}

// waitGatewayProgrammedReason waits until the gateway's Programmed condition says the
// Deployment is not available, the state the golden files show (no kubelet runs the pods).
func waitGatewayProgrammedReason(t *testing.T) {
	t.Helper()
	poll(t, "gateway simple Programmed=False", func() (bool, error) {
		g, err := kl.KroxyliciousV1alpha1().KafkaGateways("my-namespace").Get(context.Background(), "simple", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var reasons []string
		for _, c := range g.Status.Conditions {
			reasons = append(reasons, c.Type+"="+string(c.Status)+" "+c.Reason)
		}
		sort.Strings(reasons)
		return strings.Contains(strings.Join(reasons, ","), "Programmed=False"), nil
	})
}

// TestSeedConnectionAsWritten: the seed's KafkaConnection example, applied as written in a
// namespace of its own, names a Kafka and a KafkaUser in my-namespace that do not exist there:
// why says which and what to do.
func TestSeedConnectionAsWritten(t *testing.T) {
	apply(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: cafe}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: my-namespace}\n")
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := cp.Kubectl("apply", "-n", "cafe", "-f", filepath.Join(root, "manifests", "examples", "seeds", "kafkaconnection.yaml")); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	waitReason(t, "cafe", "barista-kafka", "KafkaNotFound")
	golden(t, "seed-connection-status", kafkalink(t, "status", "kafkaconnection/barista-kafka", "-n", "cafe"))
	golden(t, "seed-connection-why", kafkalink(t, "why", "kafkaconnection/barista-kafka", "-n", "cafe"))
}
