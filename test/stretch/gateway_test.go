package stretch_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/pkg/gateway"
	"github.com/kafkalink/kafkalink/test/framework"
	"github.com/kafkalink/kafkalink/test/kubelet"
)

// The stretch gateway: a route whose backend is the stretch Kafka's TLS listener, exposed by a
// gateway whose parameters list both members. kfake plays the six brokers of the two node pools
// (ids 0-2 in cluster1, 3-5 in cluster2), each on its own loopback address at the listener's
// port, advertising the clusterset names Strimzi's stretch mode gives them; each member's local
// kubelet resolves those names to kfake (host aliases play Submariner's DNS) and runs the proxy
// on a loopback address of its own, as two clusters' nodes would.
const (
	kafkaPort     = 9093
	gatewayName   = "my-gateway"
	adminUser     = "admin"
	adminPassword = "admin-Pa55word"
	topic         = "orders"
	listenHosts   = "my-cluster-%%.apps.svc.cluster.local"
	bootstrapHost = "my-cluster-bootstrap.apps.svc.cluster.local"
	stretchImage  = "ghcr.io/kafkalink/kafkalink-proxy:stretch"
)

const gatewayYAML = `
kind: KafkaGatewayParameters
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: my-gateway, namespace: apps}
spec:
  management: {port: %[1]d}
  members:
  - {name: member-a, cluster: {secret: member-a-kubeconfig}}
  - {name: member-b, cluster: {secret: member-b-kubeconfig}}
---
kind: KafkaGateway
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: my-gateway, namespace: apps}
spec:
  infrastructure:
    parametersRef: {group: kroxylicious.io, kind: KafkaGatewayParameters, name: my-gateway}
  listeners:
  - name: tls
    port: %[2]d
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
    hostnames: [` + listenHosts + `]
    rules:
    - name: all
      backendRefs: [{group: kafka.strimzi.io, kind: Kafka, name: my-cluster, port: 9093}]
`

// stretchBroker is broker id's name as Strimzi's stretch mode advertises it.
func stretchBroker(id int) string {
	pool, cluster := 1, 1
	if id >= 3 {
		pool, cluster = 2, 2
	}
	return fmt.Sprintf("my-cluster-pool-%d-%d.cluster%d.my-cluster-kafka-brokers.apps.svc.clusterset.local", pool, id, cluster)
}

func stretchBrokerIP(id int) string { return fmt.Sprintf("127.0.3.%d", id+1) }

// memberPodIP is where member i's proxy listens.
func memberPodIP(i int) string { return fmt.Sprintf("127.0.4.%d", i+1) }

func proxyHost(id int) string { return fmt.Sprintf("my-cluster-broker-%d.apps.svc.cluster.local", id) }

// namedListener advertises a name instead of the address it listens on: kfake advertises what
// its listener's Addr says.
type namedListener struct {
	net.Listener
	name string
}

func (l namedListener) Addr() net.Addr { return namedAddr(l.name) }

type namedAddr string

func (a namedAddr) Network() string { return "tcp" }
func (a namedAddr) String() string  { return string(a) }

