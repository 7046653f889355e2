// Package hostile_test runs the operator against a real control plane with objects a hostile or
// careless tenant could write, beside a well-behaved team whose gateway and connection must keep
// working throughout, with no proxy restart.
package hostile_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/pkg/gateway"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
	"github.com/kafkalink/kafkalink/test/framework"
)

// waitLimit bounds every wait; it guards against hangs and is not a performance assertion.
const waitLimit = 90 * time.Second

var (
	cp      *framework.ControlPlane
	kube    kubernetes.Interface
	kl      kafkalinkclient.Interface
	op      *framework.Process
	workDir string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping control-plane tests in -short mode")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	var err error
	cp, err = framework.Start(ctx, framework.Options{Log: func(f string, a ...any) { fmt.Printf(f+"\n", a...) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer cp.Stop()
	kubeconfig, _, err := cp.InstallOperatorRBAC(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kube = cp.Client
	if kl, err = kafkalinkclient.NewForConfig(cp.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if workDir, err = os.MkdirTemp("", "kafkalink-hostile-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	binary, err := framework.BuildBinary("./cmd/kafkalink-operator", workDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	health := framework.FreeAddress()
	if op, err = framework.StartProcess(workDir, "operator", binary, "--kubeconfig="+kubeconfig, "--health-address="+health,
		"--metrics-address="+framework.FreeAddress(), "--leader-elect=false", "--v=2"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = op.Stop(10 * time.Second) }()
	if err := framework.WaitHTTP200(ctx, "http://"+health+"/readyz", waitLimit); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n%s", err, op.Log())
		return 1
	}
	return m.Run()
}

func poll(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(250 * time.Millisecond)
	}
	log := op.Log()
	if len(log) > 4000 {
		log = log[len(log)-4000:]
	}
	t.Fatalf("timed out waiting for %s (last: %s)\n%s", what, last, log)
}

func apply(t *testing.T, yamlText string) {
	t.Helper()
	f, err := os.CreateTemp(workDir, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(yamlText); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := cp.Kubectl("apply", "-f", f.Name()); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func namespaces(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func tlsSecret(t *testing.T, ns, name string, ca *bindingtest.CA, hosts ...string) {
	t.Helper()
	certPEM, keyPEM, _ := ca.Issue(t, name, hosts, false, false)
	_, err := kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": ca.CertPEM},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func condition(conds []metav1.Condition, typ string) (metav1.Condition, bool) {
	for _, c := range conds {
		if c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

func waitListener(t *testing.T, ns, gw, condType string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	poll(t, fmt.Sprintf("listener of %s/%s %s=%s %s", ns, gw, condType, status, reason), func() (bool, string) {
		g, err := kl.KroxyliciousV1alpha1().KafkaGateways(ns).Get(context.Background(), gw, metav1.GetOptions{})
		if err != nil || len(g.Status.Listeners) == 0 {
			return false, fmt.Sprint(err)
		}
		c, ok := condition(g.Status.Listeners[0].Conditions, condType)
		return ok && c.Status == status && c.Reason == reason, c.Reason + ": " + c.Message
	})
}

func waitRoute(t *testing.T, ns, route, condType string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	poll(t, fmt.Sprintf("route %s/%s %s=%s %s", ns, route, condType, status, reason), func() (bool, string) {
		r, err := kl.KroxyliciousV1alpha1().KafkaRoutes(ns).Get(context.Background(), route, metav1.GetOptions{})
		if err != nil || len(r.Status.Parents) == 0 {
			return false, fmt.Sprint(err)
		}
		c, ok := condition(r.Status.Parents[0].Conditions, condType)
		return ok && c.Status == status && c.Reason == reason && c.ObservedGeneration == r.Generation, c.Reason + ": " + c.Message
	})
}

func waitConnection(t *testing.T, ns, name, reason string) *kafkav1beta2.KafkaConnection {
	t.Helper()
	var conn *kafkav1beta2.KafkaConnection
	poll(t, fmt.Sprintf("KafkaConnection %s/%s Ready reason %s", ns, name, reason), func() (bool, string) {
		c, err := kl.KafkaV1beta2().KafkaConnections(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond, ok := condition(c.Status.Conditions, "Ready")
		conn = c
		return ok && cond.Reason == reason && cond.ObservedGeneration == c.Generation, cond.Reason + ": " + cond.Message
	})
	return conn
}

// hugeRoute is the 105 KB KafkaRoute of finding H2: 16 hostnames × 16 lists of 1,024 broker ids.
func hugeRoute(ns string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kroxylicious.io/v1alpha1\nkind: KafkaRoute\nmetadata: {name: huge, namespace: %s}\nspec:\n  parentRefs:\n  - name: gw\n    brokers:\n", ns)
	for l := range 16 {
		b.WriteString("    - advertisedBrokerIds: [")
		for i := range 1024 {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprint(&b, l*1024+i)
		}
		b.WriteString("]\n")
	}
	b.WriteString("    hostnames:\n")
	for h := range 16 {
		fmt.Fprintf(&b, "    - c%02d-%%.example.com\n", h)
	}
	b.WriteString("    rules: [{name: r, backendRefs: [{kind: Service, name: kafka, port: 9093}]}]\n")
	return b.String()
}

func TestHostileObjectsLeaveAWellBehavedTeamWorking(t *testing.T) {
	ctx := context.Background()
	namespaces(t, "good", "attacker", "victims", "careless")
	ca := bindingtest.NewCA(t, "good CA", time.Now().Add(-time.Hour))

	// The squatter comes first, so it is the oldest policy on good/kafka: without a grant it must
	// not win over the Service's own policy.
	apply(t, `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaBackendTLSPolicy
metadata: {name: squatter, namespace: attacker}
spec:
  targetRefs: [{kind: Service, name: kafka, namespace: good}]
  validation: {hostname: evil.example.com}
`)
	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution

	// The well-behaved team: a gateway, its own backend TLS policy, a route and a connection.
	tlsSecret(t, "good", "good-cert", ca, "*.good.svc.cluster.local")
	if _, err := kube.CoreV1().Secrets("good").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kafka-ca"},
		Data: map[string][]byte{"ca.crt": ca.CertPEM}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	apply(t, `
apiVersion: v1
kind: Service
metadata: {name: kafka, namespace: good}
spec: {ports: [{name: tls, port: 9093}]}
---
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaBackendTLSPolicy
metadata: {name: own, namespace: good}
spec:
  targetRefs: [{kind: Service, name: kafka}]
  validation: {caCertificateRefs: [{kind: Secret, name: kafka-ca}], hostname: kafka.good}
---
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGateway
metadata: {name: gw, namespace: good}
spec:
  listeners:
  - name: tls
    port: 9092
    protocol: kroxylicious.io/kafka-tls
    tls: {certificateRefs: [{kind: Secret, name: good-cert}]}
---
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaRoute
metadata: {name: r, namespace: good}
spec:
  parentRefs:
  - name: gw
    sectionName: tls
    brokers: [{advertisedBrokerIds: [0, 1, 2]}]
    hostnames: [my-cluster-%.svc.cluster.local]
    rules: [{name: all, backendRefs: [{kind: Service, name: kafka, port: 9093}]}]
---
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: app, namespace: good}
spec:
  kafka: {apiVersion: kroxylicious.io/v1alpha1, kind: KafkaRoute, name: r}
`)
	waitListener(t, "good", "gw", gateway.ConditionResolvedRefs, metav1.ConditionTrue, gateway.ReasonResolvedRefs)
	waitRoute(t, "good", "r", gateway.ConditionAccepted, metav1.ConditionTrue, gateway.ReasonAccepted)
	waitRoute(t, "good", "r", gateway.ConditionResolvedRefs, metav1.ConditionTrue, gateway.ReasonResolvedRefs)
	waitConnection(t, "good", "app", "Bound")
	deploymentState := func() (int64, string) {
		d, err := kube.AppsV1().Deployments("good").Get(ctx, gateway.DeploymentName("gw"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Generation, d.Spec.Template.Annotations[wellknown.AnnotationRestartChecksum]
	}
	gen0, sum0 := deploymentState()
	cm0, err := kube.CoreV1().ConfigMaps("good").Get(ctx, gateway.ConfigMapName("gw"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm0.Data[gateway.ConfigKey], "serverName: kafka.good") {
		t.Errorf("the good route does not use its own backend TLS policy:\n%s", cm0.Data[gateway.ConfigKey])
	}

	t.Run("the squatting policy from another namespace is refused, not applied", func(t *testing.T) {
		poll(t, "squatter Accepted=False", func() (bool, string) {
			p, err := kl.KroxyliciousV1alpha1().KafkaBackendTLSPolicies("attacker").Get(ctx, "squatter", metav1.GetOptions{})
			if err != nil || len(p.Status.Ancestors) == 0 {
				return false, fmt.Sprint(err)
			}
			c, _ := condition(p.Status.Ancestors[0].Conditions, gateway.ConditionAccepted)
			return c.Status == metav1.ConditionFalse && c.Reason == gateway.ReasonInvalid, c.Reason + ": " + c.Message
		})
	})

	t.Run("the 105 KB route is refused at admission", func(t *testing.T) {
		text := hugeRoute("attacker")
		if len(text) < 100_000 {
			t.Fatalf("the route is only %d bytes", len(text))
		}
		var route kroxyliciousv1alpha1.KafkaRoute
		if err := yaml.Unmarshal([]byte(text), &route); err != nil {
			t.Fatal(err)
		}
		_, err := kl.KroxyliciousV1alpha1().KafkaRoutes("attacker").Create(ctx, &route, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "must have at most 256 items") {
			t.Fatalf("created, or refused for another reason: %v", err)
		}
	})

	t.Run("a gateway naming another namespace's Secret without a grant gets nothing from it", func(t *testing.T) {
		tlsSecret(t, "victims", "victim-cert", bindingtest.NewCA(t, "victim CA", time.Now().Add(-time.Hour)), "*.victims.svc.cluster.local")
		apply(t, `
apiVersion: v1
kind: Service
metadata: {name: kafka, namespace: attacker}
spec: {ports: [{name: tls, port: 9093}]}
---
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGateway
metadata: {name: gw, namespace: attacker}
spec:
  listeners:
  - name: tls
    port: 9092
    protocol: kroxylicious.io/kafka-tls
    tls: {certificateRefs: [{kind: Secret, name: victim-cert, namespace: victims}]}
---
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaRoute
metadata: {name: r, namespace: attacker}
spec:
  parentRefs:
  - name: gw
    sectionName: tls
    brokers: [{advertisedBrokerIds: [0]}]
    hostnames: [probe-%.svc.cluster.local]
    rules: [{name: all, backendRefs: [{kind: Service, name: kafka, port: 9093}]}]
---
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: probe, namespace: attacker}
spec:
  kafka: {apiVersion: kroxylicious.io/v1alpha1, kind: KafkaRoute, name: r}
`)
		waitListener(t, "attacker", "gw", gateway.ConditionResolvedRefs, metav1.ConditionFalse, gateway.ReasonRefNotPermitted)
		conn := waitConnection(t, "attacker", "probe", "CACertificateMissing")
		if conn.Status.Binding != nil {
			t.Errorf("the probe connection has a binding: %+v", conn.Status.Binding)
		}
		secrets, err := kube.CoreV1().Secrets("attacker").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets.Items {
			t.Errorf("Secret %s was written into the attacker's namespace", s.Name)
		}
	})

	t.Run("a malformed certificate Secret keeps its listener unprogrammed", func(t *testing.T) {
		cert, _ := framework.TestKeyPair()
		if _, err := kube.CoreV1().Secrets("careless").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bad-cert"},
			Data: map[string][]byte{"tls.crt": cert, "tls.key": []byte("not a key")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		apply(t, `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGateway
metadata: {name: gw, namespace: careless}
spec:
  listeners:
  - name: tls
    port: 9092
    protocol: kroxylicious.io/kafka-tls
    tls: {certificateRefs: [{kind: Secret, name: bad-cert}]}
`)
		waitListener(t, "careless", "gw", gateway.ConditionResolvedRefs, metav1.ConditionFalse, gateway.ReasonInvalidCertificateRef)
		cm, err := kube.CoreV1().ConfigMaps("careless").Get(ctx, gateway.ConfigMapName("gw"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(cm.Data[gateway.ConfigKey], "bad-cert") {
			t.Errorf("the proxy configuration uses the malformed pair:\n%s", cm.Data[gateway.ConfigKey])
		}
	})

	t.Run("the well-behaved team kept working, with no proxy restart", func(t *testing.T) {
		waitListener(t, "good", "gw", gateway.ConditionResolvedRefs, metav1.ConditionTrue, gateway.ReasonResolvedRefs)
		waitRoute(t, "good", "r", gateway.ConditionAccepted, metav1.ConditionTrue, gateway.ReasonAccepted)
		waitRoute(t, "good", "r", gateway.ConditionResolvedRefs, metav1.ConditionTrue, gateway.ReasonResolvedRefs)
		waitConnection(t, "good", "app", "Bound")
		if gen, sum := deploymentState(); gen != gen0 || sum != sum0 {
			t.Errorf("the proxy Deployment changed: generation %d -> %d, restart checksum %s -> %s", gen0, gen, sum0, sum)
		}
		cm, err := kube.CoreV1().ConfigMaps("good").Get(ctx, gateway.ConfigMapName("gw"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data[gateway.ConfigKey] != cm0.Data[gateway.ConfigKey] {
			t.Errorf("the proxy configuration changed:\n%s\n---\n%s", cm0.Data[gateway.ConfigKey], cm.Data[gateway.ConfigKey])
		}
	})
}
