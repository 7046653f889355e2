package e2e_test

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/test/framework"
	"github.com/kafkalink/kafkalink/test/kubelet"
)

// waitLimit bounds every single wait; it guards against hangs and is not a performance assertion.
const waitLimit = 60 * time.Second

// testBudget bounds the whole scenario after the control plane, operator and kubelet are up.
const testBudget = 150 * time.Second

// The names the scenario uses: Strimzi's objects in "kafka", the application's in "apps".
const (
	nsKafka        = "kafka"
	nsApps         = "apps"
	clusterName    = "my-cluster"
	listenerName   = "scram"
	userName       = "my-user"
	topic          = "orders"
	backendService = clusterName + "-kafka-bootstrap"
	caSecretName   = clusterName + "-cluster-ca-cert"
	gatewayName    = "my-gateway"
	gatewayCert    = "my-gateway-tls"
	routeName      = "my-cluster"
	routeHostnames = "my-cluster-%.apps.svc.cluster.local"
	bootstrapHost  = "my-cluster-bootstrap.apps.svc.cluster.local"
	proxyImage     = "ghcr.io/kafkalink/kafkalink-proxy:e2e"
	directConn     = "orders-app"
	routeConn      = "orders-app-via-gateway"
	adminUser      = "admin"
	adminPassword  = "admin-Pa55word"
)

// brokerHost is the proxy's in-cluster hostname of broker id.
func brokerHost(id int) string {
	return fmt.Sprintf("my-cluster-broker-%d.apps.svc.cluster.local", id)
}

// isProxyHost reports whether host is one of the proxy's in-cluster hostnames for the route.
func isProxyHost(host string) bool {
	if host == bootstrapHost {
		return true
	}
	id, ok := strings.CutPrefix(host, "my-cluster-broker-")
	if !ok {
		return false
	}
	id, ok = strings.CutSuffix(id, ".apps.svc.cluster.local")
	if !ok {
		return false
	}
	_, err := strconv.Atoi(id)
	return err == nil
}

var (
	gvrKafka     = schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1", Resource: "kafkas"}
	gvrKafkaUser = schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1", Resource: "kafkausers"}
)

// env is one control plane with the operator, the local kubelet and kfake.
type env struct {
	t      *testing.T
	ctx    context.Context
	cp     *framework.ControlPlane
	kube   kubernetes.Interface
	kl     kafkalinkclient.Interface
	dyn    dynamic.Interface
	op     *framework.Process
	runner *kubelet.Runner
	work   string
	kafka  *kafkaCluster
}

