// Package binding_test runs the real kafkalink-operator binary, under exactly the RBAC in
// manifests/rbac, against a local control plane with Strimzi's CRDs (or kafkalink's stand-ins for
// them, see framework.StrimziCRDFiles), and checks the KafkaConnection controller end to end:
// Secrets, status, events, watches, garbage collection and the absence of writes when nothing
// changed.
package binding_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/test/framework"
)

// waitLimit bounds every wait; it is a guard against hangs, not a performance assertion.
const waitLimit = 90 * time.Second

// harness is one control plane with the operator running against it.
type harness struct {
	t          *testing.T
	ctx        context.Context
	cp         *framework.ControlPlane
	kube       kubernetes.Interface
	kl         kafkalinkclient.Interface
	dyn        dynamic.Interface
	version    string // the Strimzi API version served: v1 or v1beta2
	binary     string
	kubeconfig string
	dir        string
	op         *framework.Process
	metrics    string
	health     string
	clusterCA  *bindingtest.CA
	clientsCA  *bindingtest.CA
}

// operatorKind says which binary a harness runs and under which RBAC.
type operatorKind int

const (
	// realOperator is cmd/kafkalink-operator under all of manifests/rbac.
	realOperator operatorKind = iota
	// bindingOnly is the operator with the binding controller alone, under manifests/rbac minus
	// every other controller's ClusterRoleBinding, which proves binding.yaml is enough by itself.
	bindingOnly
)

func newHarness(t *testing.T, strimziVersion string, kind operatorKind) *harness {
	t.Helper()
	return newHarnessWith(t, framework.Options{StrimziVersion: strimziVersion}, kind)
}

// newHarnessWith is newHarness with every control-plane option.
func newHarnessWith(t *testing.T, opts framework.Options, kind operatorKind) *harness {
	t.Helper()
	if testing.Short() {
		t.Skip("control-plane test")
	}
	ctx := context.Background()
	strimziVersion := opts.StrimziVersion
	opts.Log = t.Logf
	cp, err := framework.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	kubeconfig, _, err := cp.InstallOperatorRBAC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pkg := "./cmd/kafkalink-operator"
	if kind == bindingOnly {
		pkg = "./test/binding/bindingonly"
		dropOtherControllersRBAC(t, cp)
	}
	binary, err := framework.BuildBinary(pkg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ctx: ctx, cp: cp, kube: cp.Client, binary: binary, kubeconfig: kubeconfig, dir: t.TempDir(), version: "v1"}
	if strimziVersion == "0.45.0" {
		h.version = "v1beta2"
	}
	if h.kl, err = kafkalinkclient.NewForConfig(cp.Config); err != nil {
		t.Fatal(err)
	}
	if h.dyn, err = dynamic.NewForConfig(cp.Config); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-time.Hour)
	h.clusterCA = bindingtest.NewCA(t, "cluster-ca v0", now)
	h.clientsCA = bindingtest.NewCA(t, "clients-ca v0", now)
	return h
}

// dropOtherControllersRBAC deletes the ClusterRoleBindings that give the operator's
// ServiceAccount anything beyond the base role and the binding controller's.
func dropOtherControllersRBAC(t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	ctx := context.Background()
	list, err := cp.Client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, crb := range list.Items {
		if crb.Name == "kafkalink-operator" || crb.Name == "kafkalink-operator-binding" {
			continue
		}
		for _, s := range crb.Subjects {
			if s.Kind == "ServiceAccount" && s.Namespace == framework.OperatorNamespace && s.Name == framework.OperatorServiceAccount {
				if err := cp.Client.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				t.Logf("running without ClusterRoleBinding %s", crb.Name)
				break
			}
		}
	}
}

// startOperator runs the operator binary and waits until it is ready and leads.
func (h *harness) startOperator(name string) {
	h.t.Helper()
	health, metrics := framework.FreeAddress(), framework.FreeAddress()
	p, err := framework.StartProcess(h.dir, name, h.binary,
		"--kubeconfig="+h.kubeconfig, "--health-address="+health, "--metrics-address="+metrics,
		"--leader-elect=false", "--v=2", "--allowed-metadata-prefixes="+allowedPrefixes)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = p.Stop(10 * time.Second) })
	// /healthz, not /readyz: readiness waits for every controller's caches, and this suite
	// checks the binding controller alone, whose progress the waits below observe.
	if err := framework.WaitHTTP200(h.ctx, "http://"+health+"/healthz", waitLimit); err != nil {
		h.t.Fatalf("%v\n%s", err, p.Log())
	}
	h.op, h.metrics, h.health = p, "http://"+metrics+"/metrics", "http://"+health
}

