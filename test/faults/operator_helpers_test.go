package faults_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	kafkalinkinformers "github.com/kafkalink/kafkalink/generated/informers/externalversions"
	kafkalinklisters "github.com/kafkalink/kafkalink/generated/listers/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
	"github.com/kafkalink/kafkalink/test/framework"
)

// opWaitLimit bounds every wait of the operator cases: a guard against hangs, not a performance
// assertion (the figures are printed, not asserted).
const opWaitLimit = 5 * time.Minute

// opKafka is the Strimzi Kafka every connection of the operator cases binds to, through its
// SCRAM listener, each with its own KafkaUser.
const opKafka = "big"

// opRig is one control plane with the shipped RBAC, the operator binary built, and the test's
// own clients.
type opRig struct {
	t      *testing.T
	ctx    context.Context
	cp     *framework.ControlPlane
	kl     kafkalinkclient.Interface
	dyn    dynamic.Interface
	binary string
	dir    string
}

func newOpRig(t *testing.T) *opRig {
	t.Helper()
	if testing.Short() {
		t.Skip("control-plane test")
	}
	ctx := context.Background()
	// No kube-controller-manager: nothing here needs garbage collection, and the CPU is better
	// spent on the operator and the API server.
	cp, err := framework.Start(ctx, framework.Options{StrimziVersion: "1.2.0", WithoutGatewayAPI: true,
		WithoutControllerManager: true, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if _, _, err := cp.InstallOperatorRBAC(ctx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	binary, err := framework.BuildBinary("./cmd/kafkalink-operator", dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &opRig{t: t, ctx: ctx, cp: cp, binary: binary, dir: dir}
	if r.kl, err = kafkalinkclient.NewForConfig(cp.Config); err != nil {
		t.Fatal(err)
	}
	if r.dyn, err = dynamic.NewForConfig(cp.Config); err != nil {
		t.Fatal(err)
	}
	return r
}

// identity makes a ServiceAccount in the operator's namespace bound to every role the shipped
// RBAC binds to the operator's own, so each operator process writes under its own name in the
// audit log with exactly the shipped permissions. It returns a kubeconfig and the user name.
func (r *opRig) identity(name string) (kubeconfig, user string) {
	r.t.Helper()
	subject := rbacv1.Subject{Kind: "ServiceAccount", Name: name, Namespace: framework.OperatorNamespace}
	isOperator := func(subjects []rbacv1.Subject) bool {
		for _, s := range subjects {
			if s.Kind == "ServiceAccount" && s.Namespace == framework.OperatorNamespace && s.Name == framework.OperatorServiceAccount {
				return true
			}
		}
		return false
	}
	rbac := r.cp.Client.RbacV1()
	crbs, err := rbac.ClusterRoleBindings().List(r.ctx, metav1.ListOptions{})
	r.must(err)
	for _, b := range crbs.Items {
		if isOperator(b.Subjects) {
			b.Subjects = append(b.Subjects, subject)
			_, err := rbac.ClusterRoleBindings().Update(r.ctx, &b, metav1.UpdateOptions{})
			r.must(err)
		}
	}
	rbs, err := rbac.RoleBindings(framework.OperatorNamespace).List(r.ctx, metav1.ListOptions{})
	r.must(err)
	for _, b := range rbs.Items {
		if isOperator(b.Subjects) {
			b.Subjects = append(b.Subjects, subject)
			_, err := rbac.RoleBindings(framework.OperatorNamespace).Update(r.ctx, &b, metav1.UpdateOptions{})
			r.must(err)
		}
	}
	cfg, err := r.cp.ServiceAccountConfig(r.ctx, framework.OperatorNamespace, name)
	r.must(err)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name}
	kc.CurrentContext = "local"
	kubeconfig = filepath.Join(r.dir, name+".kubeconfig")
	r.must(clientcmd.WriteToFile(*kc, kubeconfig))
	return kubeconfig, framework.ServiceAccountUser(framework.OperatorNamespace, name)
}

// opProc is one operator process, running as its own ServiceAccount.
type opProc struct {
	*framework.Process
	name, user, health, metrics string
}

// startOperator runs the operator binary as ServiceAccount name with the given extra flags.
func (r *opRig) startOperator(name string, args ...string) *opProc {
	r.t.Helper()
	kubeconfig, user := r.identity(name)
	health, metrics := framework.FreeAddress(), framework.FreeAddress()
	p, err := framework.StartProcess(r.dir, name, r.binary, append([]string{"--kubeconfig=" + kubeconfig,
		"--health-address=" + health, "--metrics-address=" + metrics, "--v=1"}, args...)...)
	r.must(err)
	r.t.Cleanup(func() {
		_ = syscall.Kill(-p.PID(), syscall.SIGCONT) // a stopped process cannot handle SIGTERM
		_ = p.Stop(10 * time.Second)
	})
	return &opProc{Process: p, name: name, user: user, health: "http://" + health, metrics: "http://" + metrics + "/metrics"}
}

// queue reads the KafkaConnection work queue's adds, completed items and depth from /metrics.
func (p *opProc) queue() (adds, done, depth float64, err error) {
	resp, err := http.Get(p.metrics)
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

// waitIdle waits until p's KafkaConnection queue is empty with every item done.
func (r *opRig) waitIdle(p *opProc) {
	r.t.Helper()
	r.waitUntil("the operator to go idle", []*opProc{p}, func() (bool, string) {
		adds, done, depth, err := p.queue()
		if err != nil {
			return false, err.Error()
		}
		return adds > 0 && done >= adds && depth == 0, fmt.Sprintf("queue: %.0f added, %.0f done, depth %.0f", adds, done, depth)
	})
}

// signal sends sig to the process's group.
func (p *opProc) signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.PID(), sig)
}

// kill SIGKILLs the process and waits until it is gone.
func (p *opProc) kill() {
	p.signal(syscall.SIGKILL)
	<-p.Done()
}

// populate makes namespace ns with the Kafka opKafka (one SCRAM listener, reported in status),
// its cluster CA Secret holding caPEM, and n KafkaUsers (Ready, with their Secrets) each with a
// KafkaConnection, written by 16 workers.
func (r *opRig) populate(ns string, n int, caPEM []byte) {
	r.t.Helper()
	_, err := r.cp.Client.CoreV1().Namespaces().Create(r.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	r.must(err)
	r.must(r.createKafka(ns))
	r.must(r.createSecret(ns, strimzi.ClusterCASecretName(opKafka), "Kafka", map[string][]byte{"ca.crt": caPEM}))
	start := time.Now()
	r.parallel(n, func(i int) error {
		user := fmt.Sprintf("user-%05d", i)
		if err := r.createReadyUser(ns, user); err != nil {
			return err
		}
		password := "password-" + strconv.Itoa(i)
		if err := r.createSecret(ns, user, "KafkaUser", map[string][]byte{
			"password":         []byte(password),
			"sasl.jaas.config": []byte(`org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + password + `";`),
		}); err != nil {
			return err
		}
		_, err := r.kl.KafkaV1beta2().KafkaConnections(ns).Create(r.ctx, &kafkav1beta2.KafkaConnection{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%05d", i), Namespace: ns},
			Spec: kafkav1beta2.KafkaConnectionSpec{
				Kafka: kafkav1beta2.KafkaReference{APIVersion: "kafka.strimzi.io/v1beta2", Kind: "Kafka", Name: opKafka},
				User:  &kafkav1beta2.UserReference{APIVersion: "kafka.strimzi.io/v1beta2", Kind: "KafkaUser", Name: user},
			},
		}, metav1.CreateOptions{})
		return err
	})
	r.t.Logf("setup: %d KafkaUsers, user Secrets and KafkaConnections in %s", n, time.Since(start).Round(time.Millisecond))
}

func (r *opRig) gvr(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1", Resource: resource}
}

func (r *opRig) createKafka(ns string) error {
	const port = 9094
	host := fmt.Sprintf("%s-kafka-bootstrap.%s.svc", opKafka, ns)
	client := r.dyn.Resource(r.gvr("kafkas")).Namespace(ns)
	created, err := client.Create(r.ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kafka.strimzi.io/v1", "kind": "Kafka",
		"metadata": map[string]any{"name": opKafka, "namespace": ns},
		"spec": map[string]any{"kafka": map[string]any{"listeners": []any{map[string]any{
			"name": "scram", "port": int64(port), "type": "internal", "tls": true,
			"authentication": map[string]any{"type": "scram-sha-512"},
		}}}},
	}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Object["status"] = map[string]any{"observedGeneration": created.GetGeneration(), "listeners": []any{map[string]any{
		"name": "scram", "addresses": []any{map[string]any{"host": host, "port": int64(port)}},
		"bootstrapServers": fmt.Sprintf("%s:%d", host, port),
	}}}
	_, err = client.UpdateStatus(r.ctx, created, metav1.UpdateOptions{})
	return err
}

func (r *opRig) createReadyUser(ns, name string) error {
	client := r.dyn.Resource(r.gvr("kafkausers")).Namespace(ns)
	created, err := client.Create(r.ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kafka.strimzi.io/v1", "kind": "KafkaUser",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{strimzi.LabelCluster: opKafka}},
		"spec":     map[string]any{"authentication": map[string]any{"type": "scram-sha-512"}},
	}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Object["status"] = map[string]any{
		"observedGeneration": created.GetGeneration(), "username": name, "secret": name,
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}},
	}
	_, err = client.UpdateStatus(r.ctx, created, metav1.UpdateOptions{})
	return err
}

// createSecret makes a Secret labelled as Strimzi labels the Secrets it writes for kind.
func (r *opRig) createSecret(ns, name, kind string, data map[string][]byte) error {
	_, err := r.cp.Client.CoreV1().Secrets(ns).Create(r.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{strimzi.LabelCluster: opKafka, "strimzi.io/kind": kind}},
		Data: data,
	}, metav1.CreateOptions{})
	return err
}