// newEnv starts the control plane, installs the operator's RBAC, builds and starts the operator
// and the local kubelet with the proxy binary, whose pods resolve the names in aliases, by
// default the backend Service's to loopback. Everything stops at the end of the test.
func newEnv(t *testing.T, aliases ...corev1.HostAlias) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	if err := kubelet.CheckPrivateHosts(); err != nil {
		t.Skipf("the proxy needs the backend Service name to resolve, which the runner emulates with a private /etc/hosts: %v", err)
	}
	if len(aliases) == 0 {
		aliases = []corev1.HostAlias{{IP: "127.0.0.1", Hostnames: []string{
			backendService + "." + nsKafka, backendService + "." + nsKafka + ".svc", backendService + "." + nsKafka + ".svc.cluster.local",
		}}}
	}
	logger, ctx := ktesting.NewTestContext(t)
	e := &env{t: t, ctx: ctx, work: t.TempDir()}
	var wg sync.WaitGroup
	var opBin, proxyBin string
	var opErr, proxyErr error
	// The builds are independent of the control plane; on a cold cache they take longest.
	wg.Go(func() { opBin, opErr = framework.BuildBinary("./cmd/kafkalink-operator", e.work) })
	wg.Go(func() { proxyBin, proxyErr = framework.BuildBinary("./cmd/kafkalink-proxy", e.work) })
	cp, err := framework.Start(ctx, framework.Options{Controllers: "*,-deployment,-replicaset", Log: t.Logf})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if opErr != nil || proxyErr != nil {
		t.Fatal(opErr, proxyErr)
	}
	e.cp, e.kube = cp, cp.Client
	if e.kl, err = kafkalinkclient.NewForConfig(cp.Config); err != nil {
		t.Fatal(err)
	}
	if e.dyn, err = dynamic.NewForConfig(cp.Config); err != nil {
		t.Fatal(err)
	}
	kubeconfig, _, err := cp.InstallOperatorRBAC(ctx)
	if err != nil {
		t.Fatal(err)
	}

	health, metrics := framework.FreeAddress(), framework.FreeAddress()
	e.op, err = framework.StartProcess(e.work, "operator", opBin,
		"--kubeconfig="+kubeconfig, "--health-address="+health, "--metrics-address="+metrics,
		"--leader-elect=false", "--proxy-image="+proxyImage, "--v=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.op.Stop(10 * time.Second) })
	if err := framework.WaitHTTP200(ctx, "http://"+health+"/readyz", waitLimit); err != nil {
		t.Fatalf("%v\n%s", err, e.op.Log())
	}

	// The runner plays the kubelet for the proxy Deployment. Cluster DNS is played by host
	// aliases: the backend Service's names resolve to loopback, where kfake listens on the
	// Service's port.
	e.runner, err = kubelet.New(kubelet.Options{
		Client:      cp.Client,
		Images:      map[string]string{proxyImage: proxyBin},
		WorkDir:     filepath.Join(e.work, "kubelet"),
		HostAliases: aliases,
		// The proxy binds every interface in a pod; here it keeps to loopback.
		ExtraArgs:   []string{"--bind-address=127.0.0.1"},
		StopTimeout: 5 * time.Second,
		Logger:      &logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- e.runner.Run(runCtx) }()
	t.Cleanup(func() {
		stopRunner()
		select {
		case <-runDone:
		case <-time.After(30 * time.Second):
			t.Error("the local kubelet did not stop within 30s")
		}
	})
	return e
}

// limit makes every later API call and wait share one budget, so a broken product fails the
// test in bounded time even when each wait is within its own limit. The demo runs without one.
func (e *env) limit(budget time.Duration) {
	ctx, cancel := context.WithTimeout(e.ctx, budget)
	e.t.Cleanup(cancel)
	e.ctx = ctx
}

// eventually polls cond until it holds, failing the test with the last detail and the logs of
// the operator and the proxy when it does not within waitLimit.
func (e *env) eventually(what string, cond func() (bool, string)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, waitLimit, true, func(context.Context) (bool, error) {
		ok, detail := cond()
		last = detail
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("waiting for %s: %v\nlast: %s\n%s", what, err, last, e.logs())
	}
}

// logs returns the tails of the operator's and the proxy's logs, for failure messages.
func (e *env) logs() string {
	tail := func(s string) string {
		if len(s) > 6000 {
			return "..." + s[len(s)-6000:]
		}
		return s
	}
	out := "operator log tail:\n" + tail(e.op.Log())
	if p, ok := e.runner.Pod(nsApps, gatewayName); ok {
		if b, err := os.ReadFile(p.LogPath); err == nil {
			out += "\nproxy log tail:\n" + tail(string(b))
		}
	}
	return out
}

// apply runs kubectl apply with YAML, as a user would.
func (e *env) apply(yaml string) {
	e.t.Helper()
	f := filepath.Join(e.work, fmt.Sprintf("apply-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
		e.t.Fatal(err)
	}
	if out, err := e.cp.Kubectl("apply", "-f", f); err != nil {
		e.t.Fatalf("%v\n%s", err, out)
	}
}

func (e *env) kubectl(args ...string) string {
	e.t.Helper()
	out, err := e.cp.Kubectl(args...)
	if err != nil {
		e.t.Fatalf("%v\n%s", err, out)
	}
	return out
}

// setSecret creates or replaces a Secret.
func (e *env) setSecret(s *corev1.Secret) {
	e.t.Helper()
	existing, err := e.kube.CoreV1().Secrets(s.Namespace).Get(e.ctx, s.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = e.kube.CoreV1().Secrets(s.Namespace).Create(e.ctx, s, metav1.CreateOptions{})
	case err == nil:
		s.ResourceVersion = existing.ResourceVersion
		_, err = e.kube.CoreV1().Secrets(s.Namespace).Update(e.ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// strimziSecret is a Secret labelled as Strimzi labels its CA and user Secrets.
func strimziSecret(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: nsKafka, Name: name, Labels: map[string]string{
			"strimzi.io/cluster": clusterName, "strimzi.io/kind": "Kafka",
		}},
		Data: data,
	}
}

// setClusterCA writes <cluster>-cluster-ca-cert: the first certificate as ca.crt and the others
// as the dated entries Strimzi keeps during a CA renewal.
func (e *env) setClusterCA(certs ...[]byte) {
	e.t.Helper()
	data := map[string][]byte{"ca.crt": certs[0]}
	for i, c := range certs[1:] {
		data[fmt.Sprintf("ca-2025-0%d-01T00-00-00Z.crt", i+1)] = c
	}
	e.setSecret(strimziSecret(caSecretName, data))
}

func scramUserSecret(password string) map[string][]byte {
	return map[string][]byte{
		"password":         []byte(password),
		"sasl.jaas.config": []byte(`org.apache.kafka.common.security.scram.ScramLoginModule required username="` + userName + `" password="` + password + `";`),
	}
}

// createStrimziObjects creates the Kafka (status pointing at kfake, as Strimzi reports its
// bootstrap) and the reconciled KafkaUser, as Strimzi's operators would show them.
func (e *env) createStrimziObjects(bootstrap string) {
	e.t.Helper()
	kafka := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kafka.strimzi.io/v1", "kind": "Kafka",
		"metadata": map[string]any{"name": clusterName, "namespace": nsKafka},
		"spec": map[string]any{"kafka": map[string]any{"listeners": []any{
			map[string]any{"name": listenerName, "port": int64(9093), "type": "internal", "tls": true,
				"authentication": map[string]any{"type": "scram-sha-512"}},
		}}},
	}}
	kafka, err := e.dyn.Resource(gvrKafka).Namespace(nsKafka).Create(e.ctx, kafka, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	kafka.Object["status"] = map[string]any{
		"observedGeneration": kafka.GetGeneration(),
		"conditions":         []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}},
		"listeners":          []any{map[string]any{"name": listenerName, "bootstrapServers": bootstrap}},
	}
	if _, err := e.dyn.Resource(gvrKafka).Namespace(nsKafka).UpdateStatus(e.ctx, kafka, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	user := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kafka.strimzi.io/v1", "kind": "KafkaUser",
		"metadata": map[string]any{"name": userName, "namespace": nsKafka, "labels": map[string]any{"strimzi.io/cluster": clusterName}},
		"spec":     map[string]any{"authentication": map[string]any{"type": "scram-sha-512"}},
	}}
	if user, err = e.dyn.Resource(gvrKafkaUser).Namespace(nsKafka).Create(e.ctx, user, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	user.Object["status"] = map[string]any{
		"observedGeneration": user.GetGeneration(),
		"username":           userName,
		"secret":             userName,
		"conditions":         []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}},
	}
	if _, err := e.dyn.Resource(gvrKafkaUser).Namespace(nsKafka).UpdateStatus(e.ctx, user, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// waitBound waits until a KafkaConnection is Ready with reason Bound for its generation.
func (e *env) waitBound(name string) {
	e.t.Helper()
	e.eventually("KafkaConnection "+nsApps+"/"+name+" to be Bound", func() (bool, string) {
		c, err := e.kl.KafkaV1beta2().KafkaConnections(nsApps).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == "Ready" {
				return cond.Reason == "Bound" && cond.ObservedGeneration == c.Generation, cond.Reason + ": " + cond.Message
			}
		}
		return false, "no Ready condition"
	})
}

