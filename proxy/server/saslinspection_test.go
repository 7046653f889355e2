package server

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kafkalink/kafkalink/proxy/filter"
)

// subjectRecorder is a test filter placed after SaslInspection: it records the subject of the
// connection of every Metadata request it sees, which is what a later filter (Authorization)
// would see.
type subjectRecorder struct{ rec *recording }

type recording struct {
	mu       sync.Mutex
	subjects []filter.Subject
}

func (r *recording) all() []filter.Subject {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]filter.Subject(nil), r.subjects...)
}

// recordings are the recorders' records by their config's id (one per test).
var recordings sync.Map

func (f *subjectRecorder) Keys() []int16 { return []int16{kmsg.Metadata.Int16()} }
func (f *subjectRecorder) OnRequest(_ context.Context, x *filter.Exchange) error {
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	f.rec.subjects = append(f.rec.subjects, x.Conn.Subject())
	return nil
}
func (f *subjectRecorder) OnResponse(context.Context, *filter.Exchange) error { return nil }

func init() {
	filter.RegisterTyped(func(cfg *struct{ ID string }, _ filter.Env) (filter.Filter, error) {
		rec, _ := recordings.LoadOrStore(cfg.ID, &recording{})
		return &subjectRecorder{rec: rec.(*recording)}, nil
	}, "test.SubjectRecorder")
}

// saslProxy is a proxy with SaslInspection (config as YAML lines under config:) and a subject
// recorder in front of a SASL-only kfake whose users are alice (SCRAM-SHA-512, "pencil") and bob
// (PLAIN, "hunter2").
type saslProxy struct {
	p    *runningProxy
	seed string
	pki  *testPKI
	kc   *kfake.Cluster
	rec  *recording
	port int
}

func startSaslProxy(t *testing.T, inspection string) saslProxy {
	t.Helper()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "", kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "alice", "pencil"), kfake.Superuser("PLAIN", "bob", "hunter2"))
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf,
		Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}}}
	var extra strings.Builder
	extra.WriteString("  upstreamBrokers:\n")
	for id, addr := range kc.ListenAddrs() {
		fmt.Fprintf(&extra, "  - {nodeId: %d, address: %q}\n", id, addr)
	}
	fmt.Fprintf(&extra, "  filters:\n  - name: inspect\n    type: SaslInspection\n    config:\n%s  - name: record\n    type: test.SubjectRecorder\n    config: {ID: %s}\n", inspection, t.Name())
	target := "  targetBootstrap: " + kc.ListenAddrs()[0] + "\n"
	writeAtomic(t, dir+"/proxy.yaml", []byte(strings.Replace(pc.yaml(), target, target+extra.String(), 1)))
	rec, _ := recordings.LoadOrStore(t.Name(), &recording{})
	return saslProxy{p: startProxy(t, dir+"/proxy.yaml"), seed: fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port), pki: pki, kc: kc, rec: rec.(*recording), port: pc.Port}
}

