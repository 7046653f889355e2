package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/internal/freeport"
	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/proxytest"
)

// hostileProxy is the proxy binary (this test binary running main) on loopback in front of kfake.
type hostileProxy struct {
	port, mgmt int
	roots      *x509.CertPool
	kfake      *kfake.Cluster
	// hashed names the brokers of virtual cluster h, whose broker names are the hash mapping's.
	hashed *config.BrokerNames
}

func startHostileProxy(t *testing.T) *hostileProxy {
	t.Helper()
	dir := t.TempDir()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
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
	brokerKey := make([]byte, config.BrokerKeySize)
	_, _ = rand.Read(brokerKey)
	brokerKeyFile := filepath.Join(dir, "broker-identity.key")
	if err := os.WriteFile(brokerKeyFile, brokerKey, 0o600); err != nil {
		t.Fatal(err)
	}
	hashedVC := config.VirtualCluster{BrokerPattern: "h-broker-$(nodeId).test"}
	hashed, err := config.NewBrokerNames(&hashedVC, brokerKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`version: kafkalink.io/proxy-config/v1
listeners:
- name: tls
  port: %d
  keyPairs: [{certificateFile: %s, privateKeyFile: %s}]
virtualClusters:
- {name: p, listener: tls, bootstrapHost: p-bootstrap.test, brokerPattern: p-broker-$(nodeId).test, targetBootstrap: %[4]q}
- {name: h, listener: tls, bootstrapHost: h-bootstrap.test, brokerPattern: h-broker-$(nodeId).test, targetBootstrap: %[4]q,
   brokerIdentity: {mapping: hash, keyFile: %[6]s}}
management: {port: %[5]d, metrics: true}
limits:
  maxFrameBytes: 1048576
  maxConnections: 60
  maxConnectionsPerSource: 40
  handshakeTimeout: 2s
  firstRequestTimeout: 1s
  writeTimeout: 1s
  idleTimeout: 10s
  drainTimeout: 2s
`, ports[0], certFile, keyFile, kc.ListenAddrs()[0], ports[1], brokerKeyFile)
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "--config", path, "--bind-address", "127.0.0.1")
	cmd.Env = append(os.Environ(), "KAFKALINK_PROXY_RUN_MAIN=1")
	logFile, err := os.Create(filepath.Join(dir, "proxy.log"))
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
		case err := <-done:
			if err != nil {
				t.Errorf("proxy did not exit cleanly: %v", err)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("proxy did not exit on SIGTERM")
		}
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("proxy log (tail):\n%s", tail(string(b), 4000))
		}
	})
	p := &hostileProxy{port: ports[0], mgmt: ports[1], roots: roots, kfake: kc, hashed: hashed}
	for i := 0; ; i++ {
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", p.mgmt)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
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
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// metric returns the value of a metric line (name and labels) from the proxy's /metrics.
func (p *hostileProxy) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", p.mgmt))
	if err != nil {
		t.Fatalf("the proxy's metrics are gone (did it crash?): %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}

func (p *hostileProxy) dialTLS(t *testing.T, sni string) (*tls.Conn, error) {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	return tls.DialWithDialer(d, "tcp", fmt.Sprintf("127.0.0.1:%d", p.port), &tls.Config{ServerName: sni, RootCAs: p.roots})
}

func (p *hostileProxy) dialRaw(t *testing.T, from string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wellBehaved produces one record and reads it back through the proxy with franz-go.
func (p *hostileProxy) wellBehaved(t *testing.T, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := &tls.Dialer{Config: &tls.Config{ServerName: host, RootCAs: p.roots}}
		return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", p.port))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("p-bootstrap.test:%d", p.port)), kgo.Dialer(dial), kgo.AllowAutoTopicCreation(),
		kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequestRetries(20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, kgo.StringRecord("hello")).FirstErr(); err != nil {
		t.Fatalf("a well-behaved client cannot produce: %v", err)
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatal("a well-behaved client cannot consume")
		}
		if fs.NumRecords() > 0 {
			return
		}
	}
}

// closed waits (bounded) for the proxy to close c; false if it is still open after 15 s.
func closed(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			var ne net.Error
			return !errors.As(err, &ne) || !ne.Timeout()
		}
	}
}

// TestHostileClients runs the proxy binary and, one after the other, a set of hostile clients.
// After each, the proxy must still serve a franz-go client, and its goroutines and heap in use
// (from its own /metrics) must come back near their baseline.
func TestHostileClients(t *testing.T) {
	p := startHostileProxy(t)
	p.wellBehaved(t, "warmup")
	time.Sleep(200 * time.Millisecond)
	baseG := p.metric(t, "go_goroutines")
	baseH := p.metric(t, "go_memstats_heap_inuse_bytes")
	t.Logf("baseline: %v goroutines, %.1f MiB heap in use", baseG, baseH/(1<<20))

	apiVersions := kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile")).AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1)
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"H1 frame", func(t *testing.T) {
			frame, _ := hex.DecodeString("000000280000000900000001ffff00ebffffffffffffff7f0000000000000000000000000000000000000000")
			for range 3 {
				c, err := p.dialTLS(t, "p-bootstrap.test")
				if err != nil {
					t.Fatal(err)
				}
				_, _ = c.Write(frame)
				if !closed(c) {
					t.Error("the H1 connection stayed open")
				}
				c.Close()
			}
		}},
		{"oversized frame", func(t *testing.T) {
			c, err := p.dialTLS(t, "p-bootstrap.test")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, _ = c.Write([]byte{0x7f, 0xff, 0xff, 0xff, 0, 18, 0, 3, 0, 0, 0, 1})
			if !closed(c) {
				t.Error("an oversized frame was accepted")
			}
		}},
		{"truncated frames then close", func(t *testing.T) {
			for cut := 1; cut < len(apiVersions); cut += 5 {
				c, err := p.dialTLS(t, "p-bootstrap.test")
				if err != nil {
					t.Fatal(err)
				}
				// A whole first request, then a cut one.
				_, _ = c.Write(apiVersions)
				_, _ = c.Write(apiVersions[:cut])
				c.Close()
			}
		}},
		{"slowloris before the handshake", func(t *testing.T) {
			c := p.dialRaw(t, "")
			defer c.Close()
			hello := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}
			start := time.Now()
			for _, b := range hello {
				if _, err := c.Write([]byte{b}); err != nil {
					break
				}
				time.Sleep(300 * time.Millisecond)
			}
			if !closed(c) {
				t.Error("a trickled handshake stayed open")
			}
			t.Logf("closed after %v", time.Since(start).Round(100*time.Millisecond))
		}},
		{"slowloris after the handshake", func(t *testing.T) {
			c, err := p.dialTLS(t, "p-bootstrap.test")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, b := range apiVersions[:6] {
				if _, err := c.Write([]byte{b}); err != nil {
					break
				}
				time.Sleep(300 * time.Millisecond)
			}
			if !closed(c) {
				t.Error("a trickled first request stayed open")
			}
		}},
		{"non-reading client", func(t *testing.T) {
			proxytest.FillTopic(t, p.kfake.ListenAddrs()[0], "big")
			raw := p.dialRaw(t, "")
			_ = raw.(*net.TCPConn).SetReadBuffer(4 << 10)
			c := tls.Client(raw, &tls.Config{ServerName: "p-bootstrap.test", RootCAs: p.roots})
			defer c.Close()
			f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("hog"))
			fetch := f.AppendRequest(nil, proxytest.BigFetch("big", 1), 2)
			prod := kmsg.NewPtrProduceRequest()
			prod.SetVersion(9)
			prod.Acks, prod.TimeoutMillis = 1, 1000
			produce := f.AppendRequest(nil, prod, 3)
			active := func() float64 { return p.metric(t, `kafkalink_proxy_connections_active{virtual_cluster="p"}`) }
			if _, err := c.Write(fetch); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { return active() == 1 }, "the non-reading connection was never relayed")
			// Under load, loopback TCP can stall this client's own sends while its receive
			// window is closed; the connection is then merely idle and idleTimeout (10s) ends
			// it. Otherwise the client keeps sending and only writeTimeout can.
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				_ = c.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
				if _, err := c.Write(append(append([]byte{}, fetch...), produce...)); err != nil {
					var ne net.Error
					if !errors.As(err, &ne) || !ne.Timeout() {
						return // closed by the proxy
					}
				}
				if active() == 0 {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Error("a client that never reads kept its connection")
		}},
		{"connection flood above maxConnectionsPerSource", func(t *testing.T) {
			before := p.metric(t, `kafkalink_proxy_connections_refused_total{reason="per_source"}`)
			var cs []net.Conn
			for range 50 {
				cs = append(cs, p.dialRaw(t, "127.0.0.1"))
			}
			waitFor(t, func() bool {
				return p.metric(t, `kafkalink_proxy_connections_refused_total{reason="per_source"}`) >= before+1
			}, "no per-source refusal")
			for _, c := range cs {
				c.Close()
			}
		}},
		{"connection flood above maxConnections", func(t *testing.T) {
			before := p.metric(t, `kafkalink_proxy_connections_refused_total{reason="max_connections"}`)
			var cs []net.Conn
			for i := range 70 {
				cs = append(cs, p.dialRaw(t, fmt.Sprintf("127.0.0.%d", 2+i%2)))
			}
			waitFor(t, func() bool {
				return p.metric(t, `kafkalink_proxy_connections_refused_total{reason="max_connections"}`) >= before+1
			}, "no max-connections refusal")
			for _, c := range cs {
				c.Close()
			}
		}},
		{"unknown SNIs", func(t *testing.T) {
			for i := range 20 {
				if c, err := p.dialTLS(t, fmt.Sprintf("nope-%d.example.com", i)); err == nil {
					c.Close()
					t.Fatal("an unknown SNI was served")
				}
			}
		}},
		{"forged hashed broker names", func(t *testing.T) {
			// The hash mapping reads a broker's node id back from its SNI: one AES block per
			// handshake, whatever the client writes. Names of the right shape with tokens the key
			// did not make, and decimal ones, are refused; the real name is served.
			forged := []string{"h-broker-0.test", "h-broker-" + strings.Repeat("a", config.BrokerTokenLength) + ".test",
				"h-broker-" + strings.Repeat("7", config.BrokerTokenLength-1) + ".test", "h-broker-" + strings.Repeat("z", config.BrokerTokenLength+1) + ".test"}
			for i := range 100 {
				token := []byte(p.hashed.Token(int32(i)))
				token[i%len(token)] ^= 1 // one character off the real name
				forged = append(forged, "h-broker-"+string(token)+".test")
			}
			for _, sni := range forged {
				if c, err := p.dialTLS(t, sni); err == nil {
					c.Close()
					t.Fatalf("the forged broker name %s was served", sni)
				}
			}
			c, err := p.dialTLS(t, p.hashed.Host(0))
			if err != nil {
				t.Fatalf("the real hashed name of broker 0 was refused: %v", err)
			}
			c.Close()
		}},
		{"plaintext on the TLS port", func(t *testing.T) {
			c := p.dialRaw(t, "")
			defer c.Close()
			_, _ = c.Write(apiVersions)
			if !closed(c) {
				t.Error("plaintext stayed open")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t)
			p.wellBehaved(t, "after")
			var g, h float64
			waitFor(t, func() bool {
				g, h = p.metric(t, "go_goroutines"), p.metric(t, "go_memstats_heap_inuse_bytes")
				return g <= baseG+5 && h <= baseH+64<<20
			}, "goroutines or heap did not come back near the baseline")
			t.Logf("%v goroutines, %.1f MiB heap in use", g, h/(1<<20))
		})
	}
	if n := p.metric(t, "kafkalink_proxy_connection_panics_total"); n != 0 {
		t.Errorf("%v connection panics", n)
	}
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal(msg)
}
