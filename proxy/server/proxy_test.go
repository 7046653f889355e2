package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceConsume produces n records to topic, consumes them back in a consumer group and
// checks the metadata, all through the proxy; it returns the advertised broker addresses.
func produceConsume(t *testing.T, ctx context.Context, opts []kgo.Opt, topic string, n int) []string {
	t.Helper()
	prod, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation())...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := 0; i < n; i++ {
		prod.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("v%d", i))}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("produce: %v", err)
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, prod)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	var brokers []string
	for _, b := range resp.Brokers {
		brokers = append(brokers, fmt.Sprintf("%s:%d", b.Host, b.Port))
	}

	cons, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumerGroup("g-"+topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch error: %v", err) })
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	return brokers
}

func TestProxyEndToEnd(t *testing.T) {
	tests := map[string]struct {
		upstreamTLS bool
		scram       string
		mtls        bool
	}{
		"plain upstream without SASL":                 {},
		"TLS upstream without SASL":                   {upstreamTLS: true},
		"plain upstream with SCRAM through the proxy": {scram: "alice"},
		"TLS upstream with SCRAM and downstream mTLS": {upstreamTLS: true, scram: "bob", mtls: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			dir := t.TempDir()
			pki := newPKI(t)
			writeAtomic(t, dir+"/ca.crt", pki.pem)
			var upCert *tls.Certificate
			upCA := ""
			if tc.upstreamTLS {
				upCert = pki.issue(t, "kfake", nil, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Now().Add(time.Hour))
				upCA = dir + "/ca.crt"
			}
			kc := fakeKafka(t, upCert, tc.scram)
			cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
			pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf,
				Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0], UpstreamCA: upCA}}}
			var clientCert *tls.Certificate
			if tc.mtls {
				pc.ClientCAFile = dir + "/ca.crt"
				clientCert = pki.issue(t, "client", nil, nil, time.Now().Add(time.Hour))
			}
			p := startProxy(t, writeConfig(t, dir, pc))
			opts, dials := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port), pki.pool, tc.scram, clientCert)
			brokers := produceConsume(t, ctx, opts, "orders", 200)

			if len(brokers) != 3 {
				t.Fatalf("metadata lists %v, want 3 brokers", brokers)
			}
			for _, b := range append(brokers, dials.all()...) {
				host, port, _ := net.SplitHostPort(b)
				if port != fmt.Sprint(pc.Port) || (host != "a-bootstrap.kafka.test" && (!strings.HasPrefix(host, "a-broker-") || !strings.HasSuffix(host, ".kafka.test"))) {
					t.Errorf("address %s does not point at the proxy", b)
				}
			}
			// The management port reports readiness and per-virtual-cluster metrics.
			mgmt := p.srv.ManagementAddr().String()
			for path, want := range map[string]string{"/livez": "ok", "/readyz": "ok",
				"/metrics": `kafkalink_proxy_rewrites_total{api="Metadata",virtual_cluster="a"}`} {
				body := httpGet(t, "http://"+mgmt+path)
				if !strings.Contains(body, want) {
					t.Errorf("%s does not contain %s", path, want)
				}
			}
			if !strings.Contains(httpGet(t, "http://"+mgmt+"/metrics"), `kafkalink_proxy_bytes_total{direction="out",virtual_cluster="a"}`) {
				t.Error("no byte counter")
			}
		})
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestTwoVirtualClustersOnOnePort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	dir := t.TempDir()
	pki := newPKI(t)
	kcA, kcB := fakeKafka(t, nil, ""), fakeKafka(t, nil, "")
	// One certificate per virtual cluster, on the same listener: the SNI picks it.
	cfA, kfA := writePair(t, dir, "a", pki.issue(t, "a", []string{"*.a.kafka.test", "a-bootstrap.kafka.test", "a-broker-0.kafka.test", "a-broker-1.kafka.test", "a-broker-2.kafka.test"}, nil, time.Now().Add(time.Hour)))
	cfB, kfB := writePair(t, dir, "b", pki.issue(t, "b", []string{"*.kafka.test"}, nil, time.Now().Add(30*time.Minute)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cfA, KeyFile: kfA,
		ExtraListenerConfig: fmt.Sprintf("  - certificateFile: %s\n    privateKeyFile: %s\n", cfB, kfB),
		Clusters:            []testCluster{{Name: "a", Prefix: "a", Target: kcA.ListenAddrs()[0]}, {Name: "b", Prefix: "b", Target: kcB.ListenAddrs()[0]}}}
	// ExtraListenerConfig appends a key pair after the first; rebuild the YAML in that order.
	y := strings.Replace(pc.yaml(), "virtualClusters:", "", 1)
	y = strings.Replace(y, pc.ExtraListenerConfig, "", 1)
	y = strings.Replace(y, "    privateKeyFile: "+kfA+"\n", "    privateKeyFile: "+kfA+"\n"+pc.ExtraListenerConfig, 1)
	y = strings.Replace(y, "- name: a\n  listener", "virtualClusters:\n- name: a\n  listener", 1)
	path := dir + "/proxy.yaml"
	writeAtomic(t, path, []byte(y))
	startProxy(t, path)

	optsA, _ := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port), pki.pool, "", nil)
	optsB, _ := clientOpts(fmt.Sprintf("b-bootstrap.kafka.test:%d", pc.Port), pki.pool, "", nil)
	produceConsume(t, ctx, optsA, "only-in-a", 50)
	produceConsume(t, ctx, optsB, "only-in-b", 50)

	for _, c := range []struct {
		kc          *kfake.Cluster
		has, hasNot string
	}{{kcA, "only-in-a", "only-in-b"}, {kcB, "only-in-b", "only-in-a"}} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.kc.ListenAddrs()...))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		var topics []string
		for _, tp := range resp.Topics {
			topics = append(topics, *tp.Topic)
		}
		if s := strings.Join(topics, ","); !strings.Contains(s, c.has) || strings.Contains(s, c.hasNot) {
			t.Errorf("cluster has topics %s, want %s and not %s", s, c.has, c.hasNot)
		}
	}
	// Each SNI got its own certificate: a's names are in the first key pair only.
	for host, wantCN := range map[string]string{"a-broker-1.kafka.test": "a", "b-broker-1.kafka.test": "b"} {
		if cn := peerCN(t, pc.Port, host); cn != wantCN {
			t.Errorf("%s was served the certificate of %q, want %q", host, cn, wantCN)
		}
	}
}

