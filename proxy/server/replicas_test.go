package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// replicaSet is three proxy replicas of one configuration on their own ports, and a client
// dialer that plays a Service's load balancing badly on purpose: the bootstrap host leads to
// replica A, broker hosts alternate between B and C, so every broker connection lands on a
// replica that has not relayed the client's metadata.
type replicaSet struct {
	t       *testing.T
	pki     *testPKI
	dir     string
	yaml    func(port int) string
	ports   [3]int
	mu      sync.Mutex
	proxies [3]*runningProxy
}

func (rs *replicaSet) start(i int) {
	rs.t.Helper()
	path := fmt.Sprintf("%s/proxy-%d.yaml", rs.dir, i)
	writeAtomic(rs.t, path, []byte(rs.yaml(rs.ports[i])))
	p := startProxy(rs.t, path)
	rs.mu.Lock()
	rs.proxies[i] = p
	rs.mu.Unlock()
}

// restart replaces replica i with a fresh one on the same port: it has learned nothing.
func (rs *replicaSet) restart(i int) {
	rs.mu.Lock()
	p := rs.proxies[i]
	rs.mu.Unlock()
	p.stop()
	rs.start(i)
}

func (rs *replicaSet) replicaFor(host string) int {
	if strings.Contains(host, "-bootstrap.") {
		return 0
	}
	var id int
	if _, err := fmt.Sscanf(host, "a-broker-%d.kafka.test", &id); err != nil {
		return 0
	}
	return 1 + id%2
}

func (rs *replicaSet) clientOpts() []kgo.Opt {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := &tls.Dialer{Config: &tls.Config{ServerName: host, RootCAs: rs.pki.pool}}
		return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", rs.ports[rs.replicaFor(host)]))
	}
	return []kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("a-bootstrap.kafka.test:%d", rs.ports[0])), kgo.Dialer(dial),
		kgo.SASL(scram.Auth{User: "alice", Pass: "secret-alice"}.AsSha256Mechanism()),
		kgo.RequestRetries(20), kgo.RetryTimeout(30 * time.Second), kgo.MetadataMinAge(100 * time.Millisecond)}
}

// newReplicaSet starts three replicas in front of a SCRAM-only kfake; discovery gives the
// virtual cluster's discovery lines of YAML, if any, for the set's folder (which holds the user's
// password in file "password").
func newReplicaSet(t *testing.T, discovery func(dir string) string) *replicaSet {
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "alice")
	writeAtomic(t, dir+"/password", []byte("secret-alice\n"))
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	rs := &replicaSet{t: t, pki: pki, dir: dir}
	for i := range rs.ports {
		rs.ports[i] = freePort(t)
	}
	rs.yaml = func(port int) string {
		pc := proxyConfig{Port: port, MgmtPort: freePort(t), CertFile: cf, KeyFile: kf,
			Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}}}
		target := "  targetBootstrap: " + kc.ListenAddrs()[0] + "\n"
		return strings.Replace(pc.yaml(), target, target+discovery(dir), 1)
	}
	for i := range rs.proxies {
		rs.start(i)
	}
	return rs
}

// TestReplicasBehindSASLOnlyBootstrap: three replicas, a SCRAM-only kfake, and a client whose
// broker connections land on replicas B and C that never relayed its metadata, one of them
// freshly restarted. With a discovery credential the replicas find the brokers with a Metadata
// request of their own, authenticated, and the client produces and consumes with no error.
func TestReplicasBehindSASLOnlyBootstrap(t *testing.T) {
	rs := newReplicaSet(t, func(dir string) string {
		return "  discovery: {mechanism: SCRAM-SHA-256, username: alice, passwordFile: " + dir + "/password}\n"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	defer func() {
		if t.Failed() {
			for i, p := range rs.proxies {
				t.Logf("replica %d:\n%s", i, p.logs)
			}
		}
	}()
	produceConsume(t, ctx, rs.clientOpts(), "orders", 100)
	rs.restart(2)
	produceConsume(t, ctx, rs.clientOpts(), "orders-after-restart", 100)
	for i, p := range rs.proxies {
		if p.logs.contains("upstream broker unknown") {
			t.Errorf("replica %d refused a broker:\n%s", i, p.logs)
		}
	}
}

// TestReplicasWithoutDiscoveryCredential is the same set without a credential: a replica that
// has not relayed the metadata cannot find the brokers behind the SASL-only bootstrap. It answers
// the client's ApiVersions with BROKER_NOT_AVAILABLE, which clients retry, rather than a bare
// close, and says once what to configure.
func TestReplicasWithoutDiscoveryCredential(t *testing.T) {
	rs := newReplicaSet(t, func(string) string { return "" })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	direct, err := kgo.NewClient(append(rs.clientOpts(), kgo.SeedBrokers(fmt.Sprintf("a-broker-1.kafka.test:%d", rs.ports[0])), kgo.RequestRetries(0))...)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	_, err = direct.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
	if !errors.Is(err, kerr.BrokerNotAvailable) || !kerr.IsRetriable(err) {
		t.Errorf("a broker connection to a replica that cannot find the broker: %v, want the retriable %v", err, kerr.BrokerNotAvailable)
	}
	cl, err := kgo.NewClient(append(rs.clientOpts(), kgo.RequestRetries(1), kgo.AllowAutoTopicCreation())...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("v")}).FirstErr(); err == nil {
		t.Fatal("a produce through replicas that cannot find the brokers succeeded")
	}
	if !rs.proxies[1].logs.waitFor("discoveryCredential") && !rs.proxies[2].logs.waitFor("discoveryCredential") {
		t.Errorf("no replica said to set a discoveryCredential:\n%s\n%s", rs.proxies[1].logs, rs.proxies[2].logs)
	}
}