// client is a franz-go client of the proxy authenticating with m (none when nil).
func (sp saslProxy) client(t *testing.T, m sasl.Mechanism, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts, _ := clientOpts(sp.seed, sp.pki.pool, "", nil)
	if m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	cl, err := kgo.NewClient(append(append(opts, kgo.AllowAutoTopicCreation(), kgo.RequestRetries(2), kgo.RetryTimeout(5*time.Second)), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

const inspectionConfig = "      enabledMechanisms: [SCRAM-SHA-512, PLAIN]\n      requireAuthentication: true\n"

// TestSaslInspectionThroughTheProxy: franz-go clients authenticate with SCRAM-SHA-512 and PLAIN
// against kfake through the proxy; once the broker accepts them, the filters after SaslInspection
// see their user as the subject (and never an anonymous one: requireAuthentication). A wrong
// password is refused by the broker and sets no subject (the connection is closed). No password
// reaches the logs.
func TestSaslInspectionThroughTheProxy(t *testing.T) {
	sp := startSaslProxy(t, inspectionConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	alice := sp.client(t, scram.Auth{User: "alice", Pass: "pencil"}.AsSha512Mechanism(), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("one")}).FirstErr(); err != nil {
		t.Fatalf("alice produces: %v\n%s", err, sp.p.logs)
	}
	var got []string
	for len(got) == 0 && ctx.Err() == nil {
		alice.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != "one" {
		t.Fatalf("alice consumed %q", got)
	}
	bob := sp.client(t, plain.Auth{User: "bob", Pass: "hunter2"}.AsMechanism())
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("two")}).FirstErr(); err != nil {
		t.Fatalf("bob produces: %v\n%s", err, sp.p.logs)
	}
	wrong := sp.client(t, scram.Auth{User: "alice", Pass: "crayon"}.AsSha512Mechanism())
	// kfake closes the connection on a wrong password instead of answering
	// SASL_AUTHENTICATION_FAILED as Kafka does; the filter's handling of that answer is in
	// saslinspection's TestSaslInspectionExchanges.
	if _, err := wrong.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest()); err == nil {
		t.Fatalf("a wrong password: %v", err)
	}

	seen := map[string]int{}
	for _, s := range sp.rec.all() {
		seen[s.Mechanism+":"+s.User]++
	}
	if seen["SCRAM-SHA-512:alice"] == 0 || seen["PLAIN:bob"] == 0 || len(seen) != 2 {
		t.Fatalf("subjects seen by the next filter: %v, want only alice (SCRAM-SHA-512) and bob (PLAIN)", seen)
	}
	if !sp.p.logs.waitFor("the broker accepted the client", `"user"="alice"`) || !sp.p.logs.waitFor("the broker accepted the client", `"user"="bob"`) {
		t.Errorf("no log of alice's and bob's success:\n%s", sp.p.logs)
	}
	for _, secret := range []string{"pencil", "hunter2", "crayon"} {
		if strings.Contains(sp.p.logs.String(), secret) {
			t.Errorf("the logs carry a password:\n%s", sp.p.logs)
		}
	}
}

// TestSaslInspectionRefusals: with requireAuthentication a client that skips the handshake and
// sends Produce is disconnected and nothing is written; a mechanism not enabled is refused with
// UNSUPPORTED_SASL_MECHANISM.
func TestSaslInspectionRefusals(t *testing.T) {
	sp := startSaslProxy(t, inspectionConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	anon := sp.client(t, nil)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "sneaky"
	rp := kmsg.NewProduceRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if _, err := anon.SeedBrokers()[0].Request(ctx, req); err == nil {
		t.Fatal("a Produce without SASL was answered")
	}
	if !sp.p.logs.waitFor("request before SASL authentication", "Produce") {
		t.Errorf("no log of the refused Produce:\n%s", sp.p.logs)
	}

	other := sp.client(t, scram.Auth{User: "alice", Pass: "pencil"}.AsSha256Mechanism())
	if err := other.Ping(ctx); err == nil || !strings.Contains(err.Error(), "UNSUPPORTED_SASL_MECHANISM") {
		t.Fatalf("SCRAM-SHA-256, not enabled: %v", err)
	}

	// Straight to the broker: the topic the anonymous client tried to write was never made.
	direct, err := kgo.NewClient(kgo.SeedBrokers(sp.kc.ListenAddrs()...), kgo.SASL(scram.Auth{User: "alice", Pass: "pencil"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("sneaky")
	meta.Topics = append(meta.Topics, mt)
	resp, err := meta.RequestWith(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode == 0 {
		t.Fatalf("the broker has topic sneaky: %+v", resp.Topics)
	}
}

// rawConn is a TLS connection to the proxy speaking Kafka frames by hand, for what no client sends.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	corr int32
}

func (sp saslProxy) raw(t *testing.T) *rawConn {
	t.Helper()
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", sp.port), &tls.Config{ServerName: "a-bootstrap.kafka.test", RootCAs: sp.pki.pool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, conn: conn}
}

// send writes a request frame (kmsg's, or the bytes given) and reads the response body; an
// error is the connection closed.
func (r *rawConn) send(req kmsg.Request, frame []byte) ([]byte, error) {
	r.corr++
	if frame == nil {
		frame = kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, r.corr)
	}
	if _, err := r.conn.Write(frame); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(r.conn, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<20 {
		r.t.Fatalf("a response of %d bytes", n)
	}
	body := make([]byte, n)
	_, err := io.ReadFull(r.conn, body)
	return body, err
}

func (r *rawConn) handshake(mech string) {
	r.t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(1)
	req.Mechanism = mech
	if _, err := r.send(req, nil); err != nil {
		r.t.Fatalf("handshake: %v", err)
	}
}

func saslAuthenticate(b []byte) *kmsg.SASLAuthenticateRequest {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(1)
	req.SASLAuthBytes = b
	return req
}

// TestSaslInspectionHostileFrames: garbage and oversized SASL messages and frames close the
// client's connection (bounded: nothing is read past the limits), and the proxy serves the next
// client as before.
func TestSaslInspectionHostileFrames(t *testing.T) {
	sp := startSaslProxy(t, inspectionConfig)
	header := func(key, version int16, size uint32) []byte {
		b := binary.BigEndian.AppendUint32(nil, size)
		b = binary.BigEndian.AppendUint16(b, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		return binary.BigEndian.AppendUint32(b, 1)
	}
	cases := map[string]func(r *rawConn) error{
		"garbage SCRAM client-first": func(r *rawConn) error {
			r.handshake("SCRAM-SHA-512")
			_, err := r.send(saslAuthenticate([]byte("\xff\x00garbage,,,")), nil)
			return err
		},
		"SCRAM client-first over 8 KiB": func(r *rawConn) error {
			r.handshake("SCRAM-SHA-512")
			_, err := r.send(saslAuthenticate([]byte("n,,n=alice,r="+strings.Repeat("x", 64<<10))), nil)
			return err
		},
		"PLAIN without separators": func(r *rawConn) error {
			r.handshake("PLAIN")
			_, err := r.send(saslAuthenticate([]byte("alice")), nil)
			return err
		},
		"SaslAuthenticate frame of random bytes": func(r *rawConn) error {
			frame := append(header(kmsg.SASLAuthenticate.Int16(), 1, 8+200), make([]byte, 200)...)
			for i := 14; i < len(frame); i++ {
				frame[i] = byte(i * 7)
			}
			_, err := r.send(nil, frame)
			return err
		},
		"SaslAuthenticate announcing 1 GiB": func(r *rawConn) error {
			_, err := r.send(nil, header(kmsg.SASLAuthenticate.Int16(), 1, 1<<30))
			return err
		},
		"SaslAuthenticate whose bytes announce more than the frame": func(r *rawConn) error {
			r.handshake("SCRAM-SHA-512")
			frame := header(kmsg.SASLAuthenticate.Int16(), 1, 0)
			frame = append(frame, 0, 3, 'r', 'a', 'w')          // client id
			frame = binary.BigEndian.AppendUint32(frame, 1<<30) // auth bytes length
			binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
			_, err := r.send(nil, frame)
			return err
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			if err := run(sp.raw(t)); err == nil {
				t.Fatal("the connection stays open")
			} else if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout") {
				t.Fatalf("the proxy neither answered nor closed: %v", err)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sp.client(t, scram.Auth{User: "alice", Pass: "pencil"}.AsSha512Mechanism()).Ping(ctx); err != nil {
		t.Fatalf("alice after the hostile clients: %v\n%s", err, sp.p.logs)
	}
}
