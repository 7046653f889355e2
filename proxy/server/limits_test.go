package server

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRequest writes one request and returns the connection for reading the response.
func rawRequest(t *testing.T, c net.Conn, req kmsg.Request, corr int32) {
	t.Helper()
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, corr)); err != nil {
		t.Fatal(err)
	}
}

func readFrame(c net.Conn) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c, b)
	return b, err
}

func simpleProxy(t *testing.T, limits string) (*runningProxy, proxyConfig, *testPKI) {
	t.Helper()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	kc.ControlKey(kmsg.Metadata.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		time.Sleep(300 * time.Millisecond) // keeps a Metadata request in flight while the test acts
		return nil, nil, false
	})
	kc.KeepControl()
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}}}
	y := strings.Replace(pc.yaml(), "limits:\n", "limits:\n"+limits, 1)
	path := dir + "/proxy.yaml"
	writeAtomic(t, path, []byte(y))
	return startProxy(t, path), pc, pki
}

func dialTLS(t *testing.T, pc proxyConfig, pki *testPKI, sni string) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", pc.Port), &tls.Config{ServerName: sni, RootCAs: pki.pool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestGracefulDrain stops the proxy while a request is in flight: its response still
// arrives, then the connection closes and Run returns.
func TestGracefulDrain(t *testing.T) {
	p, pc, pki := simpleProxy(t, "")
	c := dialTLS(t, pc, pki, "a-bootstrap.kafka.test")
	rawRequest(t, c, kmsg.NewPtrMetadataRequest(), 11)
	time.Sleep(50 * time.Millisecond) // the request reaches the broker, which holds it
	stopped := make(chan struct{})
	go func() { p.stop(); close(stopped) }()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := readFrame(c)
	if err != nil {
		t.Fatalf("in-flight response lost in the drain: %v", err)
	}
	if corr := int32(binary.BigEndian.Uint32(b)); corr != 11 {
		t.Fatalf("correlation id %d", corr)
	}
	if _, err := readFrame(c); !errors.Is(err, io.EOF) {
		t.Fatalf("connection not closed after the drain: %v", err)
	}
	<-stopped
	if !p.logs.waitFor("Draining connections", `"connections"=1`) {
		t.Errorf("no drain log line:\n%s", p.logs)
	}
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	_, pc, pki := simpleProxy(t, "  idleTimeout: 300ms\n")
	c := dialTLS(t, pc, pki, "a-bootstrap.kafka.test")
	rawRequest(t, c, kmsg.NewPtrApiVersionsRequest(), 1)
	if _, err := readFrame(c); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := readFrame(c); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection not closed by the proxy: %v", err)
	}
}

func TestMaxConnections(t *testing.T) {
	p, pc, pki := simpleProxy(t, "  maxConnections: 1\n")
	first := dialTLS(t, pc, pki, "a-bootstrap.kafka.test")
	rawRequest(t, first, kmsg.NewPtrApiVersionsRequest(), 1)
	if _, err := readFrame(first); err != nil {
		t.Fatal(err)
	}
	if c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", pc.Port), &tls.Config{ServerName: "a-bootstrap.kafka.test", RootCAs: pki.pool}); err == nil {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("a connection over the limit was served")
		}
		c.Close()
	}
	if !strings.Contains(httpGet(t, "http://"+p.srv.ManagementAddr().String()+"/metrics"), "kafkalink_proxy_connection_limit_rejections_total 1") {
		t.Error("no rejection metric")
	}
	// The first connection is unaffected.
	rawRequest(t, first, kmsg.NewPtrApiVersionsRequest(), 2)
	if _, err := readFrame(first); err != nil {
		t.Fatal(err)
	}
}

// TestTooNewApiVersionsIsAnsweredByTheProxy sends ApiVersions above the proxy's version.
func TestTooNewApiVersionsIsAnsweredByTheProxy(t *testing.T) {
	_, pc, pki := simpleProxy(t, "")
	c := dialTLS(t, pc, pki, "a-bootstrap.kafka.test")
	req := kmsg.NewPtrApiVersionsRequest()
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 5)
	binary.BigEndian.PutUint16(frame[6:], 99)
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	b, err := readFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	var r kmsg.ApiVersionsResponse
	if err := r.ReadFrom(b[4:]); err != nil || r.ErrorCode != kerr.UnsupportedVersion.Code || len(r.ApiKeys) != 1 || r.ApiKeys[0].ApiKey != kmsg.ApiVersions.Int16() {
		t.Fatalf("answer %+v %v", r, err)
	}
}

