package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kafkalink/kafkalink/proxy/filter/sasltermination/termtest"
	"github.com/kafkalink/kafkalink/proxy/kafka"
	"github.com/kafkalink/kafkalink/proxy/oauth/oauthtest"
)

// terminatingProxy is a proxy whose virtual cluster a terminates SCRAM-SHA-512 in front of a
// SCRAM-only kfake, where the proxy is user "proxy"; dials counts its upstream connections.
type terminatingProxy struct {
	p     *runningProxy
	pc    proxyConfig
	pki   *testPKI
	dir   string
	kc    *kfake.Cluster
	dials *atomic.Int32
}

// saslTerminationFilter is the filter's YAML for tests, with the store file and the options.
func saslTerminationFilter(store, extra string) string {
	return `  filters:
  - name: terminate
    type: SaslTermination
    config:
      mechanisms:
      - mechanism: SCRAM-SHA-512
        credentialStore: ScramCredentialFile
        credentialStoreConfig: {file: ` + store + `}
` + extra
}

// writeScramStore writes a credential store of users (name to password) for SCRAM-SHA-512.
func writeScramStore(t testing.TB, path string, users map[string]string) {
	t.Helper()
	b, err := termtest.Store(users)
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, path, b)
}

// startTerminatingProxy runs the proxy with SaslTermination (extra: more of its config, or more
// filters) in front of kfake; alice's password is alice-secret.
func startTerminatingProxy(t testing.TB, extra string) terminatingProxy {
	return startTerminatingProxyWith(t, extra, true)
}

// startTerminatingProxyWith: saslUpstream false is a kfake without SASL, and no credential.
func startTerminatingProxyWith(t testing.TB, extra string, saslUpstream bool) terminatingProxy {
	return startTerminatingProxyOpts(t, extra, saslUpstream, Options{})
}

// startTerminatingProxyOpts is startTerminatingProxyWith with the proxy's options (Listen).
func startTerminatingProxyOpts(t testing.TB, extra string, saslUpstream bool, opts Options) terminatingProxy {
	t.Helper()
	dir := t.TempDir()
	pki := newPKI(t)
	var kc *kfake.Cluster
	credential := ""
	if saslUpstream {
		kc = fakeKafka(t, nil, "", kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "proxy", "proxy-secret"))
		writeAtomic(t, dir+"/password", []byte("proxy-secret\n"))
		credential = "  discovery: {mechanism: SCRAM-SHA-512, username: proxy, passwordFile: " + dir + "/password}\n"
	} else {
		kc = fakeKafka(t, nil, "")
	}
	writeScramStore(t, dir+"/users.json", map[string]string{"alice": "alice-secret"})
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf,
		Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0],
			FiltersYAML: credential + saslTerminationFilter(dir+"/users.json", extra)}}}
	dials := &atomic.Int32{}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	opts.ConfigPath, opts.Dial = writeConfig(t, dir, pc), dial
	p := startProxyWith(t, opts)
	return terminatingProxy{p, pc, pki, dir, kc, dials}
}

