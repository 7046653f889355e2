package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// countingForwarder relays TCP connections to target and counts them: the proxy's upstream
// connections to the bootstrap, seen from outside its process.
func countingForwarder(t *testing.T, target string) (addr string, accepted *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = &atomic.Int32{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return ln.Addr().String(), accepted
}

// TestBinarySaslTermination runs the proxy binary with SaslTermination in front of a SCRAM-only
// kfake that knows only the proxy's user, with a store the binary's scram-credential command
// wrote. A wrong password is refused by the proxy after fixedAuthDelay with no connection to the
// cluster; alice's own password produces and consumes.
func TestBinarySaslTermination(t *testing.T) {
	dir := t.TempDir()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "proxy", "proxy-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	bootstrap, dials := countingForwarder(t, kc.ListenAddrs()[0])
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	store := filepath.Join(dir, "scram-users.json")
	gen := exec.CommandContext(context.Background(), os.Args[0], "scram-credential", "--user", "alice",
		"--password-file", write("alice.txt", "alice-secret\n"), "--mechanism", "SCRAM-SHA-512", "--iterations", "4096", "--store", store)
	gen.Env = append(os.Environ(), "KAFKALINK_PROXY_RUN_MAIN=1")
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("scram-credential: %v\n%s", err, out)
	}
	ports := freePorts(t, 2)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeSelfSigned(t, certFile, keyFile)
	cfg := write("config.yaml", fmt.Sprintf(`version: kafkalink.io/proxy-config/v1
listeners:
- name: tls
  port: %d
  keyPairs: [{certificateFile: %s, privateKeyFile: %s}]
virtualClusters:
- name: p
  listener: tls
  bootstrapHost: p-bootstrap.test
  brokerPattern: p-broker-$(nodeId).test
  targetBootstrap: %q
  discovery: {mechanism: SCRAM-SHA-512, username: proxy, passwordFile: %s}
  filters:
  - name: terminate
    type: io.kroxylicious.filter.sasl.termination.SaslTermination
    config:
      mechanisms: [{mechanism: SCRAM-SHA-512, credentialStore: ScramCredentialFile, credentialStoreConfig: {file: %s}}]
      fixedAuthDelay: 300ms
management: {port: %d}
`, ports[0], certFile, keyFile, bootstrap, write("proxy-password", "proxy-secret\n"), store, ports[1]))
	startBinary(t, cfg, ports[1])

	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemBytes)
	client := func(pass string, opts ...kgo.Opt) *kgo.Client {
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			d := &tls.Dialer{Config: &tls.Config{ServerName: host, RootCAs: roots}}
			return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", ports[0]))
		}
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("p-bootstrap.test:%d", ports[0])), kgo.Dialer(dial),
			kgo.SASL(scram.Auth{User: "alice", Pass: pass}.AsSha512Mechanism())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	start := time.Now()
	if err := client("wrong", kgo.RequestRetries(0)).Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("refused after %s, before fixedAuthDelay", waited)
	}
	if n := dials.Load(); n != 0 {
		t.Fatalf("%d connections to the cluster for a wrong password", n)
	}

	cl := client("alice-secret", kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("orders"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequestRetries(20))
	if err := cl.ProduceSync(ctx, kgo.StringRecord("hello")).FirstErr(); err != nil {
		t.Fatalf("produce as alice: %v", err)
	}
	for fs := cl.PollFetches(ctx); fs.NumRecords() == 0; fs = cl.PollFetches(ctx) {
		if ctx.Err() != nil {
			t.Fatal("alice cannot consume")
		}
	}
	if dials.Load() == 0 {
		t.Fatal("alice's requests reached the cluster through no connection of the proxy's")
	}
}

// startBinary runs the proxy binary with cfg until the test ends, and waits for /readyz.
func startBinary(t *testing.T, cfg string, mgmt int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "--config", cfg, "--bind-address", "127.0.0.1")
	cmd.Env = append(os.Environ(), "KAFKALINK_PROXY_RUN_MAIN=1")
	logFile, err := os.Create(filepath.Join(filepath.Dir(cfg), "proxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("proxy log (tail):\n%s", tail(string(b), 4000))
		}
	})
	for i := 0; ; i++ {
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", mgmt)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-done:
			t.Fatalf("proxy exited: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if i > 1000 {
			t.Fatal("proxy never became ready")
		}
	}
}
