package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const expirationFilter = `  filters:
  - name: expire
    type: ConnectionExpiration
    config: {maxAge: 1s, jitter: 200ms}
`

// TestConnectionExpirationBetweenRequests: an idle connection is closed by the proxy between
// maxAge-jitter and maxAge+jitter after it opened (with a margin for the scheduler above); one
// with a request in flight at its expiry still gets the response, then is closed.
func TestConnectionExpirationBetweenRequests(t *testing.T) {
	f := startFilteredProxy(t, Options{}, expirationFilter)
	f.kc.ControlKey(kmsg.Metadata.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		time.Sleep(1500 * time.Millisecond) // in flight across the expiry
		return nil, nil, false
	})
	f.kc.KeepControl()

	idle := dialTLS(t, f.pc, f.pki, "a-bootstrap.kafka.test")
	opened := time.Now()
	rawRequest(t, idle, kmsg.NewPtrApiVersionsRequest(), 1)
	if _, err := readFrame(idle); err != nil {
		t.Fatal(err)
	}
	_ = idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := readFrame(idle)
	age := time.Since(opened)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: read %v, want the proxy's close (EOF)", err)
	}
	if age < 800*time.Millisecond || age > 1200*time.Millisecond+2*time.Second {
		t.Errorf("idle connection closed after %s, want 0.8s..1.2s (plus scheduling)", age)
	}

	busy := dialTLS(t, f.pc, f.pki, "a-bootstrap.kafka.test")
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rawRequest(t, busy, req, 7)
	_ = busy.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := readFrame(busy)
	if err != nil {
		t.Fatalf("the request in flight at the expiry got no response: %v\n%s", err, f.p.logs)
	}
	if corr := int32(frame[0])<<24 | int32(frame[1])<<16 | int32(frame[2])<<8 | int32(frame[3]); corr != 7 {
		t.Errorf("response correlation id %d, want 7", corr)
	}
	if _, err := readFrame(busy); !errors.Is(err, io.EOF) {
		t.Errorf("after the response: read %v, want EOF", err)
	}
	if !f.p.logs.waitFor("Connection expired") {
		t.Errorf("no expiry logged\n%s", f.p.logs)
	}
}

// TestConnectionExpirationLosesNothing: a franz-go producer (idempotent, with retries) produces
// records one by one through several expirations of its connections; the broker holds every
// record exactly once.
func TestConnectionExpirationLosesNothing(t *testing.T) {
	f := startFilteredProxy(t, Options{}, expirationFilter)
	opts, dials := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", f.pc.Port), f.pki.pool, "", nil)
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("expiring"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 300
	start := time.Now()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("record %d: %v\n%s", i, err, f.p.logs)
		}
		time.Sleep(10 * time.Millisecond) // spread over several maxAges
	}
	if time.Since(start) < 2500*time.Millisecond {
		t.Fatalf("produced in %s: too fast to cross several expirations", time.Since(start))
	}
	if dials.droppedCount() < 2 {
		t.Errorf("the proxy closed %d of the client's connections, want several expirations", dials.droppedCount())
	}
	direct, err := kgo.NewClient(kgo.SeedBrokers(f.kc.ListenAddrs()...), kgo.ConsumeTopics("expiring"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	seen := map[string]int{}
	total := 0
	for total < n && ctx.Err() == nil {
		direct.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; total++ })
	}
	for i := range n {
		if seen[strconv.Itoa(i)] != 1 {
			t.Errorf("record %d is at the broker %d times, want once", i, seen[strconv.Itoa(i)])
		}
	}
	if total != n {
		t.Errorf("the broker holds %d records, want %d", total, n)
	}
}