// client is a franz-go client of the proxy authenticating as user with pass (SCRAM-SHA-512).
func (tp terminatingProxy) client(t testing.TB, user, pass string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base, _ := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", tp.pc.Port), tp.pki.pool, "", nil)
	base = append(base, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()), kgo.AllowAutoTopicCreation())
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestSaslTerminationScram: a SCRAM-SHA-512 client authenticates at the proxy (kfake knows only
// the proxy's own user, so the client's SASL cannot have reached it), produces and consumes.
func TestSaslTerminationScram(t *testing.T) {
	tp := startTerminatingProxy(t, "")
	cl := tp.client(t, "alice", "alice-secret", kgo.ConsumeTopics("orders"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("one")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v\n%s", err, tp.p.logs)
	}
	fs := cl.PollRecords(ctx, 1)
	if err := fs.Err(); err != nil {
		t.Fatalf("consume: %v", err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "one" {
		t.Fatalf("consumed %v", recs)
	}
	if tp.dials.Load() == 0 {
		t.Fatal("no upstream connection was made")
	}
	if !tp.p.logs.contains("SASL authenticated", `"user"="alice"`) {
		t.Fatalf("no authentication logged:\n%s", tp.p.logs)
	}
}

// TestSaslTerminationPlainUpstream: a broker without SASL needs no credential: the proxy's own
// upstream handshake is ApiVersions only.
func TestSaslTerminationPlainUpstream(t *testing.T) {
	tp := startTerminatingProxyWith(t, "", false)
	cl := tp.client(t, "alice", "alice-secret")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("one")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v\n%s", err, tp.p.logs)
	}
}

// TestLazyUpstream: the upstream is dialed by the first write, once; reads wait for it; a close
// before any write means no dial at all, and ends a waiting read; deadlines set before the dial
// apply to the connection.
func TestLazyUpstream(t *testing.T) {
	var dials atomic.Int32
	pipe := func(context.Context) (net.Conn, error) {
		dials.Add(1)
		a, b := net.Pipe()
		go func() { _, _ = io.Copy(b, b) }() // an echoing broker
		return a, nil
	}
	l := newLazyUpstream(context.Background(), pipe)
	_ = l.SetReadDeadline(time.Now().Add(10 * time.Second))
	read := make(chan string, 1)
	go func() {
		b := make([]byte, 4)
		n, _ := io.ReadFull(l, b)
		read <- string(b[:n])
	}()
	if _, err := l.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if got := <-read; got != "ping" || dials.Load() != 1 {
		t.Fatalf("read %q after %d dials", got, dials.Load())
	}
	_ = l.Close()

	closed := newLazyUpstream(context.Background(), pipe)
	waiting := make(chan error, 1)
	go func() { _, err := closed.Read(make([]byte, 1)); waiting <- err }()
	_ = closed.Close()
	if err := <-waiting; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read of a lazy upstream closed before its dial: %v", err)
	}
	if _, err := closed.Write([]byte("x")); err == nil {
		t.Fatal("a write after close dialed")
	}
	if dials.Load() != 1 {
		t.Fatalf("%d dials; a closed lazy upstream must not dial", dials.Load())
	}
}

// TestSaslTerminationWrongPassword: a wrong password is refused by the proxy with
// SASL_AUTHENTICATION_FAILED, after fixedAuthDelay, and no upstream connection is made.
func TestSaslTerminationWrongPassword(t *testing.T) {
	tp := startTerminatingProxy(t, "      fixedAuthDelay: 300ms\n")
	for _, user := range []string{"alice", "mallory"} {
		cl := tp.client(t, user, "wrong", kgo.RequestRetries(0))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		err := cl.Ping(ctx)
		cancel()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s: ping: %v, want SASL_AUTHENTICATION_FAILED", user, err)
		}
		if waited := time.Since(start); waited < 300*time.Millisecond {
			t.Fatalf("%s: refused after %s, before the fixed delay", user, waited)
		}
	}
	if n := tp.dials.Load(); n != 0 {
		t.Fatalf("%d upstream connections for clients that never authenticated", n)
	}
}

// TestSaslTerminationReauthentication: with maxTimeBeforeReauth, SaslAuthenticate carries a
// session lifetime, franz-go re-authenticates on its connections, and producing goes on.
func TestSaslTerminationReauthentication(t *testing.T) {
	tp := startTerminatingProxy(t, "      maxTimeBeforeReauth: 1s\n")
	cl := tp.client(t, "alice", "alice-secret")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 40 && !tp.p.logs.contains("SASL authenticated", `"reauthentication"=true`); i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v\n%s", i, err, tp.p.logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !tp.p.logs.contains("SASL authenticated", `"reauthentication"=true`, `"sessionLifetimeMs"=`) {
		t.Fatalf("no re-authentication in 40 produces over 8s:\n%s", tp.p.logs)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after re-authentication: %v", err)
	}
}

// termConn is a TLS connection to the proxy's bootstrap that sends requests by hand.
type termConn struct {
	net.Conn
	br   *bufio.Reader
	f    *kmsg.RequestFormatter
	corr int32
}