// bindingData waits until the binding Secret satisfies ok and returns its data.
func (e *env) bindingData(name, what string, ok func(map[string][]byte) bool) map[string][]byte {
	e.t.Helper()
	var data map[string][]byte
	e.eventually(fmt.Sprintf("binding Secret %s/%s: %s", nsApps, name, what), func() (bool, string) {
		s, err := e.kube.CoreV1().Secrets(nsApps).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		data = s.Data
		return ok(s.Data), fmt.Sprintf("bootstrap.servers=%s", s.Data["bootstrap.servers"])
	})
	return data
}

// kafkaCluster is kfake with TLS (a certificate the test can swap, as brokers roll to a
// certificate of a new CA) and SCRAM-SHA-512.
type kafkaCluster struct {
	c     *kfake.Cluster
	cert  atomic.Pointer[tls.Certificate]
	roots *x509.CertPool // every cluster CA so far, for the test's own admin client
}

func startKafka(t *testing.T, ca *bindingtest.CA) *kafkaCluster {
	t.Helper()
	k := &kafkaCluster{roots: x509.NewCertPool()}
	k.serveCertificateOf(t, ca)
	serverTLS := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return k.cert.Load(), nil
	}}
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, topic), kfake.TLS(serverTLS),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", adminUser, adminPassword))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	k.c = c
	return k
}