// TestPlainListenerPortPerBroker serves a virtual cluster on a plain listener, a port per broker.
// Large records then go through the proxy and back intact: plain TCP on both sides, so their
// Produce requests and Fetch responses are spliced, and still counted.
func TestPlainListenerPortPerBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	dir := t.TempDir()
	kc := fakeKafka(t, nil, "")
	port, first, mgmt := freePort(t), freePort(t), freePort(t)
	// Port-per-broker needs three consecutive free ports; retry a few bases.
	for i := 0; i < 20; i++ {
		ok := true
		for n := 0; n < 3; n++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", first+n))
			if err != nil {
				ok = false
				break
			}
			ln.Close()
		}
		if ok {
			break
		}
		first = freePort(t)
	}
	cfg := fmt.Sprintf(`version: kafkalink.io/proxy-config/v1
listeners:
- {name: plain, port: %d, bindAddress: 127.0.0.1, portPerBroker: {firstBrokerPort: %d, maxNodeId: 2}}
virtualClusters:
- {name: p, listener: plain, bootstrapHost: p-bootstrap.kafka.test, brokerPattern: p-broker-$(nodeId).kafka.test, targetBootstrap: %q}
management: {port: %d, bindAddress: 127.0.0.1, metrics: true}
`, port, first, kc.ListenAddrs()[0], mgmt)
	path := dir + "/proxy.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, path)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, p, _ := net.SplitHostPort(addr)
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", p))
	}
	brokers := produceConsume(t, ctx, []kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("p-bootstrap.kafka.test:%d", port)), kgo.Dialer(dial)}, "plain", 50)
	for i := 0; i < 3; i++ {
		want := fmt.Sprintf("p-broker-%d.kafka.test:%d", i, first+i)
		if !strings.Contains(strings.Join(brokers, ","), want) {
			t.Errorf("metadata %v lacks %s", brokers, want)
		}
	}

	opts := []kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("p-bootstrap.kafka.test:%d", port)), kgo.Dialer(dial)}
	values := largeRecordsRoundTrip(t, ctx, opts, "large", 24, 200<<10)
	for _, dir := range []string{"in", "out"} {
		if v := metricValue(t, p, fmt.Sprintf(`kafkalink_proxy_bytes_total{direction=%q,virtual_cluster="p"}`, dir)); v < float64(values) {
			t.Errorf("%s bytes counted %v, fewer than the %d bytes of values that went %s", dir, v, values, dir)
		}
	}
}

// largeRecordsRoundTrip produces n records of size random bytes each and consumes them back,
// checking every value; it returns the bytes of values sent.
func largeRecordsRoundTrip(t *testing.T, ctx context.Context, opts []kgo.Opt, topic string, n, size int) int {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(50*time.Millisecond),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sent := map[string][]byte{}
	for i := range n {
		v := make([]byte, size)
		_, _ = crand.Read(v)
		key := fmt.Sprint(i)
		sent[key] = v
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: v}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("produce: %v", err)
	}
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Errorf("fetch error: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if !bytes.Equal(r.Value, sent[string(r.Key)]) {
				t.Fatalf("record %s came back changed", r.Key)
			}
			got++
		})
	}
	return n * size
}

// TestAcksZeroProduceThroughProxy sends Produce requests with acks=0 (the broker never
// answers them) and then an ApiVersions request on the same connection: its response comes
// back, so nothing waits for the answers that never come.
func TestAcksZeroProduceThroughProxy(t *testing.T) {
	_, pc, pki := simpleProxy(t, "")
	c := dialTLS(t, pc, pki, "a-bootstrap.kafka.test")
	for i := int32(0); i < 50; i++ {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(11)
		req.Acks = 0
		req.TimeoutMillis = 1000
		rawRequest(t, c, req, 100+i)
	}
	rawRequest(t, c, kmsg.NewPtrApiVersionsRequest(), 7)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := readFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(b)); corr != 7 {
		t.Fatalf("got the response to correlation id %d, want 7", corr)
	}
}
