package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerSockets lets a test crash one kfake broker: kfake's RemoveNode closes a broker's listener
// but leaves the connections it accepted served, which no crashed broker does. Every listener
// kfake opens goes through listen, and crash closes the listener's accepted connections too.
type brokerSockets struct {
	mu    sync.Mutex
	conns map[string][]net.Conn // by listening address
}

func (b *brokerSockets) listen(network, addr string) (net.Listener, error) {
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, err
	}
	return &trackingListener{Listener: ln, b: b}, nil
}

// crash closes every connection accepted on addr (kfake.RemoveNode closes the listener).
func (b *brokerSockets) crash(addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns[addr] {
		c.Close()
	}
	delete(b.conns, addr)
}

type trackingListener struct {
	net.Listener
	b *brokerSockets
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.b.mu.Lock()
		l.b.conns[l.Addr().String()] = append(l.b.conns[l.Addr().String()], c)
		l.b.mu.Unlock()
	}
	return c, err
}

// sequenceLog is what an idempotent producer sent and a consumer read: records carry their
// sequence number as their value, so the consumer side can tell lost and duplicated records
// apart from a consumer group's redelivery (the same offset read twice).
type sequenceLog struct {
	mu sync.Mutex
	// acked is, by partition, the latest record acknowledged: when it was produced and when
	// its acknowledgement came.
	acked map[int32][2]time.Time
	// lastAck is the latest acknowledgement, stall the longest time without one.
	lastAck  time.Time
	stall    time.Duration
	failed   int
	failures []error
	// seen maps a sequence number to where it was read (partition, offset).
	seen        map[int][2]int64
	duplicates  int
	redelivered int
	// resets counts the consumer's kgo.ErrDataLoss reports (see consumeLoop).
	resets int
	// sessionErrors are the consumer group session's errors franz-go reported.
	sessionErrors []string
}

func (s *sequenceLog) countSessionError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionErrors = append(s.sessionErrors, err.Error())
}

func (s *sequenceLog) countReset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resets++
}

func newSequenceLog() *sequenceLog {
	return &sequenceLog{acked: map[int32][2]time.Time{}, seen: map[int][2]int64{}}
}

// ack records a producer's promise result.
func (s *sequenceLog) ack(r *kgo.Record, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failed++
		if len(s.failures) < 5 {
			s.failures = append(s.failures, err)
		}
		return
	}
	now := time.Now()
	if r.Timestamp.After(s.acked[r.Partition][0]) {
		s.acked[r.Partition] = [2]time.Time{r.Timestamp, now}
	}
	if !s.lastAck.IsZero() && now.Sub(s.lastAck) > s.stall {
		s.stall = now.Sub(s.lastAck)
	}
	s.lastAck = now
}

// ackedAfter reports whether every one of partitions had a record produced after t
// acknowledged, and when the last of them was (a record produced before t may be acknowledged
// after it, which says nothing about recovery).
func (s *sequenceLog) ackedAfter(t time.Time, partitions int32) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var last time.Time
	for p := range partitions {
		a := s.acked[p]
		if !a[0].After(t) {
			return time.Time{}, false
		}
		if a[1].After(last) {
			last = a[1]
		}
	}
	return last, true
}