func peerCN(t *testing.T, port int, sni string) string {
	t.Helper()
	c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{ServerName: sni, InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("dial %s: %v", sni, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

func TestUnknownSNIIsRefusedWithLogLine(t *testing.T) {
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}}}
	p := startProxy(t, writeConfig(t, dir, pc))
	for sni, reason := range map[string]string{"nope.kafka.test": "unknown_sni", "": "no_sni"} {
		c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", pc.Port), &tls.Config{ServerName: sni, InsecureSkipVerify: true})
		if err == nil {
			c.Close()
			t.Fatalf("SNI %q accepted", sni)
		}
		if !p.logs.waitFor("Refused TLS handshake", fmt.Sprintf(`"sni"=%q`, sni), `a-bootstrap.kafka.test, a-broker-$(nodeId).kafka.test`) {
			t.Errorf("no log line naming SNI %q and the patterns:\n%s", sni, p.logs)
		}
		// The metric is counted once the handshake has failed on the proxy's side, which can be
		// after the client saw the refusal: wait, bounded.
		counted := false
		for i := 0; i < 250 && !counted; i++ {
			counted = strings.Contains(httpGet(t, "http://"+p.srv.ManagementAddr().String()+"/metrics"), `reason="`+reason+`"`)
			if !counted {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if !counted {
			t.Errorf("no handshake failure metric with reason %s", reason)
		}
	}
}

// TestFilteredVirtualClusterIsNotServed: a virtual cluster whose filter cannot start (here a
// KMS the encryption filter does not know) is refused (fail closed); the others keep serving.
func TestFilteredVirtualClusterIsNotServed(t *testing.T) {
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{
		{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}, {Name: "f", Prefix: "f", Target: kc.ListenAddrs()[0], Filters: true}}}
	p := startProxy(t, writeConfig(t, dir, pc))
	if _, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", pc.Port), &tls.Config{ServerName: "f-bootstrap.kafka.test", RootCAs: pki.pool}); err == nil {
		t.Fatal("a virtual cluster with filters was served")
	}
	if !p.logs.waitFor("Refusing to serve virtual cluster", `"virtualCluster"="f"`, "filter encrypt (RecordEncryption): kms: \\\"x\\\" is not a KMS") {
		t.Errorf("no refusal log line:\n%s", p.logs)
	}
	if !strings.Contains(httpGet(t, "http://"+p.srv.ManagementAddr().String()+"/metrics"), `kafkalink_proxy_virtual_cluster_refused{virtual_cluster="f"} 1`) {
		t.Error("no refusal metric")
	}
	c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", pc.Port), &tls.Config{ServerName: "a-bootstrap.kafka.test", RootCAs: pki.pool})
	if err != nil {
		t.Fatalf("the unfiltered virtual cluster is not served: %v", err)
	}
	c.Close()
}

