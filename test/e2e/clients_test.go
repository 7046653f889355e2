package e2e_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	corev1 "k8s.io/api/core/v1"

	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/test/kubelet"
)

// dialLog records every address a client dialed.
type dialLog struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialLog) add(a string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addrs = append(d.addrs, a)
}

func (d *dialLog) all() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// proxiedClientOpts configures franz-go from the projected binding files only, like
// bindingtest.ClientOpts, for a cluster behind the proxy's in-cluster hostnames. Those names do
// not resolve on a test machine, so the dialer plays cluster DNS: the proxy's hostnames (and
// only those) lead to loopback, where the proxy listens, with TLS verified for the hostname the
// client asked for. Any other address the client was told about fails the dial, and every
// dialed address lands in log.
func proxiedClientOpts(t testing.TB, dir string, log *dialLog) []kgo.Opt {
	t.Helper()
	b := bindingtest.Files{T: t, Dir: dir}
	if p := b.Must("security.protocol"); p != "SASL_SSL" {
		t.Fatalf("security.protocol %s, want SASL_SSL", p)
	}
	if m := b.Must("sasl.mechanism"); m != "SCRAM-SHA-512" {
		t.Fatalf("sasl.mechanism %s, want SCRAM-SHA-512", m)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(b.Must("ssl.truststore.crt"))) {
		t.Fatal("ssl.truststore.crt holds no certificate")
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if log != nil {
			log.add(addr)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if !isProxyHost(host) {
			return nil, fmt.Errorf("the client was sent to %s, which is not one of the proxy's hostnames", addr)
		}
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second},
			Config: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: host}}
		return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
	}
	return []kgo.Opt{
		kgo.SeedBrokers(strings.Split(b.Must("bootstrap.servers"), ",")...),
		kgo.Dialer(dial),
		kgo.SASL(scram.Auth{User: b.Must("username"), Pass: b.Must("password")}.AsSha512Mechanism()),
	}
}

// metadataBrokers asks for metadata and returns the brokers as host:port.
func metadataBrokers(t testing.TB, opts []kgo.Opt) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	var out []string
	for _, b := range resp.Brokers {
		out = append(out, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	return out
}

// authenticates reports whether one metadata request from a seed broker succeeds. A seed
// broker's request does not retry, so one SCRAM exchange decides; kfake closes the connection
// on a failed one.
func authenticates(t testing.TB, opts []kgo.Opt) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

// connCounter counts a client's broker connections and disconnections.
type connCounter struct{ connects, disconnects atomic.Int64 }

func (c *connCounter) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		c.connects.Add(1)
	}
}

func (c *connCounter) OnBrokerDisconnect(kgo.BrokerMetadata, net.Conn) { c.disconnects.Add(1) }

// longLivedClient is an application that stays connected: it produces to and consumes from
// partition 0 of the topic over the same connections for the whole test.
type longLivedClient struct {
	cl    *kgo.Client
	conns *connCounter
}

func newLongLivedClient(t testing.TB, opts []kgo.Opt) *longLivedClient {
	t.Helper()
	c := &longLivedClient{conns: &connCounter{}}
	opts = append(append([]kgo.Opt(nil), opts...), kgo.WithHooks(c.conns),
		kgo.ConnIdleTimeout(10*time.Minute), // franz-go reaps idle connections after 20s by default
		kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	c.cl = cl
	return c
}

// roundTrip produces value and consumes until it comes back.
func (c *longLivedClient) roundTrip(t testing.TB, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value), Partition: 0}).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", value, err)
	}
	for {
		fs := c.cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s: %v (%v)", value, err, fs.Errors())
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("consume %s: %v", value, fe.Err)
		}
		found := false
		fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == value })
		if found {
			return
		}
	}
}

// requireKcat skips when Debian's kcat is missing.
func requireKcat(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat is not installed (apt-get install -y kcat); CI must install it")
	}
}

// kcatArgs are kcat's connection options, read from the projected binding files only.
func kcatArgs(t *testing.T, dir string) []string {
	t.Helper()
	b := bindingtest.Files{T: t, Dir: dir}
	return []string{
		"-b", b.Must("bootstrap.servers"),
		"-X", "security.protocol=" + b.Must("security.protocol"),
		"-X", "ssl.ca.location=" + filepath.Join(dir, "ssl.truststore.crt"),
		"-X", "sasl.mechanisms=" + b.Must("sasl.mechanism"),
		"-X", "sasl.username=" + b.Must("username"),
		"-X", "sasl.password=" + b.Must("password"),
		"-m", "20",
	}
}

// kcat runs Debian's kcat. With hosts set it runs in a private mount namespace whose
// /etc/hosts maps the proxy's hostnames to loopback, as cluster DNS would lead a pod to the
// proxy's Services; without, it runs as is.
func kcat(t *testing.T, hosts []string, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	if len(hosts) > 0 {
		hostsFile := filepath.Join(t.TempDir(), "hosts")
		if err := os.WriteFile(hostsFile, kubelet.HostsFile("", []corev1.HostAlias{{IP: "127.0.0.1", Hostnames: hosts}}), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd = kubelet.PrivateHostsCommand(ctx, hostsFile, "kcat", args...)
	} else {
		cmd = exec.CommandContext(ctx, "kcat", args...)
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// kcatProduceConsume produces value to partition 0 and reads the partition from the start.
func kcatProduceConsume(t *testing.T, hosts, conn []string, value string) {
	t.Helper()
	kcat(t, hosts, value+"\n", append(append([]string(nil), conn...), "-P", "-t", topic, "-p", "0")...)
	got := kcat(t, hosts, "", append(append([]string(nil), conn...), "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q")...)
	if !strings.Contains(got, value) {
		t.Fatalf("kcat consumed %q, want %q among it", got, value)
	}
}

// servedCertificate is the leaf certificate the proxy presents for the bootstrap host, verified
// against roots.
func servedCertificate(port int, roots *x509.CertPool) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		&tls.Config{MinVersion: tls.VersionTLS12, ServerName: bootstrapHost, RootCAs: roots})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}
