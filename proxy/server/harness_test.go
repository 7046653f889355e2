package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"k8s.io/klog/v2"
)

// testPKI is a throwaway certificate authority.
type testPKI struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	pem    []byte
	pool   *x509.CertPool
	serial int64
}

func newPKI(t testing.TB) *testPKI {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	p := &testPKI{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pool: x509.NewCertPool(), serial: 1}
	p.pool.AddCert(cert)
	return p
}

// issue returns a certificate for the given SANs (or only a common name when dns and ips are empty).
func (p *testPKI) issue(t testing.TB, cn string, dns []string, ips []net.IP, notAfter time.Time) *tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn}, DNSNames: dns, IPAddresses: ips,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// writePair writes a certificate and key as PEM files and returns their paths.
func writePair(t testing.TB, dir, name string, c *tls.Certificate) (string, string) {
	t.Helper()
	kb, _ := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	certFile, keyFile := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	// Write the key first and the certificate last, and atomically, as kubelet's symlink swap does.
	writeAtomic(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}))
	writeAtomic(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}))
	return certFile, keyFile
}

func writeAtomic(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// logBuffer collects log lines for assertions.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) contains(parts ...string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
next:
	for _, l := range b.lines {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		return true
	}
	return false
}

// waitFor reports whether a line with every part appears within a few seconds. The proxy logs
// after it acts, so a client can see the effect (a refused handshake, a closed connection)
// before the line is written.
func (b *logBuffer) waitFor(parts ...string) bool {
	for range 250 {
		if b.contains(parts...) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return b.contains(parts...)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// runningProxy is an in-process proxy.
type runningProxy struct {
	srv    *Server
	cancel context.CancelFunc
	done   chan error
	logs   *logBuffer
}

func startProxy(t testing.TB, configPath string) *runningProxy {
	t.Helper()
	return startProxyWith(t, Options{ConfigPath: configPath})
}

func startProxyWith(t testing.TB, opts Options) *runningProxy {
	t.Helper()
	opts.PollInterval = 50 * time.Millisecond
	logs := &logBuffer{}
	logger := funcr.New(func(prefix, args string) {
		logs.mu.Lock()
		logs.lines = append(logs.lines, prefix+" "+args)
		logs.mu.Unlock()
	}, funcr.Options{Verbosity: 2})
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	p := &runningProxy{srv: New(opts), cancel: cancel, done: make(chan error, 1), logs: logs}
	go func() { p.done <- p.srv.Run(ctx) }()
	for !p.srv.Ready() {
		select {
		case err := <-p.done:
			t.Fatalf("proxy stopped: %v\n%s", err, logs)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Cleanup(p.stop)
	return p
}

func (p *runningProxy) stop() {
	p.cancel()
	<-p.done
	p.done <- nil // later stop calls return at once
}

// fakeKafka starts a kfake cluster of three brokers, with TLS when tlsCert is set and SCRAM when scramUser is set.
func fakeKafka(t testing.TB, tlsCert *tls.Certificate, scramUser string, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(3), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3)}, opts...)
	if tlsCert != nil {
		opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{*tlsCert}}))
	}
	if scramUser != "" {
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", scramUser, "secret-"+scramUser))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// dialLog records the addresses a client dialled.
type dialLog struct {
	mu      sync.Mutex
	hosts   map[string]int
	dropped int // connections the far end ended while the client still used them
}

// droppedCount is how many of the client's connections the proxy closed. A count of
// dials would not do: the client may open another connection to a broker at any time
// (one per request kind), which says nothing about the proxy.
func (d *dialLog) droppedCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dropped
}

// watchedConn reports to its dialLog a read that fails before the client closed it.
type watchedConn struct {
	net.Conn
	log    *dialLog
	closed atomic.Bool
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && !c.closed.Load() {
		c.log.mu.Lock()
		c.log.dropped++
		c.log.mu.Unlock()
	}
	return n, err
}

func (c *watchedConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

func (d *dialLog) all() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for h := range d.hosts {
		out = append(out, h)
	}
	return out
}

// clientOpts returns kgo options that reach the proxy by host name: every host resolves
// to loopback, and TLS uses the host as SNI, so routing by SNI is real.
func clientOpts(seed string, roots *x509.CertPool, scramUser string, clientCert *tls.Certificate) ([]kgo.Opt, *dialLog) {
	dl := &dialLog{hosts: map[string]int{}}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		dl.mu.Lock()
		dl.hosts[addr]++
		dl.mu.Unlock()
		cfg := &tls.Config{ServerName: host, RootCAs: roots}
		if clientCert != nil {
			cfg.Certificates = []tls.Certificate{*clientCert}
		}
		d := &tls.Dialer{Config: cfg}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: conn, log: dl}, nil
	}
	opts := []kgo.Opt{kgo.SeedBrokers(seed), kgo.Dialer(dial), kgo.RequestRetries(20), kgo.RetryTimeout(30 * time.Second),
		kgo.MetadataMinAge(100 * time.Millisecond)}
	if scramUser != "" {
		opts = append(opts, kgo.SASL(scram.Auth{User: scramUser, Pass: "secret-" + scramUser}.AsSha256Mechanism()))
	}
	return opts, dl
}

// proxyConfig is a one-listener configuration for tests, in YAML.
type proxyConfig struct {
	Port, MgmtPort      int
	CertFile, KeyFile   string
	ClientCAFile        string
	Clusters            []testCluster
	ExtraListenerConfig string
}

type testCluster struct {
	Name, Prefix, Target string
	UpstreamCA           string
	Filters              bool
	// FiltersYAML, when set, is the virtual cluster's filters field, as YAML.
	FiltersYAML string
}

func (c proxyConfig) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: kafkalink.io/proxy-config/v1\nlisteners:\n- name: tls\n  port: %d\n  bindAddress: 127.0.0.1\n  keyPairs:\n  - certificateFile: %s\n    privateKeyFile: %s\n", c.Port, c.CertFile, c.KeyFile)
	if c.ClientCAFile != "" {
		fmt.Fprintf(&b, "  clientCAFiles: [%s]\n", c.ClientCAFile)
	}
	b.WriteString(c.ExtraListenerConfig)
	b.WriteString("virtualClusters:\n")
	for _, vc := range c.Clusters {
		fmt.Fprintf(&b, "- name: %s\n  listener: tls\n  bootstrapHost: %s-bootstrap.kafka.test\n  brokerPattern: %s-broker-$(nodeId).kafka.test\n  targetBootstrap: %s\n",
			vc.Name, vc.Prefix, vc.Prefix, vc.Target)
		if vc.UpstreamCA != "" {
			fmt.Fprintf(&b, "  upstreamTLS:\n    caFiles: [%s]\n", vc.UpstreamCA)
		}
		if vc.Filters {
			b.WriteString("  filters:\n  - name: encrypt\n    type: RecordEncryption\n    config: {kms: x}\n")
		}
		b.WriteString(vc.FiltersYAML)
	}
	fmt.Fprintf(&b, "management:\n  port: %d\n  bindAddress: 127.0.0.1\n  metrics: true\nlimits:\n  upstreamRetryBudget: 5s\n  drainTimeout: 5s\n", c.MgmtPort)
	return b.String()
}

func writeConfig(t testing.TB, dir string, c proxyConfig) string {
	t.Helper()
	p := filepath.Join(dir, "proxy.yaml")
	writeAtomic(t, p, []byte(c.yaml()))
	return p
}