// read records one consumed record.
func (s *sequenceLog) read(r *kgo.Record) error {
	seq, err := strconv.Atoi(string(r.Value))
	if err != nil {
		return fmt.Errorf("record value %q is no sequence number", r.Value)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	at := [2]int64{int64(r.Partition), r.Offset}
	prev, ok := s.seen[seq]
	switch {
	case !ok:
		s.seen[seq] = at
	case prev == at:
		s.redelivered++
	default:
		s.duplicates++
	}
	return nil
}

func (s *sequenceLog) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// lost lists the sequence numbers below n never read.
func (s *sequenceLog) lost(n int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for i := range n {
		if _, ok := s.seen[i]; !ok {
			out = append(out, i)
		}
	}
	return out
}

// produceLoop produces sequence numbers 0, 1, ... with at most 64 records in flight until stop,
// and returns how many it produced once all are acknowledged.
func produceLoop(ctx context.Context, cl *kgo.Client, log *sequenceLog, stop <-chan struct{}) int {
	sem := make(chan struct{}, 64)
	n := 0
	for ; ; n++ {
		select {
		case <-stop:
			cl.Flush(ctx)
			return n
		case sem <- struct{}{}:
		}
		cl.Produce(ctx, kgo.StringRecord(strconv.Itoa(n)), func(r *kgo.Record, err error) {
			log.ack(r, err)
			<-sem
		})
	}
}

// consumeLoop reads the topic in a consumer group until ctx ends; it returns the first fetch
// error of a partition that is not retriable; the group session's errors are recorded. kgo.ErrDataLoss is counted, not returned: kfake answers
// OffsetForLeaderEpoch after a leader change so that franz-go reports data loss and consumes
// the partition again from its start, with clients connected to kfake directly as well. The
// sequence numbers show whether anything was lost.
func consumeLoop(ctx context.Context, cl *kgo.Client, log *sequenceLog) error {
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		for _, fe := range fs.Errors() {
			var loss *kgo.ErrDataLoss
			if errors.As(fe.Err, &loss) {
				log.countReset()
				continue
			}
			if fe.Topic == "" {
				// The group session's own errors, which franz-go reports and then rejoins after
				// (a coordinator connection that ended, for one).
				log.countSessionError(fe.Err)
				continue
			}
			if !kerr.IsRetriable(fe.Err) && !errors.Is(fe.Err, context.Canceled) {
				return fmt.Errorf("fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		var err error
		fs.EachRecord(func(r *kgo.Record) {
			if e := log.read(r); e != nil && err == nil {
				err = e
			}
		})
		if err != nil {
			return err
		}
	}
}

// TestBrokerRestartBehindTheProxy crashes the broker that leads a partition (its listener and
// every connection it accepted closed) while an idempotent producer (acks=all) and a consumer
// group run through the proxy, then brings it back on the same port. Clients recover through
// the proxy with retries only (a metadata refresh finds the new leader; the restarted broker is
// dialled again by the same host name): no record is lost or written twice, no produce fails.
// The proxy does not retry the crashed broker's refused dials (which held clients for the whole
// upstream retry budget): a client dialling it is answered BROKER_NOT_AVAILABLE at once.
// The recovery times are printed.
func TestBrokerRestartBehindTheProxy(t *testing.T) {
	const topic, partitions, victim = "restart", 3, int32(1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	pki := newPKI(t)
	sockets := &brokerSockets{conns: map[string][]net.Conn{}}
	kc := fakeKafka(t, nil, "", kfake.ListenFn(sockets.listen), kfake.SeedTopics(partitions, topic))
	if err := kc.MoveTopicPartition(topic, 0, victim); err != nil {
		t.Fatal(err)
	}
	victimAddr := kc.ListenAddrs()[victim]
	_, victimPort, _ := net.SplitHostPort(victimAddr)
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}}}
	// A retry budget far beyond the test's bound: a proxy that retried the crashed broker's
	// refused dials would hold its clients past it.
	path := writeConfig(t, dir, pc)
	writeAtomic(t, path, []byte(strings.Replace(pc.yaml(), "upstreamRetryBudget: 5s", "upstreamRetryBudget: 10m", 1)))
	p := startProxy(t, path)

	seed := fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port)
	popts, _ := clientOpts(seed, pki.pool, "", nil)
	producer, err := kgo.NewClient(append(popts, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))...)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	copts, _ := clientOpts(seed, pki.pool, "", nil)
	consumer, err := kgo.NewClient(append(copts, kgo.ConsumerGroup("restart-group"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()

	log := newSequenceLog()
	stop := make(chan struct{})
	produced := make(chan int, 1)
	go func() { produced <- produceLoop(ctx, producer, log, stop) }()
	cctx, stopConsumer := context.WithCancel(ctx)
	defer stopConsumer()
	consumed := make(chan error, 1)
	go func() { consumed <- consumeLoop(cctx, consumer, log) }()

	// waitAcked waits until every partition had a record produced after t0 acknowledged; it
	// returns how long after t0 the last of them was.
	waitAcked := func(step string, t0 time.Time) time.Duration {
		t.Helper()
		for {
			if last, ok := log.ackedAfter(t0, partitions); ok {
				return last.Sub(t0)
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: some partition had no record acknowledged (%d failed: %v)\n%s", step, log.failed, log.failures, p.logs)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitAcked("before the crash", time.Now())

	crashed := time.Now()
	if err := kc.RemoveNode(victim); err != nil {
		t.Fatal(err)
	}
	sockets.crash(victimAddr)
	// A client that dials the crashed broker is told it is not available, at once.
	c := dialTLS(t, pc, pki, fmt.Sprintf("a-broker-%d.kafka.test", victim))
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	rawRequest(t, c, kmsg.NewPtrApiVersionsRequest(), 3)
	if b, err := readFrame(c); err != nil || len(b) < 6 || int16(binary.BigEndian.Uint16(b[4:])) != kerr.BrokerNotAvailable.Code {
		t.Fatalf("ApiVersions to the crashed broker: %x, %v; want BROKER_NOT_AVAILABLE", b, err)
	}
	down := waitAcked("broker crashed", crashed)

	restarted := time.Now()
	port, _ := strconv.Atoi(victimPort)
	if _, _, err := kc.AddNode(victim, port); err != nil {
		t.Fatalf("broker %d back on port %d: %v", victim, port, err)
	}
	if err := kc.MoveTopicPartition(topic, 0, victim); err != nil {
		t.Fatal(err)
	}
	back := waitAcked("broker restarted and leading again", restarted)
	close(stop)
	n := <-produced

	for log.readCount() < n {
		select {
		case err := <-consumed:
			t.Fatalf("consumer stopped with %d of %d records read: %v", log.readCount(), n, err)
		default:
		}
		if ctx.Err() != nil {
			t.Fatalf("the consumer read %d of %d records; lost %v", log.readCount(), n, first(log.lost(n), 10))
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopConsumer()
	if err := <-consumed; err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.failed != 0 || log.duplicates != 0 {
		t.Fatalf("%d records failed to produce (%v), %d were written twice", log.failed, log.failures, log.duplicates)
	}
	fmt.Printf("broker restart fault | idempotent producer (acks=all) + consumer group through the proxy, %d records | lost: 0, duplicated: 0, failed: 0 (consumer redeliveries: %d, data-loss resets reported: %d, group session errors reported: %d %q) | every partition acknowledged again %v after the crash and %v after the restart; longest stall %v\n",
		n, log.redelivered, log.resets, len(log.sessionErrors), first(log.sessionErrors, 2), down.Round(time.Millisecond), back.Round(time.Millisecond), log.stall.Round(time.Millisecond))
}

func first[T any](xs []T, n int) []T { return xs[:min(n, len(xs))] }