// renewCA puts a new CA into the cluster CA Secret, the old one beside it as Strimzi does during
// a renewal, which every binding Secret's truststore must then carry.
func (r *opRig) renewCA(ns string, newCA, oldCA []byte) {
	r.t.Helper()
	secrets := r.cp.Client.CoreV1().Secrets(ns)
	s, err := secrets.Get(r.ctx, strimzi.ClusterCASecretName(opKafka), metav1.GetOptions{})
	r.must(err)
	s.Data = map[string][]byte{"ca.crt": newCA, "ca-2025-01-01T00-00-00Z.crt": oldCA}
	_, err = secrets.Update(r.ctx, s, metav1.UpdateOptions{})
	r.must(err)
}

// parallel runs f(0..n-1) on 16 goroutines and fails on the first error.
func (r *opRig) parallel(n int, f func(i int) error) {
	r.t.Helper()
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || firstErr.Load() != nil {
					return
				}
				if err := f(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		r.t.Fatal(err)
	}
}

func (r *opRig) must(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

// opView is the test's own informer view of a namespace's connections and binding Secrets.
type opView struct {
	conns   kafkalinklisters.KafkaConnectionNamespaceLister
	secrets corelisters.SecretNamespaceLister
	// changes counts, by name, the binding Secrets' changes (a write that changed nothing,
	// such as an apply of the same data, makes none).
	mu      sync.Mutex
	changes map[string]int
}

// changeCounts copies the counts of binding Secret changes.
func (v *opView) changeCounts() map[string]int {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[string]int, len(v.changes))
	for k, n := range v.changes {
		out[k] = n
	}
	return out
}