func (tp terminatingProxy) dialRaw(t *testing.T) *termConn {
	t.Helper()
	c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", tp.pc.Port), &tls.Config{ServerName: "a-bootstrap.kafka.test", RootCAs: tp.pki.pool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return &termConn{Conn: c, br: bufio.NewReader(c), f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))}
}

// do sends req and reads its response into resp.
func (r *termConn) do(req kmsg.Request, resp kmsg.Response) error {
	r.corr++
	return roundTrip(r, r.br, r.f, req, resp, r.corr, 1<<20)
}

// closed reports whether the proxy closed the connection (a read ends without bytes).
func (r *termConn) closed() bool {
	_, err := r.br.ReadByte()
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || (err != nil && strings.Contains(err.Error(), "reset"))
}

func (r *termConn) handshake(t *testing.T, mech string) *kmsg.SASLHandshakeResponse {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(1)
	req.Mechanism = mech
	resp := kmsg.NewPtrSASLHandshakeResponse()
	if err := r.do(req, resp); err != nil {
		t.Fatalf("SaslHandshake: %v", err)
	}
	return resp
}

// TestSaslTerminationHostile: clients that never authenticate, over raw connections, each
// closed by the proxy as a broker's SASL listener would close them, and none costs an upstream
// connection.
func TestSaslTerminationHostile(t *testing.T) {
	tp := startTerminatingProxy(t, "      fixedAuthDelay: 0s\n")
	t.Run("ApiVersions is answered locally with the proxy's versions", func(t *testing.T) {
		r := tp.dialRaw(t)
		req, resp := kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrApiVersionsResponse()
		req.SetVersion(3)
		if err := r.do(req, resp); err != nil || resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
			t.Fatalf("ApiVersions: %v, code %d, %d keys", err, resp.ErrorCode, len(resp.ApiKeys))
		}
	})
	t.Run("Produce without a handshake closes the connection", func(t *testing.T) {
		r := tp.dialRaw(t)
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks = -1
		if _, err := r.Write(r.f.AppendRequest(nil, req, 1)); err != nil {
			t.Fatal(err)
		}
		if !r.closed() {
			t.Fatal("the connection stayed open")
		}
	})
	t.Run("an unknown mechanism is refused, listing the enabled ones", func(t *testing.T) {
		r := tp.dialRaw(t)
		resp := r.handshake(t, "PLAIN")
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "SCRAM-SHA-512" {
			t.Fatalf("handshake: code %d, mechanisms %v", resp.ErrorCode, resp.SupportedMechanisms)
		}
	})
	t.Run("garbage SASL bytes fail the authentication, then the connection closes", func(t *testing.T) {
		r := tp.dialRaw(t)
		if resp := r.handshake(t, "SCRAM-SHA-512"); resp.ErrorCode != 0 {
			t.Fatalf("handshake: code %d", resp.ErrorCode)
		}
		for _, garbage := range [][]byte{{0xff, 0, 1, 2}, []byte("n,,n=alice,r=" + strings.Repeat("x", 100<<10))} {
			req, resp := kmsg.NewPtrSASLAuthenticateRequest(), kmsg.NewPtrSASLAuthenticateResponse()
			req.SetVersion(1)
			req.SASLAuthBytes = garbage
			if err := r.do(req, resp); err != nil {
				t.Fatalf("SaslAuthenticate: %v", err)
			}
			if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
				t.Fatalf("SaslAuthenticate: code %d", resp.ErrorCode)
			}
			r = tp.dialRaw(t)
			r.handshake(t, "SCRAM-SHA-512")
		}
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(4)
		r.handshake(t, "SCRAM-SHA-512")
		if _, err := r.Write(r.f.AppendRequest(nil, md, 9)); err != nil {
			t.Fatal(err)
		}
		if !r.closed() {
			t.Fatal("Metadata before authentication left the connection open")
		}
	})
	t.Run("an oversized frame before authentication closes the connection", func(t *testing.T) {
		r := tp.dialRaw(t)
		frame := make([]byte, 4+1<<20)
		frame[0], frame[1], frame[2] = 0, 0x10, 0 // 1 MiB announced
		go func() { _, _ = r.Write(frame) }()
		if !r.closed() {
			t.Fatal("the connection stayed open")
		}
		if !tp.p.logs.waitFor("malformed frame", "(524288)") {
			t.Fatalf("not closed for its size:\n%s", tp.p.logs)
		}
	})
	if n := tp.dials.Load(); n != 0 {
		t.Fatalf("%d upstream connections for clients that never authenticated", n)
	}
}

