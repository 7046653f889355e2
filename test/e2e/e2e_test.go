package e2e_test

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/pkg/gateway"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
	"github.com/kafkalink/kafkalink/test/framework"
	"github.com/kafkalink/kafkalink/test/kubelet"
)

// objectsYAML is what a user applies: the backend Service Strimzi would own (its port is kfake's
// real port, so no port translation is needed), the backend TLS policy trusting the cluster CA,
// the grant that lets the apps namespace use the Service and the KafkaUser, the gateway with an
// in-cluster route in front of the cluster, and two KafkaConnections: one to the Kafka, one to
// the KafkaRoute.
const objectsYAML = `
apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: kafka, labels: {strimzi.io/cluster: my-cluster}}
spec:
  ports: [{name: tcp-scram, port: %[2]d, targetPort: %[2]d}]
---
kind: KafkaBackendTLSPolicy
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: my-cluster-tls, namespace: kafka}
spec:
  targetRefs: [{kind: Service, name: %[1]s}]
  validation:
    caCertificateRefs: [{kind: Secret, name: my-cluster-cluster-ca-cert}]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: apps, namespace: kafka}
spec:
  from:
  - {group: kroxylicious.io, kind: KafkaRoute, namespace: apps}
  - {group: kafka.strimzi.io, kind: KafkaConnection, namespace: apps}
  to:
  - {group: "", kind: Service, name: %[1]s}
  - {group: kafka.strimzi.io, kind: KafkaUser, name: my-user}
---
kind: KafkaGatewayParameters
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: my-gateway, namespace: apps}
spec:
  management: {port: %[3]d}
---
kind: KafkaGateway
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: my-gateway, namespace: apps}
spec:
  infrastructure:
    parametersRef: {group: kroxylicious.io, kind: KafkaGatewayParameters, name: my-gateway}
  listeners:
  - name: tls
    port: %[4]d
    protocol: kroxylicious.io/kafka-tls
    tls:
      certificateRefs: [{kind: Secret, name: my-gateway-tls}]
---
kind: KafkaRoute
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: my-cluster, namespace: apps}
spec:
  parentRefs:
  - group: kroxylicious.io
    kind: KafkaGateway
    name: my-gateway
    sectionName: tls
    brokers: [{advertisedBrokerIds: [0, 1, 2], brokerIdentityMapping: identity}]
    hostnames: [my-cluster-%%.apps.svc.cluster.local]
    rules:
    - name: all
      backendRefs: [{kind: Service, namespace: kafka, name: %[1]s, port: %[2]d}]
---
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: orders-app, namespace: apps}
spec:
  kafka: {apiVersion: kafka.strimzi.io/v1, kind: Kafka, name: my-cluster, namespace: kafka}
  user: {apiVersion: kafka.strimzi.io/v1, kind: KafkaUser, name: my-user, namespace: kafka}
---
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnection
metadata: {name: orders-app-via-gateway, namespace: apps}
spec:
  kafka: {apiVersion: kroxylicious.io/v1alpha1, kind: KafkaRoute, name: my-cluster, hostname: "my-cluster-%%.apps.svc.cluster.local"}
  user: {apiVersion: kafka.strimzi.io/v1, kind: KafkaUser, name: my-user, namespace: kafka}
`

// step runs one stage as a subtest whose failure stops the whole test, with the env's helpers
// reporting to the subtest.
func (e *env) step(name string, f func(t *testing.T)) {
	parent := e.t
	parent.Helper()
	ok := parent.Run(name, func(t *testing.T) {
		e.t = t
		defer func() { e.t = parent }()
		f(t)
	})
	if !ok {
		parent.FailNow()
	}
}

