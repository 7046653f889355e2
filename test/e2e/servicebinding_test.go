package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/test/framework"
)

// The Service Binding runtime's ServiceAccount and aggregated ClusterRole, as its release
// bundle (config/servicebinding-runtime.yaml) names them.
const (
	sbNamespace      = "servicebinding-system"
	sbServiceAccount = "servicebinding-controller-manager"
	sbAggregateRole  = "servicebinding-aggregate-role"
)

// TestServiceBindingProjectsTheBinding runs the Service Binding specification's reference
// reconciler (github.com/servicebinding/runtime, from the test-only module test/servicebinding)
// beside the kafkalink operator, under the runtime's own ServiceAccount and the RBAC of its
// release, never as admin: that RBAC aggregates every ClusterRole labelled
// servicebinding.io/controller=true, and kafkalink ships one (manifests/rbac/servicebinding.yaml)
// that lets it read KafkaConnections. Without that role the ServiceBinding reports
// ServiceForbidden and nothing is projected; with it, a ServiceBinding naming a KafkaConnection
// projects the binding Secret into a Deployment's pod template, with the volume, mount and
// environment the specification describes.
func TestServiceBindingProjectsTheBinding(t *testing.T) {
	e := newEnv(t)
	runtimeDir, err := framework.ServiceBindingRuntimeDir()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := framework.ServiceBindingCRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.cp.InstallCRDFiles(e.ctx, crds...); err != nil {
		t.Fatal(err)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The runtime's released RBAC: its ServiceAccount, roles and bindings, exactly as released.
	rbacFile := filepath.Join(e.work, "servicebinding-rbac.yaml")
	if err := releasedRBAC(filepath.Join(runtimeDir, "config", "servicebinding-runtime.yaml"), rbacFile); err != nil {
		t.Fatal(err)
	}
	e.kubectl("apply", "-f", rbacFile)
	sbKubeconfig, sbConfig, err := e.cp.ServiceAccountKubeconfig(e.ctx, sbNamespace, sbServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	sbUser := framework.ServiceAccountUser(sbNamespace, sbServiceAccount)

	// First without kafkalink's role for Service Binding implementations (newEnv applied all of
	// manifests/rbac): the aggregated role must lose the KafkaConnection rule.
	kafkalinkRole := filepath.Join(root, "manifests", "rbac", "servicebinding.yaml")
	e.kubectl("delete", "-f", kafkalinkRole)
	e.waitAggregated(false)

	reconciler := filepath.Join(e.work, "servicebinding")
	build := exec.Command("go", "build", "-o", reconciler, ".")
	build.Dir = filepath.Join(root, "test", "servicebinding")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the ServiceBinding reconciler: %v\n%s", err, out)
	}
	p, err := framework.StartProcess(e.work, "servicebinding", reconciler, "--kubeconfig="+sbKubeconfig)
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
	condition := func(typ string) (status, reason, detail string) {
		sb, err := e.dyn.Resource(sbGVR).Namespace(nsApps).Get(e.ctx, "orders-kafka", metav1.GetOptions{})
		if err != nil {
			return "", "", err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(sb.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == typ {
				status, _ = m["status"].(string)
				reason, _ = m["reason"].(string)
				return status, reason, fmt.Sprintf("%s %s: %v: %v (reconciler log: %s)", typ, status, reason, m["message"], lastLines(p.Log(), 5))
			}
		}
		return "", "", "no " + typ + " condition; reconciler log: " + lastLines(p.Log(), 5)
	}
	e.eventually("the ServiceBinding to report ServiceForbidden without kafkalink's role", func() (bool, string) {
		status, reason, detail := condition("ServiceAvailable")
		ready, _, readyDetail := condition("Ready")
		return status == "False" && reason == "ServiceForbidden" && ready == "False", detail + "; " + readyDetail
	})
	if d, err := e.kube.AppsV1().Deployments(nsApps).Get(e.ctx, "orders", metav1.GetOptions{}); err != nil || len(d.Spec.Template.Spec.Volumes) > 0 {
		t.Fatalf("without kafkalink's role the Deployment has volumes %v (%v)", d.Spec.Template.Spec.Volumes, err)
	}
	t.Logf("without kafkalink-servicebinding: ServiceAvailable=False ServiceForbidden, Ready=False, nothing projected")

	// With the role: the aggregated role gains the rule, and the binding is resolved. The
	// reconciler does not retry a forbidden service by itself until its resync, so the
	// ServiceBinding is touched, as a user would after installing kafkalink.
	e.kubectl("apply", "-f", kafkalinkRole)
	e.waitAggregated(true)
	if _, err := e.dyn.Resource(sbGVR).Namespace(nsApps).Patch(e.ctx, "orders-kafka", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"test.kafkalink.io/retry":"rbac"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the ServiceBinding to be Ready", func() (bool, string) {
		status, _, detail := condition("Ready")
		return status == "True", detail
	})
	t.Logf("with kafkalink-servicebinding aggregated into %s: Ready=True", sbAggregateRole)

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

	// The runtime's identity patched the Deployment, and needs no access to Secrets.
	writes, err := e.cp.Writes(sbUser)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(writes, func(w framework.AuditEvent) bool {
		return (w.Verb == "update" || w.Verb == "patch") && w.ResponseStatus.Code < 300 &&
			strings.Contains(w.RequestURI, "/namespaces/"+nsApps+"/deployments/orders")
	}) {
		t.Errorf("no Deployment write by %s in the audit log: %+v", sbUser, writes)
	}
	sbKube, err := kubernetes.NewForConfig(sbConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sbKube.CoreV1().Secrets(nsApps).Get(e.ctx, directConn, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the Service Binding runtime's identity reads the binding Secret (err %v); it should need no Secret access", err)
	}

	// A rename (spec.secretName): status.binding.name follows, so does the projection, and the
	// old Secret goes. The runtime (v0.7.0) watches no provisioned-service kind, so it resolves
	// status.binding.name again only when the ServiceBinding changes (or at its resync): the
	// ServiceBinding is touched once status names the new Secret, as after the RBAC change above.
	const renamed = "orders-kafka-binding"
	if _, err := e.kl.KafkaV1beta2().KafkaConnections(nsApps).Patch(e.ctx, directConn, types.MergePatchType,
		[]byte(`{"spec":{"secretName":"`+renamed+`"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("status.binding.name to name the renamed Secret", func() (bool, string) {
		kc, err := e.kl.KafkaV1beta2().KafkaConnections(nsApps).Get(e.ctx, directConn, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return kc.Status.Binding != nil && kc.Status.Binding.Name == renamed, fmt.Sprintf("status %+v", kc.Status)
	})
	if _, err := e.dyn.Resource(sbGVR).Namespace(nsApps).Patch(e.ctx, "orders-kafka", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"test.kafkalink.io/retry":"rename"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the projection to follow the renamed binding Secret", func() (bool, string) {
		d, err := e.kube.AppsV1().Deployments(nsApps).Get(e.ctx, "orders", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Projected != nil {
				for _, src := range v.Projected.Sources {
					if src.Secret != nil {
						names = append(names, src.Secret.Name)
					}
				}
			}
		}
		for _, v := range d.Spec.Template.Spec.Containers[0].Env {
			if v.ValueFrom != nil && v.ValueFrom.SecretKeyRef != nil {
				names = append(names, v.ValueFrom.SecretKeyRef.Name)
			}
		}
		return len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return n != renamed }), fmt.Sprintf("projected Secrets %v", names)
	})
	e.eventually("the old binding Secret to be gone", func() (bool, string) {
		_, err := e.kube.CoreV1().Secrets(nsApps).Get(e.ctx, directConn, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get %s: %v", directConn, err)
	})
}

// releasedRBAC writes the ServiceAccount, roles and bindings (and their Namespace) of a Service
// Binding runtime release bundle to out, leaving out its CRDs, Deployment and webhooks.
func releasedRBAC(bundle, out string) error {
	data, err := os.ReadFile(bundle)
	if err != nil {
		return err
	}
	kindRE := regexp.MustCompile(`(?m)^kind: (\w+)\s*$`)
	var docs []string
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		m := kindRE.FindStringSubmatch(doc)
		if m == nil {
			continue
		}
		switch m[1] {
		case "Namespace", "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
			docs = append(docs, strings.TrimSpace(doc))
		}
	}
	if len(docs) < 5 {
		return fmt.Errorf("%s: only %d RBAC documents", bundle, len(docs))
	}
	return os.WriteFile(out, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o600)
}

// waitAggregated waits until the Service Binding runtime's aggregated ClusterRole has (or has
// not) a rule reading KafkaConnections: kube-controller-manager's aggregation controller copies
// the rules of every ClusterRole labelled servicebinding.io/controller=true into it. It also
// checks the runtime's identity is allowed (or denied) accordingly.
func (e *env) waitAggregated(want bool) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("%s to read KafkaConnections: %t", sbAggregateRole, want), func() (bool, string) {
		role, err := e.kube.RbacV1().ClusterRoles().Get(e.ctx, sbAggregateRole, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		has, workloads := false, false
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, "kafka.strimzi.io") && slices.Contains(r.Resources, "kafkaconnections") && slices.Contains(r.Verbs, "get") {
				has = true
			}
			if slices.Contains(r.Resources, "deployments") {
				workloads = true
			}
		}
		if !workloads || has != want {
			return false, fmt.Sprintf("rules %+v", role.Rules)
		}
		sar, err := e.kube.AuthorizationV1().SubjectAccessReviews().Create(e.ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               framework.ServiceAccountUser(sbNamespace, sbServiceAccount),
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + sbNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: nsApps, Verb: "get", Group: "kafka.strimzi.io", Resource: "kafkaconnections"},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return sar.Status.Allowed == want, fmt.Sprintf("access review: %+v", sar.Status)
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
