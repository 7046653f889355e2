package e2e_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/test/framework"
)

// serviceBindingRuntimeVersion is the github.com/servicebinding/runtime release whose CRDs and
// reconciler the test uses; test/servicebinding/go.mod pins the same one.
const serviceBindingRuntimeVersion = "v0.7.0"

// TestServiceBindingProjectsTheBinding runs the Service Binding specification's reference
// reconciler (github.com/servicebinding/runtime, from the test-only module test/servicebinding)
// beside the kafkalink operator: a ServiceBinding naming a KafkaConnection must project the
// binding Secret into a Deployment's pod template, with the volume, mount and environment the
// specification describes.
func TestServiceBindingProjectsTheBinding(t *testing.T) {
	e := newEnv(t)
	runtimeDir, err := framework.DownloadModule("github.com/servicebinding/runtime", serviceBindingRuntimeVersion)
	if err != nil {
		t.Fatal(err)
	}
	crds, _ := filepath.Glob(filepath.Join(runtimeDir, "config", "crd", "bases", "*.yaml"))
	if err := e.cp.InstallCRDFiles(e.ctx, crds...); err != nil {
		t.Fatal(err)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	reconciler := filepath.Join(e.work, "servicebinding")
	build := exec.Command("go", "build", "-o", reconciler, ".")
	build.Dir = filepath.Join(root, "test", "servicebinding")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the ServiceBinding reconciler: %v\n%s", err, out)
	}
	p, err := framework.StartProcess(e.work, "servicebinding", reconciler, "--kubeconfig="+e.cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(10 * time.Second) })

	for _, ns := range []string{nsKafka, nsApps} {
		if _, err := e.kube.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ca := bindingtest.NewCA(t, "my-cluster cluster-ca", time.Now().Add(-time.Hour))
	e.setClusterCA(ca.CertPEM)
	e.setSecret(strimziSecret(userName, scramUserSecret("sb-Pa55word")))
	e.createStrimziObjects(backendService + "." + nsKafka + ".svc:9093")
	e.apply(`
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: apps, namespace: kafka}
spec:
  from: [{group: kafka.strimzi.io, kind: KafkaConnection, namespace: apps}]
  to: [{group: kafka.strimzi.io, kind: KafkaUser, name: my-user}]
---
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: orders-app, namespace: apps}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1, kind: Kafka, name: my-cluster, namespace: kafka}
  user: {apiVersion: kafka.strimzi.io/v1, kind: KafkaUser, name: my-user, namespace: kafka}
  storeFormats: [PEM]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: orders, namespace: apps}
spec:
  selector: {matchLabels: {app: orders}}
  template:
    metadata: {labels: {app: orders}}
    spec:
      containers: [{name: app, image: registry.example/orders:1}]
---
apiVersion: servicebinding.io/v1beta1
kind: ServiceBinding
metadata: {name: orders-kafka, namespace: apps}
spec:
  service: {apiVersion: kafka.strimzi.io/v1beta2, kind: KafkaConnection, name: orders-app}
  workload: {apiVersion: apps/v1, kind: Deployment, name: orders}
  env:
  - {name: KAFKA_BOOTSTRAP_SERVERS, key: bootstrap.servers}
  - {name: KAFKA_SECURITY_PROTOCOL, key: security.protocol}
`)
	e.waitBound(directConn)

	sbGVR := schema.GroupVersionResource{Group: "servicebinding.io", Version: "v1beta1", Resource: "servicebindings"}
	e.eventually("the ServiceBinding to be Ready", func() (bool, string) {
		sb, err := e.dyn.Resource(sbGVR).Namespace(nsApps).Get(e.ctx, "orders-kafka", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(sb.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Ready" {
				return m["status"] == "True", fmt.Sprintf("%v: %v (reconciler log: %s)", m["reason"], m["message"], lastLines(p.Log(), 5))
			}
		}
		return false, "no Ready condition; reconciler log: " + lastLines(p.Log(), 5)
	})

	var d *appsv1.Deployment
	e.eventually("the binding to be projected into the Deployment", func() (bool, string) {
		d, err = e.kube.AppsV1().Deployments(nsApps).Get(e.ctx, "orders", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(d.Spec.Template.Spec.Volumes) > 0, fmt.Sprintf("volumes %v", d.Spec.Template.Spec.Volumes)
	})
	// The specification: a volume projecting the binding Secret, mounted at
	// $SERVICE_BINDING_ROOT/<binding name>, SERVICE_BINDING_ROOT in the environment, and the
	// requested entries as environment variables read from the Secret.
	var volume string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.Secret != nil && src.Secret.Name == directConn {
				volume = v.Name
			}
		}
	}
	if volume == "" {
		t.Fatalf("no projected volume of Secret %s: %+v", directConn, d.Spec.Template.Spec.Volumes)
	}
	c := d.Spec.Template.Spec.Containers[0]
	env := map[string]corev1.EnvVar{}
	for _, v := range c.Env {
		env[v.Name] = v
	}
	bindingRoot, ok := env["SERVICE_BINDING_ROOT"]
	if !ok || bindingRoot.Value == "" {
		t.Fatalf("SERVICE_BINDING_ROOT is not set: %+v", c.Env)
	}
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.Name == volume && m.MountPath == bindingRoot.Value+"/orders-kafka" && m.ReadOnly {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("volume %s is not mounted read-only at %s/orders-kafka: %+v", volume, bindingRoot.Value, c.VolumeMounts)
	}
	for name, key := range map[string]string{"KAFKA_BOOTSTRAP_SERVERS": "bootstrap.servers", "KAFKA_SECURITY_PROTOCOL": "security.protocol"} {
		v, ok := env[name]
		if !ok || v.ValueFrom == nil || v.ValueFrom.SecretKeyRef == nil ||
			v.ValueFrom.SecretKeyRef.Name != directConn || v.ValueFrom.SecretKeyRef.Key != key {
			t.Errorf("%s does not read %s from Secret %s: %+v", name, key, directConn, v)
		}
	}
	// The projected Secret is the one the operator wrote, with the entries the spec's kafka type needs.
	secret, err := e.kube.CoreV1().Secrets(nsApps).Get(e.ctx, directConn, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if secret.Type != "servicebinding.io/kafka" || string(secret.Data["type"]) != "kafka" || string(secret.Data["provider"]) == "" {
		t.Errorf("binding Secret type %q, type entry %q, provider %q", secret.Type, secret.Data["type"], secret.Data["provider"])
	}
	kc, err := e.kl.KafkaV1beta2().KafkaConnections(nsApps).Get(e.ctx, directConn, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if kc.Status.Binding == nil || kc.Status.Binding.Name != directConn || meta.FindStatusCondition(kc.Status.Conditions, "Ready") == nil {
		t.Errorf("KafkaConnection status %+v does not name the binding Secret", kc.Status)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