// serveCertificateOf makes every broker present a certificate signed by ca from the next
// handshake on, as a rolling restart after a CA key replacement does. Its names are those of
// the bootstrap Service and loopback, where the Service really leads.
func (k *kafkaCluster) serveCertificateOf(t *testing.T, ca *bindingtest.CA) {
	t.Helper()
	_, _, pair := ca.Issue(t, clusterName+"-kafka-brokers", []string{
		backendService + "." + nsKafka, backendService + "." + nsKafka + ".svc", backendService + "." + nsKafka + ".svc.cluster.local",
		"127.0.0.1", "localhost",
	}, false, false)
	k.roots.AddCert(ca.Cert)
	k.cert.Store(&pair)
}

// bootstrap is kfake's addresses, as the Kafka status reports them.
func (k *kafkaCluster) bootstrap() string { return strings.Join(k.c.ListenAddrs(), ",") }

// port0 is the port of the first broker, which the backend Service exposes.
func (k *kafkaCluster) port0(t *testing.T) int {
	t.Helper()
	_, p, err := net.SplitHostPort(k.c.ListenAddrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

func (k *kafkaCluster) adminClient(t *testing.T) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.c.ListenAddrs()...),
		kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: k.roots}),
		kgo.SASL(scram.Auth{User: adminUser, Pass: adminPassword}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// setPassword creates or changes a SCRAM-SHA-512 user, as Strimzi's User Operator does through
// the Admin API before it updates the user's Secret.
func (k *kafkaCluster) setPassword(t *testing.T, user, password string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := k.adminClient(t)
	defer cl.Close()
	salt := make([]byte, 24)
	if _, err := rand.Read(salt); err != nil {
		t.Fatal(err)
	}
	const iterations = 4096
	salted, err := pbkdf2.Key(sha512.New, password, salt, iterations, sha512.Size)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = user, 2, iterations, salt, salted // 2: SCRAM-SHA-512
	req.Upsertions = append(req.Upsertions, up)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("AlterUserScramCredentials: %v", err)
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatalf("AlterUserScramCredentials %s: %v", r.User, err)
		}
	}
}

// allowSASLHandshakeV0 widens SaslHandshake to v0..v1 in kfake's ApiVersions answers:
// librdkafka (kcat) wants v0 listed and otherwise reports "SASL Handshake not supported by
// broker" (see TESTING-NOTES). The answer is kfake's own, captured once, with that one change.
func (k *kafkaCluster) allowSASLHandshakeV0(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := k.adminClient(t)
	defer cl.Close()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	keys := append([]kmsg.ApiVersionsResponseApiKey(nil), resp.ApiKeys...)
	for i := range keys {
		if keys[i].ApiKey == int16(kmsg.SASLHandshake) {
			keys[i].MinVersion = 0
		}
	}
	k.c.ControlKey(int16(kmsg.ApiVersions), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.c.KeepControl()
		r := req.(*kmsg.ApiVersionsRequest)
		if r.Version > resp.Version {
			return nil, nil, false // kfake answers UNSUPPORTED_VERSION, as a broker does
		}
		out := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		out.ApiKeys = keys
		return out, nil, true
	})
}
