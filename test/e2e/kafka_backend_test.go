package e2e_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/pkg/gateway"
)

// A Strimzi Kafka as the route's backend, as Strimzi runs it: brokers of the node pool "broker"
// are pods my-cluster-broker-<id> behind the headless Service my-cluster-kafka-brokers, all on
// the listener's port. kfake plays them on one port and a loopback address each, and the pods'
// host aliases play cluster DNS. The route names only the Kafka: no brokers, no policy.
const poolName = "broker"

var gvrNodePool = schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1", Resource: "kafkanodepools"}

// kafkaBackendYAML is what the user applies: the grant for the Kafka, the gateway and a route
// whose backend is the Kafka's TLS listener (its port is the one every kfake broker listens on).
const kafkaBackendYAML = `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: apps-kafka, namespace: kafka}
spec:
  from: [{group: kroxylicious.io, kind: KafkaRoute, namespace: apps}]
  to: [{group: kafka.strimzi.io, kind: Kafka, name: my-cluster}]
---
kind: KafkaGatewayParameters
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: my-gateway, namespace: apps}
spec:
  management: {port: %[2]d}
---
kind: KafkaGateway
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: my-gateway, namespace: apps}
spec:
  infrastructure:
    parametersRef: {group: kroxylicious.io, kind: KafkaGatewayParameters, name: my-gateway}
  listeners:
  - name: tls
    port: %[3]d
    protocol: kroxylicious.io/kafka-tls
    tls:
      certificateRefs: [{kind: Secret, name: my-gateway-tls}]
---
kind: KafkaRoute
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: my-cluster, namespace: apps}
spec:
  parentRefs:
  - name: my-gateway
    hostnames: [my-cluster-%%.apps.svc.cluster.local]
    rules:
    - name: all
      backendRefs: [{group: kafka.strimzi.io, kind: Kafka, namespace: kafka, name: my-cluster, port: %[1]d}]
`

// brokerPod is broker id's in-cluster name, as Strimzi advertises it on an internal listener.
func brokerPod(id int) string {
	return fmt.Sprintf("%s-%s-%d.%s-kafka-brokers.%s.svc.cluster.local", clusterName, poolName, id, clusterName, nsKafka)
}

// brokerIP is the loopback address broker id listens on.
func brokerIP(id int) string { return fmt.Sprintf("127.0.1.%d", id+1) }

