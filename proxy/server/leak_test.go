package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// upstreamIP is where the leak tests' kfake listens. It is not 127.0.0.1, the address the
// proxy connects from: responses may name the client address a broker saw (DescribeGroups'
// ClientHost), which is the proxy's own, not an upstream address.
const upstreamIP = "127.0.0.2"

// leakyKafka starts three kfake brokers on upstreamIP.
func leakyKafka(t *testing.T) (*kfake.Cluster, []int) {
	t.Helper()
	var ports []int
	listen := func(network, address string) (net.Listener, error) {
		_, port, _ := net.SplitHostPort(address)
		ln, err := net.Listen(network, net.JoinHostPort(upstreamIP, port))
		if err == nil {
			ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		}
		return ln, err
	}
	kc := fakeKafka(t, nil, "", kfake.ListenFn(listen), kfake.SeedTopics(3, "orders"))
	return kc, ports
}

// tap records every byte a client connection reads (responses, proxy to client) and writes
// (requests), per connection.
type tap struct {
	mu    sync.Mutex
	conns []*tapConn
}

type tapConn struct {
	net.Conn
	mu        sync.Mutex
	read, out bytes.Buffer
}

func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.read.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

func (c *tapConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.out.Write(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// dial is a kgo dialer to the proxy by host name (SNI), through the tap.
func (tp *tap) dial(roots *x509.CertPool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := &tls.Dialer{Config: &tls.Config{ServerName: host, RootCAs: roots}}
		c, err := d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			return nil, err
		}
		tc := &tapConn{Conn: c}
		tp.mu.Lock()
		tp.conns = append(tp.conns, tc)
		tp.mu.Unlock()
		return tc, nil
	}
}

// responses returns every connection's response bytes.
func (tp *tap) responses() [][]byte {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var out [][]byte
	for _, c := range tp.conns {
		c.mu.Lock()
		out = append(out, bytes.Clone(c.read.Bytes()))
		c.mu.Unlock()
	}
	return out
}

// upstreamLeaks lists where b names the upstream: the host as text, a port as ":port" text, or
// a port as big-endian bytes (32-bit, as Metadata writes it, or 16-bit, as DescribeQuorum
// does) right after host-name characters, which is how a host and port sit in a response.
func upstreamLeaks(b []byte, host string, ports []int) []string {
	var out []string
	if i := bytes.Index(b, []byte(host)); i >= 0 {
		out = append(out, fmt.Sprintf("host %s at byte %d", host, i))
	}
	hostChar := func(c byte) bool {
		return c == '.' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for _, p := range ports {
		if i := bytes.Index(b, []byte(":"+strconv.Itoa(p))); i >= 0 {
			out = append(out, fmt.Sprintf("port %d as text at byte %d", p, i))
		}
		for _, pat := range [][]byte{binary.BigEndian.AppendUint32(nil, uint32(p)), binary.BigEndian.AppendUint16(nil, uint16(p))} {
			for off := 0; ; {
				i := bytes.Index(b[off:], pat)
				if i < 0 {
					break
				}
				i += off
				j := i
				for j > 0 && hostChar(b[j-1]) {
					j--
				}
				if i-j >= 4 {
					out = append(out, fmt.Sprintf("port %d as %d bytes after %q at byte %d", p, len(pat), b[j:i], i))
				}
				off = i + 1
			}
		}
	}
	return out
}

// exchange is one request and its response on a tapped connection.
type exchange struct {
	key, version int16
	body         []byte // the response after its header
}

// exchanges pairs every tapped connection's requests and responses by correlation id.
func (tp *tap) exchanges(t *testing.T) []exchange {
	t.Helper()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var out []exchange
	for _, c := range tp.conns {
		c.mu.Lock()
		reqs := map[int32][2]int16{}
		for b := c.out.Bytes(); len(b) >= 12; {
			n := int(binary.BigEndian.Uint32(b)) + 4
			if n > len(b) {
				break
			}
			reqs[int32(binary.BigEndian.Uint32(b[8:]))] = [2]int16{int16(binary.BigEndian.Uint16(b[4:])), int16(binary.BigEndian.Uint16(b[6:]))}
			b = b[n:]
		}
		for b := c.read.Bytes(); len(b) >= 8; {
			n := int(binary.BigEndian.Uint32(b)) + 4
			if n > len(b) {
				break
			}
			kv, ok := reqs[int32(binary.BigEndian.Uint32(b[4:]))]
			if !ok {
				t.Fatalf("a response with correlation id %d answers no request", binary.BigEndian.Uint32(b[4:]))
			}
			body := b[8:n]
			if kafka.Flexible(kv[0], kv[1]) && kv[0] != kmsg.ApiVersions.Int16() {
				body = body[1:] // the empty response header tags kfake sends
			}
			out = append(out, exchange{key: kv[0], version: kv[1], body: body})
			b = b[n:]
		}
		c.mu.Unlock()
	}
	return out
}

// answerWithAddresses makes kfake answer DescribeConfigs and DescribeQuorum the way a real
// KRaft broker does, with its own addresses in them: kfake's broker configs hold none and it
// does not serve DescribeQuorum.
func answerWithAddresses(kc *kfake.Cluster, addrs []string, ports []int) {
	kc.ControlKey(kmsg.DescribeConfigs.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		r := req.(*kmsg.DescribeConfigsRequest)
		resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, res := range r.Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			for _, kv := range [][2]string{
				{"advertised.listeners", "PLAINTEXT://" + addrs[0]}, {"listeners", "PLAINTEXT://" + addrs[0]},
				{"controller.quorum.voters", "0@" + addrs[1]}, {"controller.quorum.bootstrap.servers", addrs[2]},
				{"log.retention.ms", "604800000"},
			} {
				c := kmsg.NewDescribeConfigsResponseResourceConfig()
				c.Name, c.Value, c.Source = kv[0], kmsg.StringPtr(kv[1]), kmsg.ConfigSourceStaticBrokerConfig
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = kv[0], kmsg.StringPtr(kv[1]), kmsg.ConfigSourceStaticBrokerConfig
				c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
				rr.Configs = append(rr.Configs, c)
			}
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil, true
	})
	kc.ControlKey(kmsg.DescribeQuorum.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
		for i, p := range ports {
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = int32(i)
			n.Listeners = []kmsg.DescribeQuorumResponseNodeListener{{Name: "CONTROLLER", Host: upstreamIP, Port: uint16(p)}}
			resp.Nodes = append(resp.Nodes, n)
		}
		return resp, nil, true
	})
}