func (h *harness) stopOperator() {
	h.t.Helper()
	if err := h.op.Stop(15 * time.Second); err != nil {
		h.t.Fatalf("operator did not stop cleanly: %v", err)
	}
}

// queueMetrics reads the controller's work-queue adds, completed items and depth.
func (h *harness) queueMetrics() (adds, done, depth float64, err error) {
	resp, err := http.Get(h.metrics)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if !strings.Contains(line, `name="kafkaconnection"`) {
			continue
		}
		fields := strings.Fields(line)
		v, _ := strconv.ParseFloat(fields[len(fields)-1], 64)
		switch {
		case strings.HasPrefix(line, "workqueue_adds_total"):
			adds = v
		case strings.HasPrefix(line, "workqueue_work_duration_seconds_count"):
			done = v
		case strings.HasPrefix(line, "workqueue_depth"):
			depth = v
		}
	}
	return adds, done, depth, s.Err()
}

// waitIdle waits until the controller has processed at least min keys and has nothing queued or
// in progress.
func (h *harness) waitIdle(min float64) {
	h.t.Helper()
	h.poll("the controller to go idle", func() (bool, error) {
		adds, done, depth, err := h.queueMetrics()
		if err != nil {
			return false, nil
		}
		return adds >= min && done >= adds && depth == 0, nil
	})
}

func (h *harness) poll(what string, cond func() (bool, error)) {
	h.t.Helper()
	if err := wait.PollUntilContextTimeout(h.ctx, 100*time.Millisecond, waitLimit, true, func(context.Context) (bool, error) {
		return cond()
	}); err != nil {
		log := ""
		if h.op != nil {
			log = h.op.Log()
			if len(log) > 8000 {
				log = log[len(log)-8000:]
			}
		}
		h.t.Fatalf("waiting for %s: %v\noperator log tail:\n%s", what, err, log)
	}
}

func (h *harness) namespace(name string) string {
	h.t.Helper()
	_, err := h.kube.CoreV1().Namespaces().Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		h.t.Fatal(err)
	}
	return name
}

func (h *harness) gvr(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: h.version, Resource: resource}
}

// listener is one spec.kafka.listeners entry.
type listener struct {
	name, typ string
	port      int64
	tls       bool
	auth      string
	// parentRefs, for a tlsroute listener, are its configuration.parentRefs.
	parentRefs []any
}

func (l listener) spec() map[string]any {
	m := map[string]any{"name": l.name, "port": l.port, "type": l.typ, "tls": l.tls}
	if l.auth != "" {
		m["authentication"] = map[string]any{"type": l.auth}
	}
	if l.parentRefs != nil {
		m["configuration"] = map[string]any{"parentRefs": l.parentRefs}
	}
	return m
}

func (l listener) status(ns, cluster string) map[string]any {
	host := fmt.Sprintf("%s-kafka-bootstrap.%s.svc", cluster, ns)
	return map[string]any{
		"name":             l.name,
		"addresses":        []any{map[string]any{"host": host, "port": l.port}},
		"bootstrapServers": fmt.Sprintf("%s:%d", host, l.port),
	}
}