func startStretchKafka(t *testing.T, ca *bindingtest.CA) *kfake.Cluster {
	t.Helper()
	names := []string{"my-cluster-kafka-bootstrap.apps.svc.clusterset.local"}
	for id := range 6 {
		names = append(names, stretchBroker(id))
	}
	_, _, pair := ca.Issue(t, "my-cluster-kafka-brokers", names, false, false)
	var mu sync.Mutex
	next := 0
	listen := func(network, _ string) (net.Listener, error) {
		mu.Lock()
		id := next
		next++
		mu.Unlock()
		ln, err := net.Listen(network, net.JoinHostPort(stretchBrokerIP(id), strconv.Itoa(kafkaPort)))
		if err != nil {
			return nil, err
		}
		return namedListener{Listener: ln, name: net.JoinHostPort(stretchBroker(id), strconv.Itoa(kafkaPort))}, nil
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(6), kfake.SeedTopics(3, topic), kfake.ListenFn(listen),
		kfake.TLS(&tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", adminUser, adminPassword))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// startMemberKubelet runs member i's nodes: its Deployments as local processes bound to its own
// loopback address, resolving the stretch Kafka's clusterset names to kfake.
func (w *world) startMemberKubelet(t *testing.T, i int, cp *framework.ControlPlane, proxyBin string) *kubelet.Runner {
	aliases := []corev1.HostAlias{{IP: stretchBrokerIP(0), Hostnames: []string{"my-cluster-kafka-bootstrap.apps.svc.clusterset.local"}}}
	for id := range 6 {
		aliases = append(aliases, corev1.HostAlias{IP: stretchBrokerIP(id), Hostnames: []string{stretchBroker(id)}})
	}
	r, err := kubelet.New(kubelet.Options{
		Client:      cp.Client,
		Images:      map[string]string{stretchImage: proxyBin},
		WorkDir:     filepath.Join(t.TempDir(), "kubelet"),
		HostAliases: aliases,
		ExtraArgs:   []string{"--bind-address=" + memberPodIP(i)},
		PodIP:       memberPodIP(i),
		StopTimeout: 5 * time.Second,
	})
	w.must(err)
	ctx, stop := context.WithCancel(w.ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		<-done
	})
	return r
}

// gatewayInMembers: a KafkaGateway whose parameters list both members runs its proxy in each,
// reaching the stretch Kafka by clusterset names; a franz-go client produces and consumes
// through either member's proxy, and status.members shows both Programmed.
func (w *world) gatewayInMembers(t *testing.T) {
	w.t = t
	if err := kubelet.CheckPrivateHosts(); err != nil {
		t.Skipf("the member proxies resolve clusterset names through a private /etc/hosts: %v", err)
	}
	startStretchKafka(t, w.ca[1])
	for i, m := range []string{"member-a", "member-b"} {
		_, err := w.members[m].Kubectl("-n", ns, "create", "rolebinding", "kafkalink-member-proxy", "--clusterrole", "kafkalink-member-proxy",
			"--serviceaccount", "kafkalink-member:kafkalink-member")
		w.must(err)
		w.startMemberKubelet(t, i, w.members[m], w.proxyBin)
	}
	gatewayCA := bindingtest.NewCA(t, "apps issuer", time.Now().Add(-time.Hour))
	w.createGatewayCert(gatewayCA)
	listenPort, mgmtPort := framework.FreePort(), framework.FreePort()
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	w.must(os.WriteFile(file, []byte(fmt.Sprintf(gatewayYAML, mgmtPort, listenPort)), 0o600))
	_, err := w.central.Kubectl("apply", "-f", file)
	w.must(err)

	w.eventually("the proxy Programmed in both members", limit, func() (bool, string) {
		gw, err := w.kl.KroxyliciousV1alpha1().KafkaGateways(ns).Get(w.ctx, gatewayName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, m := range gw.Status.Members {
			if m.Reachable && m.Programmed {
				n++
			}
		}
		return n == 2, fmt.Sprintf("members %+v", gw.Status.Members)
	})
	roots := x509.NewCertPool()
	roots.AddCert(gatewayCA.Cert)
	for i, m := range []string{"member-a", "member-b"} {
		if _, err := w.members[m].Client.AppsV1().Deployments(ns).Get(w.ctx, gateway.DeploymentName(gatewayName), metav1.GetOptions{}); err != nil {
			t.Fatalf("%s has no proxy Deployment: %v", m, err)
		}
		bindingtest.ProduceConsume(t, memberClientOpts(memberPodIP(i), listenPort, roots), topic, "through "+m)
	}

	// The central cluster lost: each member's proxy keeps serving its clients.
	w.central.StopAPIServer()
	bindingtest.ProduceConsume(t, memberClientOpts(memberPodIP(1), listenPort, roots), topic, "central cluster down")
	w.must(w.central.StartAPIServer(w.ctx))

	// Deleting the gateway removes its proxies from the members, then its finalizer.
	w.must(w.kl.KroxyliciousV1alpha1().KafkaGateways(ns).Delete(w.ctx, gatewayName, metav1.DeleteOptions{}))
	w.eventually("the members' proxies removed with the gateway", limit, func() (bool, string) {
		for _, m := range []string{"member-a", "member-b"} {
			if _, err := w.members[m].Client.AppsV1().Deployments(ns).Get(w.ctx, gateway.DeploymentName(gatewayName), metav1.GetOptions{}); err == nil {
				return false, m + " still runs the proxy"
			}
		}
		_, err := w.kl.KroxyliciousV1alpha1().KafkaGateways(ns).Get(w.ctx, gatewayName, metav1.GetOptions{})
		return err != nil, "the gateway still exists"
	})
}

// memberClientOpts is a franz-go client of the route as the SCRAM admin, reaching the proxy of
// one member: every proxy hostname leads to that member's address, TLS verified for the name.
func memberClientOpts(podIP string, port int, roots *x509.CertPool) []kgo.Opt {
	dialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := tls.Dialer{Config: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: host}}
		return d.DialContext(ctx, network, net.JoinHostPort(podIP, strconv.Itoa(port)))
	}
	return []kgo.Opt{
		kgo.SeedBrokers(net.JoinHostPort(bootstrapHost, strconv.Itoa(port))),
		kgo.Dialer(dialer),
		kgo.SASL(scram.Auth{User: adminUser, Pass: adminPassword}.AsSha512Mechanism()),
		kgo.RequestTimeoutOverhead(10 * time.Second),
	}
}

func (w *world) createGatewayCert(ca *bindingtest.CA) {
	names := []string{bootstrapHost}
	for id := range 6 {
		names = append(names, proxyHost(id))
	}
	certPEM, keyPEM, _ := ca.Issue(w.t, gatewayName, names, false, false)
	_, err := w.central.Client.CoreV1().Secrets(ns).Create(w.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "my-gateway-tls"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": ca.CertPEM},
	}, metav1.CreateOptions{})
	w.must(err)
}
