package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// upstreamBytes counts the bytes the proxy wrote to its upstream connections: what the broker
// was sent, whether or not it could use them.
type upstreamBytes struct{ n atomic.Int64 }

func (u *upstreamBytes) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &countedWrites{Conn: c, n: &u.n}, nil
}

type countedWrites struct {
	net.Conn
	n *atomic.Int64
}

// Write counts the bytes before it writes them: the broker may answer them, and the client
// read that answer, before Write returns.
func (c *countedWrites) Write(b []byte) (int, error) {
	c.n.Add(int64(len(b)))
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n - len(b)))
	return n, err
}

// produceFrame is a whole Produce v7 request (acks=all) of one record carrying value, to
// partition 0 of topic, as a client sends it: size, header, body.
func produceFrame(topic string, value []byte, corr int32) []byte {
	var rec []byte
	rec = append(rec, 0)               // attributes
	rec = binary.AppendVarint(rec, 0)  // timestamp delta
	rec = binary.AppendVarint(rec, 0)  // offset delta
	rec = binary.AppendVarint(rec, -1) // null key
	rec = binary.AppendVarint(rec, int64(len(value)))
	rec = append(rec, value...)
	rec = binary.AppendVarint(rec, 0) // no headers
	records := binary.AppendVarint(nil, int64(len(rec)))
	records = append(records, rec...)
	now := time.Now().UnixMilli()
	batch := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: records}
	b := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = -1, 10000
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = b
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic, tp.Partitions = topic, []kmsg.ProduceRequestTopicPartition{part}
	req.Topics = []kmsg.ProduceRequestTopic{tp}
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("drain")).AppendRequest(nil, req, corr)
}

// drainingConns reports whether every connection the server tracks is draining (a drain that
// found one between requests has already closed it).
func drainingConns(s *Server) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pc := range s.conns {
		if !pc.draining.Load() {
			return false
		}
	}
	return true
}

