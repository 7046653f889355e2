// Package olm_test installs the operator from its OLM bundle the way OLM would, on a local
// control plane without OLM: the ClusterServiceVersion's permissions become Roles in the
// operator's and the target namespaces (OwnNamespace, SingleNamespace, MultiNamespace) or
// ClusterRoles (AllNamespaces), and its Deployment's container runs with the environment and
// arguments OLM's pod would have. The operator must become ready and bind a KafkaConnection
// under exactly those permissions.
package olm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/kafkalink/kafkalink/test/framework"
)

// waitLimit bounds every wait; it is a guard against hangs, not a performance assertion.
const waitLimit = 90 * time.Second

// csv is the part of the ClusterServiceVersion OLM installs from.
type csv struct {
	Spec struct {
		Install struct {
			Spec struct {
				Permissions []struct {
					ServiceAccountName string              `json:"serviceAccountName"`
					Rules              []rbacv1.PolicyRule `json:"rules"`
				} `json:"permissions"`
				ClusterPermissions []json.RawMessage `json:"clusterPermissions"`
				Deployments        []struct {
					Name string `json:"name"`
					Spec struct {
						Template corev1.PodTemplateSpec `json:"template"`
					} `json:"spec"`
				} `json:"deployments"`
			} `json:"spec"`
		} `json:"install"`
	} `json:"spec"`
}

// readBundle runs make bundle's generator into a temporary folder and reads its CSV.
func readBundle(t *testing.T, root string) *csv {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bundle")
	cmd := exec.Command("go", "run", ".", "-root", root, "-out", out, "-version", "0.0.1", "-registry", "registry.example.com")
	cmd.Dir = filepath.Join(root, "hack/bundle")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/bundle: %v\n%s", err, b)
	}
	data, err := os.ReadFile(filepath.Join(out, "manifests/kafkalink.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c csv
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Spec.Install.Spec.Permissions) != 1 || len(c.Spec.Install.Spec.ClusterPermissions) != 0 || len(c.Spec.Install.Spec.Deployments) != 1 {
		t.Fatalf("the CSV has %d permissions, %d clusterPermissions and %d deployments; this test installs one, none and one",
			len(c.Spec.Install.Spec.Permissions), len(c.Spec.Install.Spec.ClusterPermissions), len(c.Spec.Install.Spec.Deployments))
	}
	return &c
}