// setKafka creates or updates a Kafka with the listeners in spec, and in status those with
// reported set (all of them when reported is nil).
func (h *harness) setKafka(ns, name string, listeners []listener, reported []listener) {
	h.t.Helper()
	if reported == nil {
		reported = listeners
	}
	var specLs, statusLs []any
	for _, l := range listeners {
		specLs = append(specLs, l.spec())
	}
	for _, l := range reported {
		statusLs = append(statusLs, l.status(ns, name))
	}
	client := h.dyn.Resource(h.gvr("kafkas")).Namespace(ns)
	obj, err := client.Get(h.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kafka.strimzi.io/" + h.version, "kind": "Kafka",
			"metadata": map[string]any{"name": name, "namespace": ns},
		}}
		if err := unstructured.SetNestedSlice(obj.Object, specLs, "spec", "kafka", "listeners"); err != nil {
			h.t.Fatal(err)
		}
		if obj, err = client.Create(h.ctx, obj, metav1.CreateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	} else if err != nil {
		h.t.Fatal(err)
	} else {
		if err := unstructured.SetNestedSlice(obj.Object, specLs, "spec", "kafka", "listeners"); err != nil {
			h.t.Fatal(err)
		}
		if obj, err = client.Update(h.ctx, obj, metav1.UpdateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
	if reported != nil && len(reported) == 0 {
		unstructured.RemoveNestedField(obj.Object, "status")
	} else {
		_ = unstructured.SetNestedField(obj.Object, obj.GetGeneration(), "status", "observedGeneration")
		if err := unstructured.SetNestedSlice(obj.Object, statusLs, "status", "listeners"); err != nil {
			h.t.Fatal(err)
		}
	}
	if _, err := client.UpdateStatus(h.ctx, obj, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// setKafkaBootstrap sets one listener's bootstrapServers in the Kafka status.
func (h *harness) setKafkaBootstrap(ns, name, listenerName, bootstrap string) {
	h.t.Helper()
	client := h.dyn.Resource(h.gvr("kafkas")).Namespace(ns)
	obj, err := client.Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	ls, _, _ := unstructured.NestedSlice(obj.Object, "status", "listeners")
	for _, l := range ls {
		if m, ok := l.(map[string]any); ok && m["name"] == listenerName {
			m["bootstrapServers"] = bootstrap
			delete(m, "addresses")
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, ls, "status", "listeners")
	if _, err := client.UpdateStatus(h.ctx, obj, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// setSecret creates or replaces a Secret labelled like Strimzi's.
func (h *harness) setSecret(ns, name, cluster string, data map[string][]byte) {
	h.t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"strimzi.io/cluster": cluster}},
		Data:       data,
	}
	existing, err := h.kube.CoreV1().Secrets(ns).Get(h.ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = h.kube.CoreV1().Secrets(ns).Create(h.ctx, s, metav1.CreateOptions{})
	case err == nil:
		s.ResourceVersion = existing.ResourceVersion
		_, err = h.kube.CoreV1().Secrets(ns).Update(h.ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

// setClusterCA writes <cluster>-cluster-ca-cert with the given certificates: the first as ca.crt,
// the others as older ca-<n>.crt entries, as Strimzi does during a renewal.
func (h *harness) setClusterCA(ns, cluster string, certs ...[]byte) {
	h.t.Helper()
	data := map[string][]byte{"ca.crt": certs[0]}
	for i, c := range certs[1:] {
		data[fmt.Sprintf("ca-2025-0%d-01T00-00-00Z.crt", i+1)] = c
	}
	h.setSecret(ns, cluster+"-cluster-ca-cert", cluster, data)
}

// setUser creates or updates a KafkaUser, marks it reconciled (Ready, observedGeneration current)
// unless pending, and writes its Secret.
func (h *harness) setUser(ns, name, cluster, auth string, pending bool, secret map[string][]byte) {
	h.t.Helper()
	client := h.dyn.Resource(h.gvr("kafkausers")).Namespace(ns)
	obj, err := client.Get(h.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kafka.strimzi.io/" + h.version, "kind": "KafkaUser",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"strimzi.io/cluster": cluster}},
			"spec":     map[string]any{"authentication": map[string]any{"type": auth}},
		}}
		obj, err = client.Create(h.ctx, obj, metav1.CreateOptions{})
	} else if err == nil {
		_ = unstructured.SetNestedField(obj.Object, auth, "spec", "authentication", "type")
		obj, err = client.Update(h.ctx, obj, metav1.UpdateOptions{})
	}
	if err != nil {
		h.t.Fatal(err)
	}
	if secret != nil {
		h.setSecret(ns, name, cluster, secret)
	}
	if pending {
		return
	}
	obj.Object["status"] = map[string]any{
		"observedGeneration": obj.GetGeneration(),
		"username":           name,
		"secret":             name,
		"conditions":         []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}},
	}
	if _, err := client.UpdateStatus(h.ctx, obj, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func scramSecret(password string) map[string][]byte {
	return map[string][]byte{
		"password":         []byte(password),
		"sasl.jaas.config": []byte(`org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="` + password + `";`),
	}
}

func (h *harness) tlsSecret(cn string) map[string][]byte {
	certPEM, keyPEM, _ := h.clientsCA.Issue(h.t, cn, nil, true, false)
	return map[string][]byte{"ca.crt": h.clientsCA.CertPEM, "user.crt": certPEM, "user.key": keyPEM}
}

// connection builds a KafkaConnection to a Kafka, optionally with a user and a listener.
func connection(ns, name, kafka, user, userNS, listenerName string, formats ...string) *kafkav1beta2.KafkaConnection {
	c := &kafkav1beta2.KafkaConnection{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kafkav1beta2.KafkaConnectionSpec{
			Kafka:        kafkav1beta2.KafkaReference{APIVersion: "kafka.strimzi.io/v1beta2", Kind: "Kafka", Name: kafka},
			StoreFormats: formats,
		},
	}
	if listenerName != "" {
		c.Spec.Kafka.Listener = &kafkav1beta2.ListenerReference{Name: listenerName}
	}
	if user != "" {
		c.Spec.User = &kafkav1beta2.UserReference{APIVersion: "kafka.strimzi.io/v1beta2", Kind: "KafkaUser", Name: user, Namespace: userNS}
	}
	return c
}

func (h *harness) createConnection(c *kafkav1beta2.KafkaConnection) {
	h.t.Helper()
	if _, err := h.kl.KafkaV1beta2().KafkaConnections(c.Namespace).Create(h.ctx, c, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// waitReason waits until the connection's Ready condition has the reason, for its current
// generation, and returns the connection.
func (h *harness) waitReason(ns, name, reason string) *kafkav1beta2.KafkaConnection {
	h.t.Helper()
	var conn *kafkav1beta2.KafkaConnection
	var last string
	h.poll(fmt.Sprintf("KafkaConnection %s/%s to have Ready reason %s (last: %s)", ns, name, reason, last), func() (bool, error) {
		c, err := h.kl.KafkaV1beta2().KafkaConnections(ns).Get(h.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == "Ready" {
				last = cond.Reason + ": " + cond.Message
				if cond.Reason == reason && cond.ObservedGeneration == c.Generation && c.Status.ObservedGeneration == c.Generation {
					conn = c
					return true, nil
				}
			}
		}
		return false, nil
	})
	return conn
}

// waitSecret waits until the binding Secret satisfies ok and returns its data.
func (h *harness) waitSecret(ns, name, what string, ok func(map[string][]byte) bool) map[string][]byte {
	h.t.Helper()
	var data map[string][]byte
	h.poll(fmt.Sprintf("Secret %s/%s: %s", ns, name, what), func() (bool, error) {
		s, err := h.kube.CoreV1().Secrets(ns).Get(h.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		data = s.Data
		return ok(s.Data), nil
	})
	return data
}

func (h *harness) waitSecretGone(ns, name string) {
	h.t.Helper()
	h.poll(fmt.Sprintf("Secret %s/%s to be gone", ns, name), func() (bool, error) {
		_, err := h.kube.CoreV1().Secrets(ns).Get(h.ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// waitEvent waits for an event about the object with the given type and reason.
func (h *harness) waitEvent(ns, name, eventType, reason string) {
	h.t.Helper()
	h.poll(fmt.Sprintf("a %s event %s about %s/%s", eventType, reason, ns, name), func() (bool, error) {
		list, err := h.kube.CoreV1().Events(ns).List(h.ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Type == eventType && e.Reason == reason {
				return true, nil
			}
		}
		return false, nil
	})
}

// operatorWrites counts the operator's writes to Secrets and KafkaConnections so far.
func (h *harness) operatorWrites() []framework.AuditEvent {
	h.t.Helper()
	all, err := h.cp.Writes(framework.OperatorUser)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []framework.AuditEvent
	for _, e := range all {
		if strings.Contains(e.RequestURI, "/secrets") || strings.Contains(e.RequestURI, "/kafkaconnections") {
			out = append(out, e)
		}
	}
	return out
}

// strimziCRDs lists the Strimzi CRD files of a release (real ones when available, else the
// stand-ins: see framework.StrimziCRDFiles), for tests that install them late.
func strimziCRDs(t *testing.T, version string) []string {
	t.Helper()
	files, source, err := framework.StrimziCRDFiles(version)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Strimzi CRDs: %s", source)
	return files
}