func (v *opView) changed(obj any) {
	if s, ok := obj.(*corev1.Secret); ok {
		v.mu.Lock()
		v.changes[s.Name]++
		v.mu.Unlock()
	}
}

// view starts informers on ns for the rest of the test.
func (r *opRig) view(ns string) *opView {
	r.t.Helper()
	ctx, cancel := context.WithCancel(r.ctx)
	r.t.Cleanup(cancel)
	klf := kafkalinkinformers.NewSharedInformerFactoryWithOptions(r.kl, 0, kafkalinkinformers.WithNamespace(ns))
	kf := kubeinformers.NewSharedInformerFactoryWithOptions(r.cp.Client, 0, kubeinformers.WithNamespace(ns),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = wellknown.LabelBinding }))
	v := &opView{
		conns:   klf.Kafka().V1beta2().KafkaConnections().Lister().KafkaConnections(ns),
		secrets: kf.Core().V1().Secrets().Lister().Secrets(ns),
		changes: map[string]int{},
	}
	_, err := kf.Core().V1().Secrets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: v.changed,
		UpdateFunc: func(oldObj, newObj any) {
			if oldObj.(*corev1.Secret).ResourceVersion != newObj.(*corev1.Secret).ResourceVersion {
				v.changed(newObj)
			}
		},
	})
	r.must(err)
	klf.Start(ctx.Done())
	kf.Start(ctx.Done())
	klf.WaitForCacheSync(ctx.Done())
	kf.WaitForCacheSync(ctx.Done())
	return v
}