// TestSaslTerminationOAuthBearer: OAUTHBEARER next to SCRAM, tokens validated against a JWKS
// served on loopback. A valid token produces, as its subject; an expired token, a forged one, one
// for another audience and one with alg none are refused by the proxy, and make no upstream
// connection.
func TestSaslTerminationOAuthBearer(t *testing.T) {
	iss := oauthtest.NewIssuer(t)
	caFile := t.TempDir() + "/jwks-ca.pem"
	writeAtomic(t, caFile, iss.CAPEM)
	tp := startTerminatingProxy(t, `      - mechanism: OAUTHBEARER
        jwksEndpointUrl: `+iss.URL+`
        jwksEndpointCaFile: `+caFile+`
        expectedAudience: kafka
        expectedIssuer: https://issuer.test
      fixedAuthDelay: 0s
`)
	claims := func(edit func(map[string]any)) map[string]any {
		c := map[string]any{"sub": "svc-orders", "aud": "kafka", "iss": "https://issuer.test", "exp": time.Now().Add(10 * time.Minute).Unix(), "scope": "produce"}
		if edit != nil {
			edit(c)
		}
		return c
	}
	good := iss.Token(t, claims(nil))
	refused := map[string]string{
		"expired":          iss.Token(t, claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })),
		"forged":           oauthtest.Forge(t, good, func(c map[string]any) { c["sub"] = "admin" }),
		"another audience": iss.Token(t, claims(func(c map[string]any) { c["aud"] = "billing" })),
		"alg none":         oauthtest.AlgNone(t, good, nil),
	}
	for name, token := range refused {
		cl := tp.oauthClient(t, token)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := cl.Ping(ctx)
		cancel()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s token: ping: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	if n := tp.dials.Load(); n != 0 {
		t.Fatalf("%d upstream connections for refused tokens", n)
	}
	cl := tp.oauthClient(t, good)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("by token")}).FirstErr(); err != nil {
		t.Fatalf("produce with a valid token: %v\n%s", err, tp.p.logs)
	}
	if !tp.p.logs.contains("SASL authenticated", `"mechanism"="OAUTHBEARER"`, `"user"="svc-orders"`) {
		t.Fatalf("the token's subject was not authenticated:\n%s", tp.p.logs)
	}
}

// oauthClient is a franz-go client of the proxy presenting token (OAUTHBEARER).
func (tp terminatingProxy) oauthClient(t testing.TB, token string) *kgo.Client {
	t.Helper()
	base, _ := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", tp.pc.Port), tp.pki.pool, "", nil)
	mech := oauth.Oauth(func(context.Context) (oauth.Auth, error) { return oauth.Auth{Token: token}, nil })
	cl, err := kgo.NewClient(append(base, kgo.SASL(mech), kgo.AllowAutoTopicCreation(), kgo.RequestRetries(0))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestSaslTerminationUpstreamCredentialRefused: when the cluster refuses the proxy's own
// credential, a client the proxy authenticated cannot produce, and the failure is logged and
// counted as the proxy's upstream authentication, never as the client's.
func TestSaslTerminationUpstreamCredentialRefused(t *testing.T) {
	tp := startTerminatingProxy(t, "")
	writeAtomic(t, tp.dir+"/password", []byte("not-the-proxy-secret\n")) // read at each upstream dial
	cl := tp.client(t, "alice", "alice-secret", kgo.RequestRetries(1))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second) // how long the client keeps trying
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("produced with a proxy credential the cluster refuses")
	}
	if !tp.p.logs.waitFor("the proxy's own upstream handshake failed", "SASL SCRAM-SHA-512 as the virtual cluster's credential") {
		t.Fatalf("no log line for the refused credential:\n%s", tp.p.logs)
	}
	if n := testutil.ToFloat64(tp.p.srv.Metrics.UpstreamErrors.WithLabelValues("a", "authentication")); n < 1 {
		t.Fatalf("upstream authentication errors counted: %v", n)
	}
	if !tp.p.logs.contains("SASL authenticated", `"user"="alice"`) {
		t.Fatal("alice was not authenticated at the proxy")
	}
}

