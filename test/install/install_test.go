package install_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kafkalink/kafkalink/pkg/bindingcontroller"
	"github.com/kafkalink/kafkalink/pkg/gatewaycontroller"
	"github.com/kafkalink/kafkalink/pkg/operator"
	"github.com/kafkalink/kafkalink/pkg/version"
	filterall "github.com/kafkalink/kafkalink/proxy/filter/all"
	"github.com/kafkalink/kafkalink/test/framework"
)

// helmTemplate renders charts/kafkalink with Helm built from hack/tools/go.mod.
func helmTemplate(t *testing.T, release, namespace string, set ...string) []byte {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"tool", "helm", "template", release, filepath.Join(root, "charts", "kafkalink"), "--namespace", namespace}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join(root, "hack", "tools")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	return out
}

// decode splits a multi-document YAML stream into objects.
func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var o map[string]any
		if err := d.Decode(&o); err != nil {
			if err.Error() == "EOF" {
				return objs
			}
			t.Fatal(err)
		}
		if len(o) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: o})
	}
}

// kubectlApply server-side applies data (a file) and fails the test on refusal.
func kubectlApply(t *testing.T, data []byte, extra ...string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := cp.Kubectl(append([]string{"apply", "--server-side", "--force-conflicts", "--field-manager=install-test", "-f", file}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// checkStored reads every applied object back through the dynamic client.
func checkStored(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	mapper := map[string]string{ // kind -> resource, for what the chart renders
		"ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
		"Role": "roles", "RoleBinding": "rolebindings", "Deployment": "deployments", "PodDisruptionBudget": "poddisruptionbudgets",
		"Namespace": "namespaces", "FlowSchema": "flowschemas", "PriorityLevelConfiguration": "prioritylevelconfigurations",
	}
	for _, o := range objs {
		res, ok := mapper[o.GetKind()]
		if !ok {
			t.Errorf("unexpected kind %s in the render", o.GetKind())
			continue
		}
		gv, _ := schema.ParseGroupVersion(o.GetAPIVersion())
		gvr := gv.WithResource(res)
		var err error
		if o.GetNamespace() == "" {
			_, err = dyn.Resource(gvr).Get(context.Background(), o.GetName(), metav1.GetOptions{})
		} else {
			_, err = dyn.Resource(gvr).Namespace(o.GetNamespace()).Get(context.Background(), o.GetName(), metav1.GetOptions{})
		}
		if err != nil {
			t.Errorf("%s %s/%s not stored: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

func kinds(objs []*unstructured.Unstructured) map[string]int {
	m := map[string]int{}
	for _, o := range objs {
		m[o.GetKind()]++
	}
	return m
}

// runOperator runs the operator in this process as the chart's ServiceAccount until the test
// ends, and waits until it is ready (every informer synced: its list and watch rules suffice).
func runOperator(t *testing.T, namespace, serviceAccount string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg, err := cp.ServiceAccountConfig(ctx, namespace, serviceAccount)
	if err != nil {
		t.Fatal(err)
	}
	var opts operator.Options
	opts.ProxyFilterTypes = filterall.Types() // as kafkalink-operator does
	opts.CheckFilter = filterall.Check
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	opts.AddFlags(fs)
	health := framework.FreeAddress()
	if err := fs.Parse(append([]string{"--health-address=" + health, "--metrics-address=", "--leader-election-namespace=" + namespace,
		"--leader-election-id=" + serviceAccount}, args...)); err != nil {
		t.Fatal(err)
	}
	clients, err := operator.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- operator.Run(ctx, opts, clients, bindingcontroller.New, gatewaycontroller.New) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("operator: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("operator did not stop within 20s")
		}
	})
	if err := framework.WaitHTTP200(ctx, "http://"+health+"/readyz", 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// waitConnectionReason creates a KafkaConnection naming a Kafka that does not exist and waits
// until the operator has written its status (a patch the chart's RBAC must allow).
func waitConnectionReason(t *testing.T, namespace, want string) {
	t.Helper()
	ctx := context.Background()
	kubectlApply(t, []byte(fmt.Sprintf(`apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: app, namespace: %s}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1beta2, kind: Kafka, name: missing}
`, namespace)))
	gvr := schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1beta2", Resource: "kafkaconnections"}
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	var last any
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		o, err := dyn.Resource(gvr).Namespace(namespace).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		last = conds
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["reason"] == want {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("KafkaConnection %s/app never got reason %s (conditions %v): %v", namespace, want, last, err)
	}
}

// checkPriorityLevel makes a request as the ServiceAccount and checks that the API server's
// Priority and Fairness put it in the chart's priority level: the server names the level it
// used in the X-Kubernetes-PF-PriorityLevel-UID response header.
func checkPriorityLevel(t *testing.T, namespace, serviceAccount, level string) {
	t.Helper()
	ctx := context.Background()
	plc, err := cp.Client.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, level, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := cp.ServiceAccountConfig(ctx, namespace, serviceAccount)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil {
				got = resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")
			}
			return resp, err
		})
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if got != string(plc.UID) {
		t.Errorf("a request of ServiceAccount %s/%s ran in priority level UID %q, want %s's %s", namespace, serviceAccount, got, level, plc.UID)
	}
}

// roundTripFunc is an http.RoundTripper from a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// userRoles counts the ClusterRoles the chart offers others whatever the install mode:
// kafkalink-servicebinding, kafkalink-edit and kafkalink-view. They grant the operator nothing.
const userRoles = 3

// TestChartDefaultRender: the default render (release kafkalink, as the docs install it) is accepted,
// has the install bundle's names and the release's images, and its RBAC runs the operator.
func TestChartDefaultRender(t *testing.T) {
	const ns = "kafkalink-system"
	rendered := helmTemplate(t, "kafkalink", ns)
	objs := decode(t, rendered)
	got := kinds(objs)
	for kind, n := range map[string]int{"ServiceAccount": 1, "ClusterRole": 3 + userRoles, "ClusterRoleBinding": 3, "Role": 1, "RoleBinding": 1, "Deployment": 1, "PodDisruptionBudget": 1, "FlowSchema": 1, "PriorityLevelConfiguration": 1} {
		if got[kind] != n {
			t.Errorf("%d %s in the default render, want %d (all: %v)", got[kind], kind, n, got)
		}
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		if o.GetName() != "kafkalink-operator" {
			t.Errorf("Deployment %q, want the install bundle's kafkalink-operator", o.GetName())
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		c := containers[0].(map[string]any)
		if want := "ghcr.io/kafkalink/kafkalink-operator:" + version.Version; c["image"] != want {
			t.Errorf("operator image %v, want %s", c["image"], want)
		}
		if args := fmt.Sprint(c["args"]); !strings.Contains(args, "--proxy-image="+version.ProxyImage()) {
			t.Errorf("operator args %s lack --proxy-image=%s", args, version.ProxyImage())
		}
	}
	createNamespace(t, ns)
	kubectlApply(t, rendered)
	checkStored(t, objs)

	runOperator(t, ns, "kafkalink-operator")
	checkPriorityLevel(t, ns, "kafkalink-operator", "kafkalink-operator")
	createNamespace(t, "app-default")
	waitConnectionReason(t, "app-default", "KafkaNotFound")
}

// TestChartWatchNamespacesRender: with watchNamespaces, no cluster-wide bindings (and no
// ClusterRoles but those offered to others) are rendered, and
// the per-namespace Roles are enough for an operator watching exactly those namespaces.
func TestChartWatchNamespacesRender(t *testing.T) {
	const ns = "teams-operator"
	rendered := helmTemplate(t, "teams", ns, "watchNamespaces={team-a,team-b}", "replicas=1")
	objs := decode(t, rendered)
	got := kinds(objs)
	for kind, n := range map[string]int{"ServiceAccount": 1, "ClusterRole": userRoles, "ClusterRoleBinding": 0, "Role": 3, "RoleBinding": 3, "Deployment": 1, "PodDisruptionBudget": 0, "FlowSchema": 1, "PriorityLevelConfiguration": 1} {
		if got[kind] != n {
			t.Errorf("%d %s in the watchNamespaces render, want %d (all: %v)", got[kind], kind, n, got)
		}
	}
	for _, n := range []string{ns, "team-a", "team-b"} {
		createNamespace(t, n)
	}
	kubectlApply(t, rendered)
	checkStored(t, objs)

	runOperator(t, ns, "teams-kafkalink-operator", "--watch-namespaces=team-a,team-b")
	waitConnectionReason(t, "team-b", "KafkaNotFound")
}

// TestKustomizeExampleOverlay builds manifests/kustomize/overlays/example with the control plane's
// kubectl, checks the namespace and image overrides, and has the API server accept it (dry run).
func TestKustomizeExampleOverlay(t *testing.T) {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cp.Kubectl("kustomize", filepath.Join(root, "manifests", "kustomize", "overlays", "example"))
	if err != nil {
		t.Fatal(err)
	}
	objs := decode(t, []byte(out))
	base, err := os.ReadFile(filepath.Join(root, "manifests", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := len(decode(t, base)); len(objs) != want {
		t.Errorf("overlay has %d objects, install.yaml %d", len(objs), want)
	}
	const ns = "kafkalink-example"
	var sawDeployment bool
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition", "ClusterRole":
		case "Namespace":
			if o.GetName() != ns {
				t.Errorf("Namespace %q, want %s", o.GetName(), ns)
			}
		case "ClusterRoleBinding", "RoleBinding":
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			for _, s := range subjects {
				if s.(map[string]any)["namespace"] != ns {
					t.Errorf("%s %s subject %v not moved to %s", o.GetKind(), o.GetName(), s, ns)
				}
			}
		default:
			if o.GetNamespace() != ns {
				t.Errorf("%s %s in namespace %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), ns)
			}
		}
		if o.GetKind() == "Deployment" {
			sawDeployment = true
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			c := containers[0].(map[string]any)
			if c["image"] != "registry.example.com/kafkalink/kafkalink-operator:0.1.0" {
				t.Errorf("operator image %v", c["image"])
			}
			if args := fmt.Sprint(c["args"]); !strings.Contains(args, "--proxy-image=registry.example.com/kafkalink/kafkalink-proxy:0.1.0") {
				t.Errorf("operator args %s lack the overridden --proxy-image", args)
			}
		}
	}
	if !sawDeployment {
		t.Error("no Deployment in the overlay")
	}
	if strings.Contains(out, ":latest") {
		t.Error("the overlay references a :latest image")
	}
	createNamespace(t, ns) // a dry run creates no namespace for the objects in it
	kubectlApply(t, []byte(out), "--dry-run=server")
}