// TestEndToEnd is the flagship: kfake (TLS, SCRAM-SHA-512, three brokers) behind a Strimzi-shaped
// Kafka, a KafkaUser, a KafkaGateway with an in-cluster KafkaRoute and a KafkaBackendTLSPolicy,
// two KafkaConnections; franz-go and kcat configured from the binding Secrets only, directly and
// through the real proxy; password, gateway certificate and cluster CA rotations checked with
// traffic; and a clean teardown.
func TestEndToEnd(t *testing.T) {
	e := newEnv(t)
	e.limit(testBudget)
	// keep projects binding files into a folder of the whole test: later steps read them.
	keep := func(data map[string][]byte) string { return bindingtest.Project(t, data) }
	now := time.Now().Add(-time.Hour)
	clusterCA := bindingtest.NewCA(t, "my-cluster cluster-ca v0", now)
	gatewayCA := bindingtest.NewCA(t, "apps issuer", now) // plays cert-manager's issuer
	k := startKafka(t, clusterCA)
	e.kafka = k
	const firstPassword, secondPassword = "first-Pa55word", "second-Pa55word"
	k.setPassword(t, userName, firstPassword)
	k.allowSASLHandshakeV0(t)
	listenPort, mgmtPort := freePort(t), freePort(t)
	proxyHosts := []string{bootstrapHost, brokerHost(0), brokerHost(1), brokerHost(2)}
	gatewayRoots := x509.NewCertPool()
	gatewayRoots.AddCert(gatewayCA.Cert)

	var directDir string // the direct binding's files as last projected
	e.step("setup", func(t *testing.T) {
		for _, ns := range []string{nsKafka, nsApps} {
			if _, err := e.kube.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		e.setClusterCA(clusterCA.CertPEM)
		e.setSecret(strimziSecret(userName, scramUserSecret(firstPassword)))
		e.createStrimziObjects(k.bootstrap())
		e.setSecret(gatewayCertSecret(t, gatewayCA))
		e.apply(fmt.Sprintf(objectsYAML, backendService, k.port0(t), mgmtPort, listenPort))

		e.eventually("the gateway to be Programmed", func() (bool, string) {
			gw, err := e.kl.KroxyliciousV1alpha1().KafkaGateways(nsApps).Get(e.ctx, gatewayName, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c := meta.FindStatusCondition(gw.Status.Conditions, "Programmed")
			if c == nil {
				return false, "no Programmed condition"
			}
			return c.Status == metav1.ConditionTrue && c.ObservedGeneration == gw.Generation, c.Reason + ": " + c.Message
		})
		e.eventually("the route to be Accepted with its references resolved", func() (bool, string) {
			r, err := e.kl.KroxyliciousV1alpha1().KafkaRoutes(nsApps).Get(e.ctx, routeName, metav1.GetOptions{})
			if err != nil || len(r.Status.Parents) == 0 {
				return false, fmt.Sprint(err)
			}
			var detail []string
			ok := true
			for _, ct := range []string{"Accepted", "ResolvedRefs"} {
				c := meta.FindStatusCondition(r.Status.Parents[0].Conditions, ct)
				if c == nil || c.Status != metav1.ConditionTrue {
					ok = false
				}
				if c != nil {
					detail = append(detail, ct+"="+string(c.Status)+" "+c.Reason+": "+c.Message)
				}
			}
			return ok, strings.Join(detail, "; ")
		})
		e.eventually("the backend TLS policy to be Accepted", func() (bool, string) {
			p, err := e.kl.KroxyliciousV1alpha1().KafkaBackendTLSPolicies(nsKafka).Get(e.ctx, "my-cluster-tls", metav1.GetOptions{})
			if err != nil || len(p.Status.Ancestors) == 0 {
				return false, fmt.Sprint(err)
			}
			c := meta.FindStatusCondition(p.Status.Ancestors[0].Conditions, "Accepted")
			if c == nil {
				return false, "no Accepted condition"
			}
			return c.Status == metav1.ConditionTrue, c.Reason + ": " + c.Message
		})
		pod, ok := e.runner.Pod(nsApps, gateway.DeploymentName(gatewayName))
		if !ok || pod.PID == 0 {
			t.Fatalf("the local kubelet runs no proxy for the gateway: %+v", pod)
		}
		t.Logf("proxy pid %d, log %s", pod.PID, pod.LogPath)
	})

	e.step("franz-go bound to the Kafka produces and consumes", func(t *testing.T) {
		e.waitBound(directConn)
		data := e.bindingData(directConn, "kfake's bootstrap", func(d map[string][]byte) bool {
			return string(d["bootstrap.servers"]) == k.bootstrap()
		})
		for key, want := range map[string]string{"type": "kafka", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "username": userName, "password": firstPassword} {
			if got := string(data[key]); got != want {
				t.Errorf("binding %s = %q, want %q", key, got, want)
			}
		}
		directDir = keep(data)
		bindingtest.ProduceConsume(t, bindingtest.ClientOpts(t, directDir, bindingtest.FromPEM), topic, "direct-franz-pem")
		bindingtest.ProduceConsume(t, bindingtest.ClientOpts(t, directDir, bindingtest.FromPKCS12), topic, "direct-franz-pkcs12")
	})

	e.step("kcat bound to the Kafka produces and consumes", func(t *testing.T) {
		requireKcat(t)
		kcatProduceConsume(t, nil, kcatArgs(t, directDir), "direct-kcat")
	})

	routeBinding := func(what string, ok func(map[string][]byte) bool) map[string][]byte {
		e.t.Helper()
		e.waitBound(routeConn)
		return e.bindingData(routeConn, what, ok)
	}

	var routeDir string
	e.step("franz-go bound to the KafkaRoute goes through the proxy", func(t *testing.T) {
		data := routeBinding("the first password", func(d map[string][]byte) bool { return string(d["password"]) == firstPassword })
		if got, want := string(data["bootstrap.servers"]), net.JoinHostPort(bootstrapHost, strconv.Itoa(listenPort)); got != want {
			t.Errorf("bootstrap.servers = %q, want the route's bootstrap host %q", got, want)
		}
		if got := bindingtest.PEMCertificates(data["ssl.truststore.crt"]); len(got) != 1 || !bytes.Equal(got[0], gatewayCA.Cert.Raw) {
			t.Errorf("the truststore holds %d certificates, want the gateway certificate's CA alone", len(got))
		}
		routeDir = keep(data)
		var dialed dialLog
		opts := proxiedClientOpts(t, routeDir, &dialed)
		brokers := metadataBrokers(t, opts)
		if len(brokers) != 3 {
			t.Errorf("metadata lists %d brokers, want 3: %v", len(brokers), brokers)
		}
		for _, b := range brokers {
			host, port, _ := net.SplitHostPort(b)
			if !isProxyHost(host) || port != strconv.Itoa(listenPort) {
				t.Errorf("metadata lists broker %s, which is not a proxy hostname on the listener port %d", b, listenPort)
			}
		}
		bindingtest.ProduceConsume(t, opts, topic, "via-gateway-franz")
		sawBroker := false
		for _, a := range dialed.all() {
			host, _, _ := net.SplitHostPort(a)
			if !isProxyHost(host) {
				t.Errorf("the client dialed %s", a)
			}
			sawBroker = sawBroker || host != bootstrapHost
		}
		if !sawBroker {
			t.Errorf("the client only dialed the bootstrap host: %v", dialed.all())
		}
	})

	e.step("kcat bound to the KafkaRoute goes through the proxy", func(t *testing.T) {
		requireKcat(t)
		args := kcatArgs(t, routeDir)
		md := kcat(t, proxyHosts, "", append(args, "-L", "-t", topic)...)
		n := 0
		for _, line := range strings.Split(md, "\n") {
			// "  broker 0 at my-cluster-broker-0.apps.svc.cluster.local:PORT (controller)"
			fields := strings.Fields(line)
			if len(fields) >= 4 && fields[0] == "broker" && fields[2] == "at" {
				n++
				host, port, err := net.SplitHostPort(fields[3])
				if err != nil || !isProxyHost(host) || port != strconv.Itoa(listenPort) {
					t.Errorf("kcat sees broker address %s, which is not a proxy hostname on port %d", fields[3], listenPort)
				}
			}
		}
		if n != 3 {
			t.Errorf("kcat lists %d brokers, want 3:\n%s", n, md)
		}
		kcatProduceConsume(t, proxyHosts, args, "via-gateway-kcat")
	})

	e.step("kubectl kafkalink config output for kcat and franz-go produces through the proxy with nothing else set", func(t *testing.T) {
		requireKcat(t)
		kcatDir := e.pluginConfig(t, nsApps, routeConn, "kcat")
		conf := []string{"-F", filepath.Join(kcatDir, "kcat.conf"), "-m", "20"}
		kcatProduceConsume(t, proxyHosts, conf, "via-gateway-plugin-kcat")
		producer := buildFranzGoProducer(t, e.pluginConfig(t, nsApps, routeConn, "franz-go"))
		t.Log(runWithHosts(t, proxyHosts, producer, topic, "via-gateway-plugin-franz-go"))
		got := kcat(t, proxyHosts, "", append(conf, "-C", "-t", topic, "-o", "beginning", "-e", "-q")...)
		if !strings.Contains(got, "via-gateway-plugin-franz-go") {
			t.Fatalf("the record the franz-go program produced is not in the partition:\n%s", got)
		}
	})

	e.step("a KafkaUser password rotation reaches the bindings and a new client authenticates", func(t *testing.T) {
		oldDirect := directDir
		// Strimzi's User Operator changes the broker's credentials first, then the Secret.
		k.setPassword(t, userName, secondPassword)
		e.setSecret(strimziSecret(userName, scramUserSecret(secondPassword)))
		data := e.bindingData(directConn, "the new password", func(d map[string][]byte) bool { return string(d["password"]) == secondPassword })
		if !strings.Contains(string(data["sasl.jaas.config"]), secondPassword) {
			t.Errorf("sasl.jaas.config does not carry the new password: %s", data["sasl.jaas.config"])
		}
		directDir = keep(data)
		bindingtest.ProduceConsume(t, bindingtest.ClientOpts(t, directDir, bindingtest.FromPEM), topic, "direct-after-password-rotation")
		if err := authenticates(t, bindingtest.ClientOpts(t, oldDirect, bindingtest.FromPEM)); err == nil {
			t.Error("the old password still authenticates: the rotation did not happen")
		}
		routeDir = keep(routeBinding("the new password", func(d map[string][]byte) bool { return string(d["password"]) == secondPassword }))
		bindingtest.ProduceConsume(t, proxiedClientOpts(t, routeDir, nil), topic, "via-gateway-after-password-rotation")
	})

	e.step("a gateway certificate rotation is served without a restart and keeps connections", func(t *testing.T) {
		before, _ := e.runner.Pod(nsApps, gateway.DeploymentName(gatewayName))
		app := newLongLivedClient(t, proxiedClientOpts(t, routeDir, nil))
		app.roundTrip(t, "before-certificate-rotation")
		disconnects := app.conns.disconnects.Load()

		secret := gatewayCertSecret(t, gatewayCA)
		e.setSecret(secret)
		block := bindingtest.PEMCertificates(secret.Data[corev1.TLSCertKey])[0]
		e.eventually("the proxy to serve the new certificate", func() (bool, string) {
			leaf, err := servedCertificate(listenPort, gatewayRoots)
			if err != nil {
				return false, err.Error()
			}
			return bytes.Equal(leaf.Raw, block), "still the old certificate"
		})
		after, ok := e.runner.Pod(nsApps, gateway.DeploymentName(gatewayName))
		if !ok || after.PID != before.PID || after.Restarts != before.Restarts {
			t.Errorf("the proxy restarted for a certificate rotation: pid %d (restarts %d), was %d (restarts %d)",
				after.PID, after.Restarts, before.PID, before.Restarts)
		}
		app.roundTrip(t, "after-certificate-rotation")
		if got := app.conns.disconnects.Load(); got != disconnects {
			t.Errorf("the long-lived client lost %d connections during the rotation", got-disconnects)
		}
		bindingtest.ProduceConsume(t, proxiedClientOpts(t, routeDir, nil), topic, "new-client-after-certificate-rotation")
	})

	e.step("a cluster CA renewal keeps both certificates trusted during the overlap", func(t *testing.T) {
		newCA := bindingtest.NewCA(t, "my-cluster cluster-ca v1", now.Add(time.Minute))
		reloads := e.proxyReloads()
		// Strimzi replaces the CA key: ca.crt is the new certificate, the old one stays as a
		// dated entry until every broker has a certificate of the new CA.
		e.setClusterCA(newCA.CertPEM, clusterCA.CertPEM)
		data := e.bindingData(directConn, "both CA certificates", func(d map[string][]byte) bool {
			return len(bindingtest.PEMCertificates(d["ssl.truststore.crt"])) == 2
		})
		if p12, err := bindingtest.PKCS12Trusted(data["ssl.truststore.p12"], string(data["ssl.truststore.password"])); err != nil || len(p12) != 2 {
			t.Errorf("the PKCS12 truststore holds %d certificates (%v), want both CAs", len(p12), err)
		}
		dir := bindingtest.Project(t, data)
		// The brokers still present certificates of the old CA.
		bindingtest.ProduceConsume(t, bindingtest.ClientOpts(t, dir, bindingtest.FromPEM), topic, "overlap-old-broker-certificate-pem")
		bindingtest.ProduceConsume(t, bindingtest.ClientOpts(t, dir, bindingtest.FromPKCS12), topic, "overlap-old-broker-certificate-pkcs12")
		if _, err := exec.LookPath("kcat"); err == nil {
			kcatProduceConsume(t, nil, kcatArgs(t, dir), "overlap-old-broker-certificate-kcat")
		}

		// The proxy's view of the same overlap: the policy's CA Secret is mounted and reloaded.
		e.waitProxyTrusts(newCA.CertPEM, reloads)
		// The policy trusts every CA certificate of the Secret, so the old broker certificates
		// still pass while ca.crt already holds the new CA.
		e.eventually("a new connection through the proxy during the overlap", func() (bool, string) {
			if err := authenticates(t, proxiedClientOpts(t, routeDir, nil)); err != nil {
				return false, fmt.Sprintf("%v; the proxy says: %s", err, strings.Join(e.proxyLogLines("x509"), "\n"))
			}
			return true, ""
		})

		// The brokers roll to certificates of the new CA.
		k.serveCertificateOf(t, newCA)
		bindingtest.ProduceConsume(t, bindingtest.ClientOpts(t, dir, bindingtest.FromPEM), topic, "overlap-new-broker-certificate-pem")
		bindingtest.ProduceConsume(t, bindingtest.ClientOpts(t, dir, bindingtest.FromPKCS12), topic, "overlap-new-broker-certificate-pkcs12")
		if _, err := exec.LookPath("kcat"); err == nil {
			kcatProduceConsume(t, nil, kcatArgs(t, dir), "overlap-new-broker-certificate-kcat")
		}
		bindingtest.ProduceConsume(t, proxiedClientOpts(t, routeDir, nil), topic, "via-gateway-new-broker-certificate")

		// The renewal ends: Strimzi drops the old certificate, and so does the binding.
		e.setClusterCA(newCA.CertPEM)
		data = e.bindingData(directConn, "only the new CA certificate", func(d map[string][]byte) bool {
			certs := bindingtest.PEMCertificates(d["ssl.truststore.crt"])
			return len(certs) == 1 && bytes.Equal(certs[0], newCA.Cert.Raw)
		})
		directDir = keep(data)
		bindingtest.ProduceConsume(t, bindingtest.ClientOpts(t, directDir, bindingtest.FromPEM), topic, "after-renewal")
	})

	e.step("deleting the route, the gateway and the connections leaves nothing behind", func(t *testing.T) {
		// The leftover check is not vacuous: before the deletions it finds what kafkalink made.
		made := strings.Join(e.leftovers(), "\n")
		for _, want := range []string{
			"Deployment " + nsApps + "/" + gateway.DeploymentName(gatewayName),
			"ConfigMap " + nsApps + "/" + gateway.ConfigMapName(gatewayName),
			"Service " + nsApps + "/my-cluster-bootstrap ",
			"Service " + nsApps + "/my-cluster-broker-2 ",
			"Secret " + nsApps + "/" + directConn + " ",
		} {
			if !strings.Contains(made, want) {
				t.Errorf("before the deletions the leftover check does not find %q among:\n%s", want, made)
			}
		}
		if !strings.Contains(made, "Secret "+nsApps+"/"+gatewayName+"-") {
			t.Logf("no copy of the cluster CA Secret found in %s (the gateway may mount it another way):\n%s", nsApps, made)
		}
		e.kubectl("delete", "-n", nsApps, "kafkaroutes.kroxylicious.io", routeName, "--wait=true")
		e.eventually("the route's Services to be pruned", func() (bool, string) {
			list, err := e.kube.CoreV1().Services(nsApps).List(e.ctx, metav1.ListOptions{LabelSelector: wellknown.LabelRoute + "=" + routeName})
			if err != nil {
				return false, err.Error()
			}
			return len(list.Items) == 0, fmt.Sprintf("%d Services left", len(list.Items))
		})
		// Without the route the pod template loses the backend CA volume, which rolls the proxy
		// as it would roll real pods; the process to watch is the one running now.
		var pod kubelet.Pod
		e.eventually("the proxy to run without the route", func() (bool, string) {
			p, ok := e.runner.Pod(nsApps, gateway.DeploymentName(gatewayName))
			pod = p
			return ok && p.PID != 0, fmt.Sprintf("%+v", p.Waiting)
		})
		e.kubectl("delete", "-n", nsApps, "kafkagateways.kroxylicious.io", gatewayName, "--wait=true")
		e.eventually("the gateway's objects to be collected", func() (bool, string) {
			left := e.leftovers()
			return len(left) == 0 || onlyConnections(left), strings.Join(left, ", ")
		})
		e.eventually("the local proxy process to stop", func() (bool, string) {
			_, running := e.runner.Pod(nsApps, gateway.DeploymentName(gatewayName))
			alive := syscall.Kill(pod.PID, 0) == nil
			return !running && !alive, fmt.Sprintf("runner pod: %v, pid %d alive: %v", running, pod.PID, alive)
		})
		e.kubectl("delete", "-n", nsApps, "kafkaconnections.kafka.strimzi.io", directConn, routeConn, "--wait=true")
		e.eventually("nothing kafkalink made to remain", func() (bool, string) {
			left := e.leftovers()
			return len(left) == 0, strings.Join(left, ", ")
		})
	})
}

// gatewayCertSecret is the gateway listener's certificate Secret as cert-manager writes it
// (tls.crt, tls.key, ca.crt), for the route's bootstrap and broker hostnames, with a fresh key.
func gatewayCertSecret(t *testing.T, ca *bindingtest.CA) *corev1.Secret {
	return gatewayCertSecretFor(t, ca, 3)
}

// gatewayCertSecretFor is gatewayCertSecret for brokers 0..brokers-1.
func gatewayCertSecretFor(t *testing.T, ca *bindingtest.CA, brokers int) *corev1.Secret {
	t.Helper()
	names := []string{bootstrapHost}
	for i := 0; i < brokers; i++ {
		names = append(names, brokerHost(i))
	}
	certPEM, keyPEM, _ := ca.Issue(t, gatewayName, names, false, false)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: nsApps, Name: gatewayCert,
			Annotations: map[string]string{"cert-manager.io/issuer-name": "apps-issuer"}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": ca.CertPEM},
	}
}

// proxyReloads counts the proxy's configuration reloads so far, from its log.
func (e *env) proxyReloads() int {
	p, ok := e.runner.Pod(nsApps, gateway.DeploymentName(gatewayName))
	if !ok {
		return 0
	}
	b, _ := os.ReadFile(p.LogPath)
	return bytes.Count(b, []byte("Reloaded configuration and key material"))
}

// proxyLogLines returns the proxy's log lines that contain substr.
func (e *env) proxyLogLines(substr string) []string {
	p, ok := e.runner.Pod(nsApps, gateway.DeploymentName(gatewayName))
	if !ok {
		return nil
	}
	b, _ := os.ReadFile(p.LogPath)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return out
}

// waitProxyTrusts waits until one of the proxy's mounted ca.crt files holds caPEM and the proxy
// has reloaded since before.
func (e *env) waitProxyTrusts(caPEM []byte, before int) {
	e.t.Helper()
	e.eventually("the proxy to load the new cluster CA", func() (bool, string) {
		p, ok := e.runner.Pod(nsApps, gateway.DeploymentName(gatewayName))
		if !ok {
			return false, "no proxy pod"
		}
		mounted := false
		for _, dir := range p.Volumes {
			if b, err := os.ReadFile(filepath.Join(dir, "ca.crt")); err == nil && bytes.Contains(b, bytes.TrimSpace(caPEM)) {
				mounted = true
			}
		}
		reloads := e.proxyReloads()
		return mounted && reloads > before, fmt.Sprintf("mounted: %v, reloads: %d (were %d)", mounted, reloads, before)
	})
}

// leftovers lists what kafkalink made that still exists in the scenario's namespaces: objects
// owned by a kafkalink object or carrying its labels.
func (e *env) leftovers() []string {
	e.t.Helper()
	var out []string
	ownedOrLabelled := func(kind string, m metav1.ObjectMeta) {
		for _, ref := range m.OwnerReferences {
			switch ref.Kind {
			case "KafkaGateway", "KafkaRoute", "KafkaConnection":
				out = append(out, fmt.Sprintf("%s %s/%s (owned by %s %s)", kind, m.Namespace, m.Name, ref.Kind, ref.Name))
				return
			}
		}
		for key := range m.Labels {
			if strings.HasPrefix(key, "kafkalink.io/") {
				out = append(out, fmt.Sprintf("%s %s/%s (label %s)", kind, m.Namespace, m.Name, key))
				return
			}
		}
	}
	for _, ns := range []string{nsKafka, nsApps} {
		secrets, err := e.kube.CoreV1().Secrets(ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return []string{err.Error()}
		}
		for _, o := range secrets.Items {
			ownedOrLabelled("Secret", o.ObjectMeta)
		}
		cms, err := e.kube.CoreV1().ConfigMaps(ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return []string{err.Error()}
		}
		for _, o := range cms.Items {
			ownedOrLabelled("ConfigMap", o.ObjectMeta)
		}
		svcs, err := e.kube.CoreV1().Services(ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return []string{err.Error()}
		}
		for _, o := range svcs.Items {
			ownedOrLabelled("Service", o.ObjectMeta)
		}
		deps, err := e.kube.AppsV1().Deployments(ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return []string{err.Error()}
		}
		for _, o := range deps.Items {
			ownedOrLabelled("Deployment", o.ObjectMeta)
		}
	}
	return out
}

// onlyConnections reports whether every leftover belongs to a KafkaConnection, which is deleted
// last.
func onlyConnections(left []string) bool {
	for _, l := range left {
		if !strings.Contains(l, "KafkaConnection") && !strings.Contains(l, "kafkalink.io/binding") {
			return false
		}
	}
	return true
}

func freePort(t *testing.T) int {
	t.Helper()
	_, p, err := net.SplitHostPort(framework.FreeAddress())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}