// TestLazyUpstreamSplices: between plain TCP connections a lazy upstream is spliced once it is
// dialed, in both directions, and not before.
func TestLazyUpstreamSplices(t *testing.T) {
	clientSide, proxySide := tcpPair(t)
	proxyUp, brokerSide := tcpPair(t)
	l := newLazyUpstream(context.Background(), func(context.Context) (net.Conn, error) { return proxyUp, nil })
	counted := prometheus.NewCounter(prometheus.CounterOpts{Name: "spliced"})
	toBroker := splicerFor(proxySide, l, 10*time.Second, counted, nil)
	toClient := splicerFor(l, proxySide, 10*time.Second, counted, nil)
	if ok, err := toBroker(1); ok || err != nil {
		t.Fatalf("spliced before the dial: %v %v", ok, err)
	}
	if _, err := l.Write([]byte("x")); err != nil { // the dial
		t.Fatal(err)
	}
	for _, c := range []struct {
		sp       kafka.Splicer
		from, to net.Conn
	}{{toBroker, clientSide, brokerSide}, {toClient, brokerSide, clientSide}} {
		go func() { _, _ = c.from.Write([]byte("spliced")) }()
		if ok, err := c.sp(7); !ok || err != nil {
			t.Fatalf("splice after the dial: %v %v", ok, err)
		}
	}
	got := make([]byte, 8)
	if _, err := io.ReadFull(brokerSide, got); err != nil || string(got) != "xspliced" {
		t.Fatalf("the broker read %q, %v", got, err)
	}
	if _, err := io.ReadFull(clientSide, got[:7]); err != nil || string(got[:7]) != "spliced" {
		t.Fatalf("the client read %q, %v", got[:7], err)
	}
}

// TestSaslTerminationPlainListenerLargeRecords: on a plain listener, to a plain (SCRAM) broker,
// large records of a terminated client go through intact, their bytes spliced once the lazy
// upstream is dialed.
func TestSaslTerminationPlainListenerLargeRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	dir := t.TempDir()
	kc := fakeKafka(t, nil, "", kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "proxy", "proxy-secret"))
	writeAtomic(t, dir+"/password", []byte("proxy-secret\n"))
	writeScramStore(t, dir+"/users.json", map[string]string{"alice": "alice-secret"})
	port, mgmt, first := freePort(t), freePort(t), freePort(t)
	for i := 0; i < 20 && !consecutiveFree(first, 3); i++ {
		first = freePort(t)
	}
	cfg := fmt.Sprintf(`version: kafkalink.io/proxy-config/v1
listeners:
- {name: plain, port: %d, bindAddress: 127.0.0.1, portPerBroker: {firstBrokerPort: %d, maxNodeId: 2}}
virtualClusters:
- name: p
  listener: plain
  bootstrapHost: p-bootstrap.kafka.test
  brokerPattern: p-broker-$(nodeId).kafka.test
  targetBootstrap: %q
  discovery: {mechanism: SCRAM-SHA-512, username: proxy, passwordFile: %s/password}
%smanagement: {port: %d, bindAddress: 127.0.0.1, metrics: true}
`, port, first, kc.ListenAddrs()[0], dir, saslTerminationFilter(dir+"/users.json", ""), mgmt)
	writeAtomic(t, dir+"/proxy.yaml", []byte(cfg))
	startProxy(t, dir+"/proxy.yaml")
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, p, _ := net.SplitHostPort(addr)
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", p))
	}
	opts := []kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("p-bootstrap.kafka.test:%d", port)), kgo.Dialer(dial),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())}
	largeRecordsRoundTrip(t, ctx, opts, "large", 24, 200<<10)
}

// consecutiveFree reports whether n ports from first are free on loopback.
func consecutiveFree(first, n int) bool {
	for i := range n {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", first+i))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}