// TestBundleInstallModes installs the bundle as OLM would for SingleNamespace (the operator in
// olm-single, watching team-a) and for AllNamespaces (in olm-all), and needs the operator ready
// and a KafkaConnection in team-a bound each time.
func TestBundleInstallModes(t *testing.T) {
	if testing.Short() {
		t.Skip("control-plane test")
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c := readBundle(t, root)
	ctx := context.Background()
	cp, err := framework.Start(ctx, framework.Options{Log: t.Logf, WithoutControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	binary, err := framework.BuildBinary("./cmd/kafkalink-operator", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	setKafka(t, cp, dyn)

	for _, mode := range []struct {
		name, operatorNamespace string
		targets                 []string // empty: AllNamespaces
	}{
		{"SingleNamespace", "olm-single", []string{"team-a"}},
		{"AllNamespaces", "olm-all", nil},
	} {
		t.Run(mode.name, func(t *testing.T) {
			kubeconfig := grantAsOLM(t, cp, c, mode.operatorNamespace, mode.targets)
			op := runAsOLM(t, c, binary, kubeconfig, mode.operatorNamespace, mode.targets)
			conn := "orders-" + strings.ToLower(mode.name)
			if out, err := cp.Kubectl("apply", "-f", writeTemp(t, fmt.Sprintf(`
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: %s, namespace: team-a}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1, kind: Kafka, name: my-cluster}
`, conn))); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			gvr := schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1beta2", Resource: "kafkaconnections"}
			poll(t, op, "KafkaConnection "+conn+" Ready", func(ctx context.Context) (bool, error) {
				obj, err := dyn.Resource(gvr).Namespace("team-a").Get(ctx, conn, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
				for _, cond := range conds {
					if m, ok := cond.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
						return true, nil
					}
				}
				return false, nil
			})
			if err := op.Stop(15 * time.Second); err != nil {
				t.Errorf("the operator did not stop cleanly: %v", err)
			}
		})
	}
}

// grantAsOLM creates the operator's namespace and ServiceAccount and grants it the CSV's
// permissions as OLM does: a Role and RoleBinding in the operator's namespace, and in each target
// namespace, or a ClusterRole and ClusterRoleBinding for AllNamespaces. It returns a kubeconfig
// of the ServiceAccount.
func grantAsOLM(t *testing.T, cp *framework.ControlPlane, c *csv, operatorNS string, targets []string) string {
	t.Helper()
	ctx := context.Background()
	perm := c.Spec.Install.Spec.Permissions[0]
	kubeconfig, _, err := cp.ServiceAccountKubeconfig(ctx, operatorNS, perm.ServiceAccountName)
	if err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: perm.ServiceAccountName, Namespace: operatorNS}}
	name := "kafkalink-" + operatorNS
	rbac := cp.Client.RbacV1()
	if len(targets) == 0 {
		if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: perm.Rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range append([]string{operatorNS}, targets...) {
		if _, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: perm.Rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return kubeconfig
}

// runAsOLM starts the operator with the CSV Deployment's container arguments, expanded with the
// environment its pod would have (the downward API's namespace and OLM's olm.targetNamespaces
// annotation), the HTTP addresses moved to free local ports, and waits until it is ready (every
// informer synced, under the granted permissions only). It leads once it can take its Lease in
// the operator's namespace, which the binding the test waits for proves.
func runAsOLM(t *testing.T, c *csv, binary, kubeconfig, operatorNS string, targets []string) *framework.Process {
	t.Helper()
	container := c.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range container.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = operatorNS
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['olm.targetNamespaces']":
			env[e.Name] = strings.Join(targets, ",")
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		default:
			t.Fatalf("env %s: this test does not know how OLM's pod would fill it", e.Name)
		}
		t.Setenv(e.Name, env[e.Name])
	}
	health := framework.FreeAddress()
	args := []string{"--kubeconfig=" + kubeconfig}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	for _, a := range container.Args {
		switch {
		case strings.HasPrefix(a, "--health-address="):
			a = "--health-address=" + health
		case strings.HasPrefix(a, "--metrics-address="):
			a = "--metrics-address=" + framework.FreeAddress()
		}
		// Kubernetes expands $(VAR) in args from the container's environment.
		args = append(args, ref.ReplaceAllStringFunc(a, func(m string) string { return env[ref.FindStringSubmatch(m)[1]] }))
	}
	t.Logf("operator args: %v", args)
	op, err := framework.StartProcess(t.TempDir(), "operator", binary, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.Stop(10 * time.Second) })
	if err := framework.WaitHTTP200(context.Background(), "http://"+health+"/readyz", waitLimit); err != nil {
		t.Fatalf("%v\n%s", err, tail(op.Log()))
	}
	return op
}

// setKafka creates namespace team-a with a Kafka whose status reports a plain listener.
func setKafka(t *testing.T, cp *framework.ControlPlane, dyn dynamic.Interface) {
	t.Helper()
	if out, err := cp.Kubectl("apply", "-f", writeTemp(t, `
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kafka.strimzi.io/v1
kind: Kafka
metadata: {name: my-cluster, namespace: team-a}
spec:
  kafka:
    listeners: [{name: plain, port: 9092, type: internal, tls: false}]
`)); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	gvr := schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1", Resource: "kafkas"}
	ctx := context.Background()
	kafka, err := dyn.Resource(gvr).Namespace("team-a").Get(ctx, "my-cluster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kafka.Object["status"] = map[string]any{
		"observedGeneration": kafka.GetGeneration(),
		"listeners": []any{map[string]any{"name": "plain", "bootstrapServers": "my-cluster-kafka-bootstrap.team-a.svc:9092",
			"addresses": []any{map[string]any{"host": "my-cluster-kafka-bootstrap.team-a.svc", "port": int64(9092)}}}},
	}
	if _, err := dyn.Resource(gvr).Namespace("team-a").UpdateStatus(ctx, kafka, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func poll(t *testing.T, op *framework.Process, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitLimit, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v\noperator log tail:\n%s", what, err, tail(op.Log()))
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func tail(s string) string {
	if len(s) > 6000 {
		return s[len(s)-6000:]
	}
	return s
}
