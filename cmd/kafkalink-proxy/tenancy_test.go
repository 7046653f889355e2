package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalink/kafkalink/internal/freeport"
)

// TestBinaryTwoTenants runs the proxy binary with virtual clusters a and b, each with
// MultiTenant, in front of one kfake: each tenant creates orders, produces and consumes it with
// group g; each sees only its own topic, group and records, without a prefix; the broker holds
// a-orders, b-orders, a-g and b-g.
func TestBinaryTwoTenants(t *testing.T) {
	dir := t.TempDir()
	kc, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.DefaultNumPartitions(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	ports := freeport.Ports(2)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeSelfSigned(t, certFile, keyFile)
	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemBytes)
	cfg := fmt.Sprintf("version: kafkalink.io/proxy-config/v1\nlisteners:\n- name: tls\n  port: %d\n  keyPairs: [{certificateFile: %q, privateKeyFile: %q}]\nvirtualClusters:\n", ports[0], certFile, keyFile)
	for _, vc := range []string{"a", "b"} {
		cfg += fmt.Sprintf("- {name: %[1]s, listener: tls, bootstrapHost: %[1]s-bootstrap.test, brokerPattern: %[1]s-broker-$(nodeId).test, targetBootstrap: %[2]q, filters: [{name: tenant, type: MultiTenant, config: {}}]}\n", vc, kc.ListenAddrs()[0])
	}
	cfg += fmt.Sprintf("management: {port: %d}\n", ports[1])
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "--config", path, "--bind-address", "127.0.0.1")
	cmd.Env = append(os.Environ(), "KAFKALINK_PROXY_RUN_MAIN=1")
	logFile := filepath.Join(dir, "proxy.log")
	lf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitReady(t, ports[1], logFile)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := func(vc string, opts ...kgo.Opt) *kgo.Client {
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			d := &tls.Dialer{Config: &tls.Config{ServerName: host, RootCAs: roots}}
			return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", ports[0]))
		}
		base := []kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("%s-bootstrap.test:%d", vc, ports[0])), kgo.Dialer(dial), kgo.RequestRetries(20)}
		cl, err := kgo.NewClient(append(base, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	for _, vc := range []string{"a", "b"} {
		adm := kadm.NewClient(client(vc))
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
			t.Fatalf("%s creates orders: %v", vc, err)
		}
		if err := client(vc, kgo.DefaultProduceTopic("orders")).ProduceSync(ctx, kgo.StringRecord(vc+"'s order")).FirstErr(); err != nil {
			t.Fatalf("%s produces: %v", vc, err)
		}
		cons := client(vc, kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("g"))
		var got []string
		for len(got) < 1 && ctx.Err() == nil {
			cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if !slices.Equal(got, []string{vc + "'s order"}) {
			t.Errorf("%s consumed %q, want only its own record", vc, got)
		}
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		topics, err := adm.ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		groups, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(topics.Names(), []string{"orders"}) || !slices.Equal(groups.Groups(), []string{"g"}) {
			t.Errorf("%s sees topics %v and groups %v, want orders and g", vc, topics.Names(), groups.Groups())
		}
	}
	direct, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	topics, err := kadm.NewClient(direct).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := kadm.NewClient(direct).ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(topics.Names(), []string{"a-orders", "b-orders"}) || !slices.Contains(groups.Groups(), "a-g") || !slices.Contains(groups.Groups(), "b-g") {
		t.Errorf("the broker holds topics %v and groups %v", topics.Names(), groups.Groups())
	}
}

// waitReady waits for the management port's readiness, for at most 20 s.
func waitReady(t *testing.T, mgmt int, logFile string) {
	t.Helper()
	for range 1000 {
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", mgmt)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(logFile)
	t.Fatalf("the proxy never became ready:\n%s", b)
}
