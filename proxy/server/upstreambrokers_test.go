package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConfiguredUpstreamBrokers: with upstreamBrokers (what the operator writes for a Strimzi
// Kafka backend) a fresh proxy serves a client whose first connection is to a broker host,
// behind a SASL-only cluster, without a Metadata request of its own; a node id not listed is
// refused rather than discovered.
func TestConfiguredUpstreamBrokers(t *testing.T) {
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "alice")
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf,
		Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}}}
	var brokers strings.Builder
	brokers.WriteString("  upstreamBrokers:\n")
	for id, addr := range kc.ListenAddrs() {
		fmt.Fprintf(&brokers, "  - {nodeId: %d, address: %q}\n", id, addr)
	}
	yaml := strings.Replace(pc.yaml(), "  targetBootstrap: "+kc.ListenAddrs()[0]+"\n", "  targetBootstrap: "+kc.ListenAddrs()[0]+"\n"+brokers.String(), 1)
	path := dir + "/proxy.yaml"
	writeAtomic(t, path, []byte(yaml))
	p := startProxy(t, path)

	ask := func(host string) error {
		opts, _ := clientOpts(fmt.Sprintf("%s:%d", host, pc.Port), pki.pool, "alice", nil)
		cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0))...)
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
		return err
	}
	if err := ask("a-broker-2.kafka.test"); err != nil {
		t.Fatalf("a client's first connection, to broker 2: %v\n%s", err, p.logs)
	}
	if err := ask("a-broker-7.kafka.test"); err == nil {
		t.Error("broker 7, which upstreamBrokers does not list, was served")
	}
	if p.logs.contains("Metadata request to") {
		t.Errorf("the proxy asked the bootstrap for broker addresses:\n%s", p.logs)
	}
}