// rawProxyRequest sends req on a new tapped connection to addr and returns the decoded response:
// for APIs kfake does not list in ApiVersions, which kgo would not send.
func rawProxyRequest(t *testing.T, ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), addr string, req kmsg.Request) kmsg.Response {
	t.Helper()
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("leak-test")).AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("%s through the proxy: %v", kmsg.NameForKey(req.Key()), err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, frame); err != nil {
		t.Fatal(err)
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(frame[5:]); err != nil { // correlation id, empty header tags
		t.Fatalf("decoding %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// TestNoUpstreamAddressLeaks drives a client session through the proxy with kgo and kadm
// (metadata, produce, consume in a group, a partition leader moving under the producer and the
// consumer, and the admin calls a console makes: describe cluster, configs, log dirs, groups,
// offsets, quorum) and scans
// every byte the proxy sent the client for the upstream host and ports.
func TestNoUpstreamAddressLeaks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sess := startLeakSession(t)
	kc, ports, tp, opts, bootstrap := sess.kc, sess.ports, sess.tap, sess.opts, sess.bootstrap
	answerWithAddresses(kc, kc.ListenAddrs(), ports)

	// Metadata, produce, group consume and commit, then a leader move under both.
	brokers := produceConsume(t, ctx, opts, "orders", 200)
	if len(brokers) != 3 {
		t.Fatalf("metadata lists %v", brokers)
	}
	moveLeaderUnderClients(t, ctx, kc, opts, "orders")

	admin, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, admin)
	if err != nil || len(dc.Brokers) != 3 {
		t.Fatalf("describe cluster: %v %+v", err, dc)
	}
	// What a console asks, through kadm: broker and topic configs, log dirs, groups, offsets.
	adm := kadm.NewClient(admin)
	if md, err := adm.BrokerMetadata(ctx); err != nil || len(md.Brokers) != 3 {
		t.Fatalf("broker metadata: %v %+v", err, md)
	}
	brokerCfgs, err := adm.DescribeBrokerConfigs(ctx, 0, 1)
	if err != nil {
		t.Fatalf("describe broker configs: %v", err)
	}
	topicCfgs, err := adm.DescribeTopicConfigs(ctx, "orders")
	if err != nil {
		t.Fatalf("describe topic configs: %v", err)
	}
	hidden := 0
	for _, res := range append(brokerCfgs, topicCfgs...) {
		if res.Err != nil {
			t.Fatalf("configs of %s: %v", res.Name, res.Err)
		}
		for _, c := range res.Configs {
			switch {
			case kafka.AddressConfig(c.Key) && (c.Value != nil || !c.Sensitive):
				t.Errorf("%s: %s not hidden: %+v", res.Name, c.Key, c)
			case kafka.AddressConfig(c.Key):
				hidden++
			case c.Key == "log.retention.ms" && c.MaybeValue() != "604800000":
				t.Errorf("%s: log.retention.ms changed: %+v", res.Name, c)
			}
		}
	}
	if hidden != 3*4 {
		t.Errorf("%d address configs hidden, want 4 for each of 3 resources", hidden)
	}
	if _, err := adm.DescribeAllLogDirs(ctx, nil); err != nil {
		t.Fatalf("describe log dirs: %v", err)
	}
	if groups, err := adm.ListGroups(ctx); err != nil || len(groups) == 0 {
		t.Fatalf("list groups: %v %+v", err, groups)
	}
	if _, err := adm.DescribeGroups(ctx, "g-orders"); err != nil {
		t.Fatalf("describe groups: %v", err)
	}
	if _, err := adm.FetchOffsets(ctx, "g-orders"); err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	// kfake lists no DescribeQuorum in ApiVersions, so kadm would not send it: sent raw.
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dq.SetVersion(2)
	quorum := rawProxyRequest(t, ctx, tp.dial(sess.roots), bootstrap, dq).(*kmsg.DescribeQuorumResponse)
	if len(quorum.Nodes) != 3 || len(quorum.Nodes[0].Listeners) != 0 {
		t.Errorf("describe quorum: nodes %+v, want three without listeners", quorum.Nodes)
	}

	// The scan can see a leak: the upstream's own answer fails it.
	direct := kmsg.NewPtrDescribeQuorumResponse()
	direct.SetVersion(2)
	direct.Nodes = []kmsg.DescribeQuorumResponseNode{{NodeID: 0, Listeners: []kmsg.DescribeQuorumResponseNodeListener{{Name: "C", Host: upstreamIP, Port: uint16(ports[0])}}}}
	if len(upstreamLeaks(direct.AppendTo(nil), upstreamIP, ports)) == 0 {
		t.Fatal("the scan does not see an upstream address")
	}
	total := 0
	for i, b := range tp.responses() {
		total += len(b)
		for _, l := range upstreamLeaks(b, upstreamIP, ports) {
			t.Errorf("connection %d: %s", i, l)
		}
	}
	seen := map[string]bool{}
	for _, ex := range tp.exchanges(t) {
		seen[kmsg.NameForKey(ex.key)] = true
	}
	for _, api := range []string{"Metadata", "Produce", "Fetch", "FindCoordinator", "JoinGroup", "SyncGroup", "OffsetCommit", "OffsetFetch",
		"DescribeCluster", "DescribeConfigs", "DescribeLogDirs", "ListGroups", "DescribeGroups", "DescribeQuorum"} {
		if !seen[api] {
			t.Errorf("the session made no %s request", api)
		}
	}
	t.Logf("scanned %d response bytes on %d connections", total, len(tp.responses()))
}

// leakSession is a proxy in front of leakyKafka, with a long host-name prefix, and kgo options
// that reach it through a tap.
type leakSession struct {
	kc        *kfake.Cluster
	ports     []int
	proxyPort int
	tap       *tap
	roots     *x509.CertPool
	opts      []kgo.Opt
	bootstrap string
}

func startLeakSession(t *testing.T) *leakSession {
	t.Helper()
	dir := t.TempDir()
	pki := newPKI(t)
	kc, ports := leakyKafka(t)
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf,
		Clusters: []testCluster{{Name: "a", Prefix: longPrefix, Target: kc.ListenAddrs()[0]}}}
	startProxy(t, writeConfig(t, dir, pc))
	s := &leakSession{kc: kc, ports: ports, proxyPort: pc.Port, tap: &tap{}, roots: pki.pool,
		bootstrap: fmt.Sprintf("%s-bootstrap.kafka.test:%d", longPrefix, pc.Port)}
	s.opts = []kgo.Opt{kgo.SeedBrokers(s.bootstrap), kgo.Dialer(s.tap.dial(pki.pool)), kgo.RequestRetries(20),
		kgo.RetryTimeout(30 * time.Second), kgo.MetadataMinAge(100 * time.Millisecond)}
	return s
}

