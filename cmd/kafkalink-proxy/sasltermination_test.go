package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
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
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kafkalink/kafkalink/internal/freeport"
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
	ports := freeport.Ports(2)
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

	hostileBeforeAuthentication(t, roots, ports[0])
	if n := dials.Load(); n != 0 {
		t.Fatalf("%d connections to the cluster for clients that never authenticated", n)
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

// hostileBeforeAuthentication sends what a client that has not authenticated may try: a Produce
// first, a SaslAuthenticate frame announcing 1 MiB after an ApiVersions (over the 512 KiB a
// connection may send before it authenticated), and garbage SCRAM bytes. Each connection must end (or be refused) without
// the proxy reading what was announced.
func hostileBeforeAuthentication(t *testing.T, roots *x509.CertPool, port int) {
	t.Helper()
	dial := func() *tls.Conn {
		c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{ServerName: "p-bootstrap.test", RootCAs: roots})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	frame := func(req kmsg.Request) []byte { return kmsg.NewRequestFormatter().AppendRequest(nil, req, 1) }
	closed := func(c net.Conn) bool {
		_, err := io.ReadAll(c)
		return err == nil || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
	}

	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	c := dial()
	if _, err := c.Write(frame(produce)); err != nil || !closed(c) {
		t.Errorf("a Produce before authenticating: %v, closed %v", err, err == nil)
	}

	// After an ApiVersions: a first request announcing more waits for its bytes (within
	// limits.firstRequestTimeout, its buffer growing only as they arrive) before any filter runs.
	c = dial()
	versions := kmsg.NewPtrApiVersionsRequest()
	versions.SetVersion(3)
	versions.ClientSoftwareName, versions.ClientSoftwareVersion = "t", "1"
	announce := binary.BigEndian.AppendUint32(frame(versions), 1<<20)
	announce = append(announce, 0, 36, 0, 2, 0, 0, 0, 1, 0xff, 0xff, 0) // SaslAuthenticate v2, no client id, tags
	if _, err := c.Write(announce); err != nil || !closed(c) {
		t.Errorf("a 1 MiB SaslAuthenticate announced before authenticating: %v", err)
	}

	c = dial()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "SCRAM-SHA-512"
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00\xffnot,a=scram,message")
	if _, err := c.Write(append(frame(hs), frame(auth)...)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	var codes []int16
	for i := range 2 {
		size := make([]byte, 4)
		if _, err := io.ReadFull(r, size); err != nil {
			break
		}
		body := make([]byte, binary.BigEndian.Uint32(size))
		if _, err := io.ReadFull(r, body); err != nil {
			break
		}
		at := 4 + i // the correlation id, and for SaslAuthenticate v2 (flexible) the header's tags
		if len(body) < at+2 {
			break
		}
		codes = append(codes, int16(binary.BigEndian.Uint16(body[at:])))
	}
	if len(codes) != 2 || codes[0] != 0 || codes[1] != kerr.SaslAuthenticationFailed.Code {
		t.Errorf("garbage SCRAM bytes: error codes %v, want [0 %d]", codes, kerr.SaslAuthenticationFailed.Code)
	}
}