// TestDrainNeverForwardsHalfARequest starts a drain (shutdown, or a reload that removes the
// connection's virtual cluster) while a client is in the middle of writing a 900 KiB Produce
// request in two pieces, after the proxy has already forwarded part of it. The request is read
// to its end and forwarded whole (the broker is sent exactly its bytes), the client gets its
// response, and then the connection closes. The proxy used to interrupt the read where it was:
// the broker kept half a request, and the client no response, until the drain timeout closed
// the connection. A drain that finds the connection between requests closes it with nothing
// more forwarded, and one that outlasts the drain timeout closes it without a response. With a
// filter on the virtual cluster (requests read whole, then forwarded) a shutdown likewise lets
// the request finish, and a reload that retires the filter chain closes the connection with
// nothing of the request forwarded.
func TestDrainNeverForwardsHalfARequest(t *testing.T) {
	value := []byte(strings.Repeat("x", 900<<10))
	frame := produceFrame("drain", value, 7)
	startDrain := map[string]func(p *runningProxy, pc *proxyConfig, path string){
		"shutdown": func(p *runningProxy, _ *proxyConfig, _ string) { go p.stop() },
		"reload removing its virtual cluster": func(_ *runningProxy, pc *proxyConfig, path string) {
			pc.Clusters = pc.Clusters[1:]
			writeAtomic(t, path, []byte(pc.yaml()))
		},
	}
	cases := map[string]struct {
		drain string
		// sentBefore is how much of the Produce the client sent before the drain; the rest
		// follows once the connection drains, unless stall.
		sentBefore int
		stall      bool
		// filtered puts a filter on the virtual cluster (RecordValidation, which reads each
		// Produce whole before it forwards it).
		filtered bool
		// wantForwarded is how many of the Produce's bytes the broker is sent, when it answers.
		wantForwarded int
		wantResponse  bool
		// wantNothingForwarded: the connection closes with none of the Produce sent on.
		wantNothingForwarded bool
	}{
		"shutdown in the middle of a request": {drain: "shutdown", sentBefore: 256 << 10,
			wantForwarded: len(frame), wantResponse: true},
		"reload in the middle of a request": {drain: "reload removing its virtual cluster", sentBefore: 256 << 10,
			wantForwarded: len(frame), wantResponse: true},
		"shutdown between requests":            {drain: "shutdown"},
		"reload between requests":              {drain: "reload removing its virtual cluster"},
		"client stalls past the drain timeout": {drain: "shutdown", sentBefore: 256 << 10, stall: true},
		"shutdown in the middle of a filtered request": {drain: "shutdown", sentBefore: 256 << 10, filtered: true,
			wantForwarded: len(frame), wantResponse: true},
		// A reload that retires the connection's filter chain closes it at once: the chain is
		// closed, so no response could go through it. Nothing of the request was sent on.
		"reload in the middle of a filtered request": {drain: "reload removing its virtual cluster", sentBefore: 256 << 10, filtered: true,
			wantNothingForwarded: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dir := t.TempDir()
			pki := newPKI(t)
			kc := fakeKafka(t, nil, "", kfake.NumBrokers(1), kfake.SeedTopics(1, "drain"))
			cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
			pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{
				{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}, {Name: "b", Prefix: "b", Target: kc.ListenAddrs()[0]}}}
			if tc.filtered {
				pc.Clusters[0].FiltersYAML = validationFilter
			}
			path := writeConfig(t, dir, pc)
			up := &upstreamBytes{}
			p := startProxyWith(t, Options{ConfigPath: path, Dial: up.dial})
			c := dialTLS(t, pc, pki, "a-bootstrap.kafka.test")
			_ = c.SetDeadline(time.Now().Add(25 * time.Second))
			rawRequest(t, c, kmsg.NewPtrApiVersionsRequest(), 1)
			if _, err := readFrame(c); err != nil {
				t.Fatal(err)
			}
			mark := up.n.Load()
			read := p.srv.Metrics.Bytes.WithLabelValues("a", "in")
			readMark := testutil.ToFloat64(read)

			if _, err := c.Write(frame[:tc.sentBefore]); err != nil {
				t.Fatal(err)
			}
			// The drain starts once the proxy has read part of the Produce and, without
			// filters, forwarded part of it (the filters forward a request once it is whole).
			for tc.sentBefore > 0 && (up.n.Load() == mark && !tc.filtered || testutil.ToFloat64(read) == readMark) {
				if ctx.Err() != nil {
					t.Fatal("the first piece of the Produce never reached the proxy, or the broker")
				}
				time.Sleep(5 * time.Millisecond)
			}
			startDrain[tc.drain](p, &pc, path)
			for !drainingConns(p.srv) {
				if ctx.Err() != nil {
					t.Fatalf("the connection never drained\n%s", p.logs)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if tc.sentBefore == 0 {
				// Between requests, the drain closes the connection before any more is read.
				if _, err := readFrame(c); !errors.Is(err, io.EOF) {
					t.Fatalf("a connection drained between requests: read %v, want EOF", err)
				}
				_, _ = c.Write(frame)
				if n := up.n.Load() - mark; n != 0 {
					t.Fatalf("%d bytes forwarded after a drain between requests", n)
				}
				return
			}
			wrote := make(chan error, 1)
			go func() {
				if tc.stall {
					wrote <- nil
					return
				}
				_, err := c.Write(frame[tc.sentBefore:])
				wrote <- err
			}()
			b, err := readFrame(c)
			werr := <-wrote
			if !tc.wantResponse {
				// The proxy closes it (at the drain timeout, 5 s, when the client stalls), long
				// before the client's deadline.
				var ne net.Error
				if err == nil || errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("read %v, want the connection closed by the proxy", err)
				}
				if n := up.n.Load() - mark; tc.wantNothingForwarded && n != 0 {
					t.Fatalf("the broker was sent %d bytes of a request the proxy did not finish", n)
				}
				return
			}
			if werr != nil {
				t.Errorf("writing the rest of the Produce: %v", werr)
			}
			if err != nil {
				t.Fatalf("no response to the request in flight when the drain began: %v\n%s", err, p.logs)
			}
			resp := kmsg.NewPtrProduceResponse()
			resp.SetVersion(7)
			if corr := int32(binary.BigEndian.Uint32(b)); corr != 7 {
				t.Fatalf("response correlation id %d, want 7", corr)
			}
			if err := resp.ReadFrom(b[4:]); err != nil {
				t.Fatal(err)
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("Produce answered for %d topics", len(resp.Topics))
			}
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Fatalf("Produce answered with error code %d", code)
			}
			if _, err := readFrame(c); !errors.Is(err, io.EOF) {
				t.Fatalf("after the response: read %v, want the connection closed", err)
			}
			if n := up.n.Load() - mark; n != int64(tc.wantForwarded) {
				t.Fatalf("the broker was sent %d bytes of a %d-byte request", n, len(frame))
			}
			fmt.Printf("drain fault | %s | 900 KiB Produce, %d KiB sent when the drain began | lost: 0 | whole request forwarded and answered\n",
				name, tc.sentBefore>>10)
		})
	}
}