// TestFetchNodeEndpointsAfterLeaderMove moves a partition's leader under a consuming (and a
// producing) client with proxy host names much longer than the upstream's, and finds the new
// leader's endpoint, rewritten to the proxy, in the Fetch response the old leader sent the
// consumer (KIP-951), and in the Produce response it sent the producer.
func TestFetchNodeEndpointsAfterLeaderMove(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sess := startLeakSession(t)
	next := moveLeaderUnderClients(t, ctx, sess.kc, sess.opts, "orders")
	want := fmt.Sprintf("%s-broker-%d.kafka.test:%d", longPrefix, next, sess.proxyPort)
	found := map[string]bool{}
	for _, ex := range sess.tap.exchanges(t) {
		var eps []string
		var leaders []int32
		switch {
		case ex.key == kmsg.Fetch.Int16() && ex.version >= 16:
			r := kmsg.NewPtrFetchResponse()
			r.SetVersion(ex.version)
			if err := r.ReadFrom(ex.body); err != nil {
				t.Fatalf("Fetch v%d response does not decode: %v", ex.version, err)
			}
			for _, b := range r.Brokers {
				eps = append(eps, fmt.Sprintf("%s:%d", b.Host, b.Port))
			}
			for _, tp := range r.Topics {
				for _, p := range tp.Partitions {
					if leaderMoved(p.ErrorCode) {
						leaders = append(leaders, p.CurrentLeader.LeaderID)
					}
				}
			}
		case ex.key == kmsg.Produce.Int16() && ex.version >= 10:
			r := kmsg.NewPtrProduceResponse()
			r.SetVersion(ex.version)
			if err := r.ReadFrom(ex.body); err != nil {
				t.Fatalf("Produce v%d response does not decode: %v", ex.version, err)
			}
			for _, b := range r.Brokers {
				eps = append(eps, fmt.Sprintf("%s:%d", b.Host, b.Port))
			}
			for _, tp := range r.Topics {
				for _, p := range tp.Partitions {
					if leaderMoved(p.ErrorCode) {
						leaders = append(leaders, p.CurrentLeader.LeaderID)
					}
				}
			}
		default:
			continue
		}
		if len(leaders) == 0 {
			continue
		}
		if leaders[0] != next || !slices.Contains(eps, want) {
			t.Errorf("%s v%d: leader %v with endpoints %v, want %d at %s", kmsg.NameForKey(ex.key), ex.version, leaders, eps, next, want)
			continue
		}
		found[kmsg.NameForKey(ex.key)] = true
	}
	if !found["Fetch"] || !found["Produce"] {
		t.Fatalf("the new leader's endpoint came in %v responses, want Fetch and Produce", found)
	}
}