// TestKafkaBackendFollowsNodePools: a KafkaRoute naming only a Strimzi Kafka serves a TLS client
// through the proxy to a TLS and SCRAM-SHA-512 backend, with the proxy connecting to each broker
// at its Strimzi name (never asking the SASL-only bootstrap for addresses); scaling the node pool
// from 3 to 4 brokers adds broker 3 to the proxy with no restart and no dropped connection; then
// the seed's KafkaFilter, with real kms values, encrypts records through the deployed proxy.
func TestKafkaBackendFollowsNodePools(t *testing.T) {
	const maxBrokers = 4
	aliases := []corev1.HostAlias{{IP: brokerIP(0), Hostnames: []string{backendService + "." + nsKafka + ".svc.cluster.local"}}}
	for id := range maxBrokers {
		aliases = append(aliases, corev1.HostAlias{IP: brokerIP(id), Hostnames: []string{brokerPod(id)}})
	}
	e := newEnv(t, aliases...)
	e.limit(testBudget)
	now := time.Now().Add(-time.Hour)
	clusterCA := bindingtest.NewCA(t, "my-cluster cluster-ca v0", now)
	gatewayCA := bindingtest.NewCA(t, "apps issuer", now)
	kafkaPort, listenPort, mgmtPort := freePort(t), freePort(t), freePort(t)
	k := startPodKafka(t, clusterCA, kafkaPort, maxBrokers)
	gatewayRoots := x509.NewCertPool()
	gatewayRoots.AddCert(gatewayCA.Cert)
	opts := proxyAdminOpts(listenPort, gatewayRoots)

	e.step("setup", func(t *testing.T) {
		for _, ns := range []string{nsKafka, nsApps} {
			if _, err := e.kube.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		e.setClusterCA(clusterCA.CertPEM)
		e.setSecret(gatewayCertSecretFor(t, gatewayCA, maxBrokers))
		e.createPodKafka(kafkaPort, []int64{0, 1, 2})
		e.apply(fmt.Sprintf(kafkaBackendYAML, kafkaPort, mgmtPort, listenPort))
		e.waitRouteResolved()
	})

	e.step("a TLS client produces and consumes through the proxy", func(t *testing.T) {
		brokers := metadataBrokers(t, opts)
		if len(brokers) != 3 {
			t.Errorf("metadata lists %d brokers, want 3: %v", len(brokers), brokers)
		}
		for _, b := range brokers {
			if host, _, _ := net.SplitHostPort(b); !isProxyHost(host) {
				t.Errorf("metadata lists broker %s, not a proxy hostname", b)
			}
		}
		bindingtest.ProduceConsume(t, opts, topic, "via-kafka-backend")
	})

	e.step("scaling the node pool to 4 brokers adds broker 3 without a restart", func(t *testing.T) {
		app := newLongLivedClient(t, opts)
		app.roundTrip(t, "before-scale-out")
		// A connection to broker 0 that only this test uses: franz-go's own reactions to the
		// leader moves of kfake's scale-out cannot close it, only the proxy could.
		pinned := newPinnedConnection(t, opts, brokerHost(0), listenPort)
		pod, _ := e.runner.Pod(nsApps, gateway.DeploymentName(gatewayName))
		// As Strimzi scales a pool: the node id is in the pool's status before the new broker
		// has started and joined the cluster's metadata, which takes a broker many seconds.
		reloads := e.proxyReloads()
		start := time.Now()
		e.setNodeIDs([]int64{0, 1, 2, 3})
		e.eventually("broker 3's Service and the proxy's reload", func() (bool, string) {
			_, err := e.kube.CoreV1().Services(nsApps).Get(e.ctx, "my-cluster-broker-3", metav1.GetOptions{})
			return err == nil && e.proxyReloads() > reloads, fmt.Sprintf("Service: %v; reloads %d", err, e.proxyReloads())
		})
		t.Logf("broker 3's Service made and the proxy reloaded %s after the node pool's status listed it", time.Since(start).Round(time.Millisecond))
		if _, _, err := k.AddNode(3, kafkaPort); err != nil {
			t.Fatal(err)
		}
		e.eventually("broker 3 to be served through the proxy", func() (bool, string) {
			err := brokerAnswers(opts, brokerHost(3), listenPort)
			return err == nil, fmt.Sprint(err)
		})
		t.Logf("broker 3 served through the proxy %s after the node pool's status listed it", time.Since(start).Round(time.Millisecond))
		if lines := e.proxyLogLines("broker 3 is not one of"); len(lines) > 0 {
			t.Errorf("the proxy refused broker 3 after its reload: %v", lines)
		}
		if after, _ := e.runner.Pod(nsApps, gateway.DeploymentName(gatewayName)); after.PID != pod.PID {
			t.Errorf("the proxy restarted (pid %d, then %d): a scale-out must reload, not restart", pod.PID, after.PID)
		}
		// The application keeps producing (its consumer is not checked again: kfake moves
		// partition leaders at random when a broker joins), and the pinned connection is the
		// same one.
		if err := app.cl.ProduceSync(e.ctx, &kgo.Record{Value: []byte("after-scale-out"), Partition: 0}).FirstErr(); err != nil {
			t.Errorf("the long-lived client's produce after the scale-out: %v", err)
		}
		pinned.check(t)
		bindingtest.ProduceConsume(t, opts, topic, "new-client-after-scale-out")
	})

	e.stepRecordEncryption(kafkaPort, clusterCA, opts)
}

// startPodKafka runs kfake with TLS and SCRAM-SHA-512, its brokers (three now, up to max later)
// each on brokerIP(id):port, with a certificate for their pod names and the bootstrap Service.
func startPodKafka(t *testing.T, ca *bindingtest.CA, port, maxBrokers int) *kfake.Cluster {
	t.Helper()
	names := []string{backendService + "." + nsKafka + ".svc", backendService + "." + nsKafka + ".svc.cluster.local"}
	for id := range maxBrokers {
		names = append(names, brokerPod(id))
	}
	_, _, pair := ca.Issue(t, clusterName+"-kafka-brokers", names, false, false)
	var mu sync.Mutex
	next := 0
	listen := func(network, _ string) (net.Listener, error) {
		// kfake asks for 127.0.0.1:port for every broker, in node order: each gets its own address.
		mu.Lock()
		ip := brokerIP(next)
		next++
		mu.Unlock()
		return net.Listen(network, net.JoinHostPort(ip, strconv.Itoa(port)))
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, topic), kfake.ListenFn(listen),
		kfake.TLS(&tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", adminUser, adminPassword))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// createPodKafka creates the Kafka with its TLS+SCRAM internal listener, reconciled (status
// bootstrap at the Strimzi bootstrap Service), and its broker node pool with node ids.
func (e *env) createPodKafka(port int, nodeIDs []int64) {
	e.t.Helper()
	kafka := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kafka.strimzi.io/v1", "kind": "Kafka",
		"metadata": map[string]any{"name": clusterName, "namespace": nsKafka},
		"spec": map[string]any{"kafka": map[string]any{"listeners": []any{
			map[string]any{"name": listenerName, "port": int64(port), "type": "internal", "tls": true,
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
		"listeners": []any{map[string]any{"name": listenerName,
			"bootstrapServers": fmt.Sprintf("%s.%s.svc:%d", backendService, nsKafka, port)}},
	}
	if _, err := e.dyn.Resource(gvrKafka).Namespace(nsKafka).UpdateStatus(e.ctx, kafka, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kafka.strimzi.io/v1", "kind": "KafkaNodePool",
		"metadata": map[string]any{"name": poolName, "namespace": nsKafka, "labels": map[string]any{"strimzi.io/cluster": clusterName}},
		"spec": map[string]any{"replicas": int64(len(nodeIDs)), "roles": []any{"broker"},
			"storage": map[string]any{"type": "ephemeral"}},
	}}
	if _, err := e.dyn.Resource(gvrNodePool).Namespace(nsKafka).Create(e.ctx, pool, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.setNodeIDs(nodeIDs)
}

// setNodeIDs writes the node pool's status.nodeIds, as Strimzi does when it scales the pool.
func (e *env) setNodeIDs(ids []int64) {
	e.t.Helper()
	pool, err := e.dyn.Resource(gvrNodePool).Namespace(nsKafka).Get(e.ctx, poolName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	list := make([]any, len(ids))
	for i, id := range ids {
		list[i] = id
	}
	pool.Object["status"] = map[string]any{"nodeIds": list, "replicas": int64(len(ids)), "roles": []any{"broker"}}
	if _, err := e.dyn.Resource(gvrNodePool).Namespace(nsKafka).UpdateStatus(e.ctx, pool, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// waitRouteResolved waits until the route's current generation is Accepted with its references
// resolved.
func (e *env) waitRouteResolved() {
	e.t.Helper()
	e.eventually("the route to be Accepted with its references resolved", func() (bool, string) {
		r, err := e.kl.KroxyliciousV1alpha1().KafkaRoutes(nsApps).Get(e.ctx, routeName, metav1.GetOptions{})
		if err != nil || len(r.Status.Parents) == 0 {
			return false, fmt.Sprint(err)
		}
		var detail []string
		ok := true
		for _, ct := range []string{"Accepted", "ResolvedRefs"} {
			c := meta.FindStatusCondition(r.Status.Parents[0].Conditions, ct)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != r.Generation {
				ok = false // not yet, or not yet for the route's latest spec
			}
			if c != nil {
				detail = append(detail, ct+"="+string(c.Status)+" "+c.Reason+": "+c.Message)
			}
		}
		return ok, strings.Join(detail, "; ")
	})
}

// proxyAdminOpts is a franz-go client of the route as the SCRAM admin: the proxy's hostnames
// lead to the proxy on loopback, with TLS verified for the hostname asked for.
func proxyAdminOpts(listenPort int, roots *x509.CertPool) []kgo.Opt {
	dialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if !isProxyHost(host) {
			return nil, fmt.Errorf("%s is not a proxy hostname", addr)
		}
		d := tls.Dialer{Config: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: host}}
		return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", strconv.Itoa(listenPort)))
	}
	return []kgo.Opt{
		kgo.SeedBrokers(net.JoinHostPort(bootstrapHost, strconv.Itoa(listenPort))),
		kgo.Dialer(dialer),
		kgo.SASL(scram.Auth{User: adminUser, Pass: adminPassword}.AsSha512Mechanism()),
	}
}

// brokerAnswers authenticates to one broker hostname of the proxy and asks it for metadata.
func brokerAnswers(opts []kgo.Opt, host string, port int) error {
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...), kgo.SeedBrokers(net.JoinHostPort(host, strconv.Itoa(port))))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

// pinnedConnection is one client connection through the proxy to one broker hostname, used for
// nothing else: check asks on it again and fails if it was ever closed or replaced.
type pinnedConnection struct {
	cl    *kgo.Client
	conns *connCounter
}

func newPinnedConnection(t *testing.T, opts []kgo.Opt, host string, port int) *pinnedConnection {
	t.Helper()
	p := &pinnedConnection{conns: &connCounter{}}
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...), kgo.SeedBrokers(net.JoinHostPort(host, strconv.Itoa(port))),
		kgo.WithHooks(p.conns), kgo.ConnIdleTimeout(10*time.Minute))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	p.cl = cl
	p.ask(t)
	return p
}

func (p *pinnedConnection) ask(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
		t.Fatalf("request on the pinned connection: %v", err)
	}
}

func (p *pinnedConnection) check(t *testing.T) {
	t.Helper()
	p.ask(t)
	if c, d := p.conns.connects.Load(), p.conns.disconnects.Load(); c != 1 || d != 0 {
		t.Errorf("the pinned connection was dropped: %d connects, %d disconnects; want the first one still open", c, d)
	}
}