// readyNames are the connections whose Ready condition is True for their current generation.
func (v *opView) readyNames() map[string]bool {
	conns, _ := v.conns.List(labels.Everything())
	out := map[string]bool{}
	for _, c := range conns {
		if opReady(c) {
			out[c.Name] = true
		}
	}
	return out
}

func opReady(c *kafkav1beta2.KafkaConnection) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == "Ready" && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == c.Generation {
			return true
		}
	}
	return false
}

// trusting are the binding Secrets whose truststore holds caPEM.
func (v *opView) trusting(caPEM []byte) map[string]bool {
	secrets, _ := v.secrets.List(labels.Everything())
	out := map[string]bool{}
	for _, s := range secrets {
		if bytes.Contains(s.Data["ssl.truststore.crt"], bytes.TrimSpace(caPEM)) {
			out[s.Name] = true
		}
	}
	return out
}

// waitUntil polls cond every 100 ms until it holds, failing after opWaitLimit or when one of
// the running processes exits.
func (r *opRig) waitUntil(what string, running []*opProc, cond func() (done bool, progress string)) time.Duration {
	r.t.Helper()
	return r.waitUntilFor(what, opWaitLimit, running, cond)
}

// waitUntilFor is waitUntil with another limit.
func (r *opRig) waitUntilFor(what string, limit time.Duration, running []*opProc, cond func() (done bool, progress string)) time.Duration {
	r.t.Helper()
	start, lastLog := time.Now(), time.Now()
	for {
		done, progress := cond()
		if done {
			return time.Since(start)
		}
		for _, p := range running {
			select {
			case <-p.Done():
				r.t.Fatalf("%s: operator %s exited (%v) at %s\n%s", what, p.name, p.Err(), progress, opTail(p.Log()))
			default:
			}
		}
		if time.Since(start) > limit {
			r.t.Fatalf("%s: still %s after %s", what, progress, limit)
		}
		if time.Since(lastLog) > 15*time.Second {
			r.t.Logf("%s: %s", what, progress)
			lastLog = time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func opTail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

// opWrite is one write request from the API server's audit log.
type opWrite struct {
	Verb  string `json:"verb"`
	Stage string `json:"stage"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived metav1.MicroTime `json:"requestReceivedTimestamp"`
	Completed       metav1.MicroTime `json:"stageTimestamp"`
}

// object names what was written: "secrets ns/name", "kafkaconnections/status ns/name".
func (w opWrite) object() string {
	kind := w.ObjectRef.Resource
	if w.ObjectRef.Subresource != "" {
		kind += "/" + w.ObjectRef.Subresource
	}
	return kind + " " + w.ObjectRef.Namespace + "/" + w.ObjectRef.Name
}

// writes reads every completed write request of the audit log, in the order they completed,
// including those of earlier kube-apiserver processes (the log is appended to across restarts).
func (r *opRig) writes() []opWrite {
	r.t.Helper()
	f, err := os.Open(r.cp.AuditLog)
	r.must(err)
	defer f.Close()
	var out []opWrite
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for s.Scan() {
		var w opWrite
		if json.Unmarshal(s.Bytes(), &w) == nil && w.Stage == "ResponseComplete" {
			out = append(out, w)
		}
	}
	r.must(s.Err())
	return out
}

// opWritesBy are the writes of one user.
func opWritesBy(all []opWrite, user string) []opWrite {
	var out []opWrite
	for _, w := range all {
		if w.User.Username == user {
			out = append(out, w)
		}
	}
	return out
}

// opByKind counts writes by verb and resource, sorted, for a log line.
func opByKind(ws []opWrite) string {
	counts := map[string]int{}
	for _, w := range ws {
		kind, _, _ := strings.Cut(w.object(), " ")
		counts[w.Verb+" "+kind]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// checkBindings compares every binding Secret of ns with a fresh run of the pure assembly
// (binding.Build) on what the API server holds now, once for each of caData in turn as the
// cluster CA Secret's data (the Secret as it is when none is given). whole[i] names the Secrets
// equal to the assembly with caData[i], entry for entry and byte for byte. A Secret equal to none
// is half-written, one without its controlling connection (by UID) is orphaned, and a Ready
// connection without its Secret is lost: each fails the test.
func (r *opRig) checkBindings(ns string, caData ...map[string][]byte) (whole []map[string]bool, bad opBad) {
	r.t.Helper()
	kafkaObj, err := r.dyn.Resource(r.gvr("kafkas")).Namespace(ns).Get(r.ctx, opKafka, metav1.GetOptions{})
	r.must(err)
	kafka, err := strimzi.ParseKafka(kafkaObj.Object)
	r.must(err)
	userList, err := r.dyn.Resource(r.gvr("kafkausers")).Namespace(ns).List(r.ctx, metav1.ListOptions{})
	r.must(err)
	users := map[string]*strimzi.KafkaUser{}
	for _, u := range userList.Items {
		parsed, err := strimzi.ParseKafkaUser(u.Object)
		r.must(err)
		users[u.GetName()] = parsed
	}
	secretList, err := r.cp.Client.CoreV1().Secrets(ns).List(r.ctx, metav1.ListOptions{})
	r.must(err)
	secrets := map[string]*corev1.Secret{}
	for i := range secretList.Items {
		secrets[secretList.Items[i].Name] = &secretList.Items[i]
	}
	connList, err := r.kl.KafkaV1beta2().KafkaConnections(ns).List(r.ctx, metav1.ListOptions{})
	r.must(err)
	conns := map[string]*kafkav1beta2.KafkaConnection{}
	for i := range connList.Items {
		conns[connList.Items[i].Name] = &connList.Items[i]
	}
	caName := strimzi.ClusterCASecretName(opKafka)
	if len(caData) == 0 {
		caData = append(caData, secrets[caName].Data)
	}
	whole = make([]map[string]bool, len(caData))
	for i := range whole {
		whole[i] = map[string]bool{}
	}
	for name, s := range secrets {
		if s.Labels[wellknown.LabelBinding] == "" {
			continue
		}
		c := conns[name]
		if owner := metav1.GetControllerOf(s); owner == nil || c == nil || owner.UID != c.UID {
			r.t.Errorf("binding Secret %s/%s is orphaned: controller %v, connection exists %t", ns, name, owner, c != nil)
			bad.orphaned++
			continue
		}
		user := users[c.Spec.User.Name]
		var userSecret *binding.SecretData
		if us := secrets[user.SecretName()]; us != nil {
			userSecret = &binding.SecretData{Name: us.Name, Data: us.Data}
		}
		matched := false
		for i, ca := range caData {
			want, failure := binding.Build(binding.Input{
				Kafka: kafka, CurrentListener: c.Status.Listener, StoreFormats: c.Spec.StoreFormats,
				User: user, UserSecret: userSecret, CASecret: &binding.SecretData{Name: caName, Data: ca},
			})
			if failure != nil {
				r.t.Fatalf("the assembly of %s fails: %s", name, failure.Message)
			}
			if opSameData(s.Data, want.Data) {
				whole[i][name], matched = true, true
			}
		}
		if !matched {
			r.t.Errorf("binding Secret %s/%s is half-written: it matches no assembly (entries %v)", ns, name, opKeys(s.Data))
			bad.halfWritten++
		}
	}
	for name, c := range conns {
		if opReady(c) && secrets[name] == nil {
			r.t.Errorf("connection %s/%s is Ready without its Secret", ns, name)
			bad.lost++
		}
	}
	return whole, bad
}

// opBad counts what checkBindings found wrong.
type opBad struct{ halfWritten, orphaned, lost int }

func (b opBad) String() string {
	return fmt.Sprintf("%d Secrets half-written, %d orphaned, %d lost", b.halfWritten, b.orphaned, b.lost)
}

func opKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// opSameData reports whether two Secrets' data have the same entries with the same bytes.
func opSameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// newOpCA makes a CA certificate for the Kafka's cluster CA Secret.
func newOpCA(t *testing.T, name string) []byte {
	return bindingtest.NewCA(t, name, time.Now().Add(-time.Hour)).CertPEM
}