// leaderMoved reports whether a partition error is one a broker answers with the new leader
// (KIP-951): NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH.
func leaderMoved(code int16) bool {
	return code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code
}

// longPrefix makes the proxy's host names much longer than the upstream's (an IP address), the
// case where streamed Fetch NodeEndpoints used to be dropped.
const longPrefix = "a-proxy-host-name-far-longer-than-the-upstream-ip"

// moveLeaderUnderClients produces to and consumes partition 0 of topic through the proxy,
// moves the partition's leader to another broker, and keeps producing and consuming: the old
// leader answers NOT_LEADER_OR_FOLLOWER with the new leader's endpoint (KIP-951). It returns the
// new leader's node id.
func moveLeaderUnderClients(t *testing.T, ctx context.Context, kc *kfake.Cluster, opts []kgo.Opt, topic string) int32 {
	t.Helper()
	prod, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	cons, err := kgo.NewClient(append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	produceOne := func(v string) {
		t.Helper()
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	consumeUntil := func(v string) {
		t.Helper()
		for {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("did not consume %s: %v", v, ctx.Err())
			}
			found := false
			fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == v })
			if found {
				return
			}
		}
	}
	produceOne("before-move")
	consumeUntil("before-move")
	old := kc.LeaderFor(topic, 0)
	next := (old + 1) % 3
	if err := kc.MoveTopicPartition(topic, 0, next); err != nil {
		t.Fatal(err)
	}
	produceOne("after-move")
	consumeUntil("after-move")
	return next
}