// TestCertificateRotationKeepsConnections replaces the server certificate on disk while a
// client produces: new connections get the new certificate, and the client's existing
// connections carry on (it dials nothing new).
func TestCertificateRotationKeepsConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	first := pki.issue(t, "first", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour))
	cf, kf := writePair(t, dir, "server", first)
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}}}
	p := startProxy(t, writeConfig(t, dir, pc))
	opts, dials := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port), pki.pool, "", nil)
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("rot"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, kgo.StringRecord("before")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var produced, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := cl.ProduceSync(ctx, kgo.StringRecord("during")).FirstErr(); err != nil {
				failed.Add(1)
			} else {
				produced.Add(1)
			}
		}
	}()
	for produced.Load() < 20 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	writePair(t, dir, "server", pki.issue(t, "second", []string{"*.kafka.test"}, nil, time.Now().Add(2*time.Hour)))
	for peerCN(t, pc.Port, "a-broker-0.kafka.test") != "second" {
		if ctx.Err() != nil {
			t.Fatalf("the new certificate was never served:\n%s", p.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mark := produced.Load()
	for produced.Load() < mark+20 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if failed.Load() != 0 {
		t.Errorf("%d produce requests failed across the rotation", failed.Load())
	}
	if n := dials.droppedCount(); n != 0 {
		t.Errorf("the proxy closed %d of the client's connections across the rotation", n)
	}
	if !p.logs.waitFor("Reloaded configuration and key material") {
		t.Errorf("no reload logged:\n%s", p.logs)
	}
}

// TestRestartedProxyServesHeldBrokerAddresses restarts the proxy while a client holds the
// rewritten broker addresses: the new proxy has learned nothing, so it asks the target
// itself, and the client keeps working.
func TestRestartedProxyServesHeldBrokerAddresses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}}}
	path := writeConfig(t, dir, pc)
	p := startProxy(t, path)
	opts, dials := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port), pki.pool, "", nil)
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("restart"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, kgo.StringRecord("before")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p.stop()
	p2 := startProxy(t, path)
	// Straight to a broker host, as a client holding metadata does.
	c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", pc.Port), &tls.Config{ServerName: "a-broker-2.kafka.test", RootCAs: pki.pool})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "t", "1"
	if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 9)); err != nil {
		t.Fatal(err)
	}
	var hdr [8]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		t.Fatalf("broker 2 not served after restart: %v\n%s", err, p2.logs)
	}
	c.Close()
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
			t.Fatalf("produce after restart: %v\n%s", err, p2.logs)
		}
	}
	// A restart does drop connections: this is what the reload tests' droppedCount
	// assertions would see if a reload dropped them.
	if dials.droppedCount() == 0 {
		t.Error("the client saw none of its connections dropped by the restart")
	}
}

// TestMalformedFrameClosesOnlyThatConnection sends garbage on one connection while another keeps working.
func TestMalformedFrameClosesOnlyThatConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}}}
	p := startProxy(t, writeConfig(t, dir, pc))
	opts, _ := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port), pki.pool, "", nil)
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("m"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	bad, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", pc.Port), &tls.Config{ServerName: "a-bootstrap.kafka.test", RootCAs: pki.pool})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, _ = bad.Write([]byte{0x7f, 0, 0, 0, 0, 3, 0, 1, 0, 0, 0, 1}) // 2 GiB frame
	_ = bad.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := bad.Read(make([]byte, 1)); err == nil {
		t.Fatal("the malformed connection stayed open")
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("y")).FirstErr(); err != nil {
		t.Fatalf("another connection suffered: %v", err)
	}
	if !p.logs.waitFor("Closed connection on a malformed frame") {
		t.Errorf("no log line:\n%s", p.logs)
	}
}

// TestReloadAddsAndRemovesVirtualClusters edits the config file: a new virtual cluster is
// served, a removed one is refused, and the untouched one keeps its connections.
func TestReloadAddsAndRemovesVirtualClusters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{
		{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}, {Name: "b", Prefix: "b", Target: kc.ListenAddrs()[0]}}}
	path := writeConfig(t, dir, pc)
	p := startProxy(t, path)
	opts, dials := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port), pki.pool, "", nil)
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("r"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pc.Clusters = []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}, {Name: "c", Prefix: "c", Target: kc.ListenAddrs()[0]}}
	writeConfig(t, dir, pc)
	for {
		_, errB := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", pc.Port), &tls.Config{ServerName: "b-bootstrap.kafka.test", RootCAs: pki.pool})
		cc, errC := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", pc.Port), &tls.Config{ServerName: "c-bootstrap.kafka.test", RootCAs: pki.pool})
		if errB != nil && errC == nil {
			cc.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("reload not applied:\n%s", p.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("y")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if n := dials.droppedCount(); n != 0 {
		t.Errorf("the proxy closed %d of the client's connections across the reload", n)
	}
	// A broken config file is refused and the proxy keeps serving.
	writeAtomic(t, path, []byte("version: nope\n"))
	for !p.logs.contains("Reload failed") {
		if ctx.Err() != nil {
			t.Fatal("a broken config was not reported")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("z")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(path)
}
