package faults_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// pxBalancer is a loopback TCP balancer standing in for the proxy's Service: the test kubelet
// runs processes, not Services. Each client connection goes to the next backend in turn; a
// backend that refuses the dial (a replica stopped, or draining with its listener closed) is
// skipped, as kube-proxy skips a pod that is not ready.
type pxBalancer struct {
	ln       net.Listener
	backends []string
	next     atomic.Uint32
	refused  atomic.Int64 // dials a backend refused
}

func pxStartBalancer(t *testing.T, backends []string) *pxBalancer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &pxBalancer{ln: ln, backends: backends}
	go b.serve()
	t.Cleanup(func() { ln.Close() })
	return b
}

func (b *pxBalancer) port() int { return b.ln.Addr().(*net.TCPAddr).Port }

func (b *pxBalancer) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		go b.relay(c)
	}
}

func (b *pxBalancer) relay(c net.Conn) {
	defer c.Close()
	start := int(b.next.Add(1))
	var up net.Conn
	for i := range b.backends {
		var err error
		up, err = net.DialTimeout("tcp", b.backends[(start+i)%len(b.backends)], 2*time.Second)
		if err == nil {
			break
		}
		b.refused.Add(1)
	}
	if up == nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done // either side ended: end both, as a connection through a Service does
}

// pxSelfSigned is a key pair for *.kafka.test, PEM encoded, and a pool that trusts it.
func pxSelfSigned(t *testing.T) (certPEM, keyPEM []byte, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"*.kafka.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), pool
}

// pxClientOpts reach the proxy's hosts through the balancer: every host resolves to it, and TLS
// sends the host as SNI, so the proxy routes by SNI as it would behind a Service.
func pxClientOpts(port int, roots *x509.CertPool) []kgo.Opt {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := &tls.Dialer{Config: &tls.Config{ServerName: host, RootCAs: roots}}
		return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	return []kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("a-bootstrap.kafka.test:%d", port)), kgo.Dialer(dial),
		kgo.MetadataMinAge(250 * time.Millisecond)}
}

// pxSequences is what an idempotent producer sent and a consumer group read. Records carry
// their sequence number as their value, so the consumer side tells records lost or written twice
// (one number at two offsets) from a group's redelivery (one offset read twice).
type pxSequences struct {
	mu sync.Mutex
	// acked is, by partition, when the latest acknowledged record was produced and when it was
	// acknowledged.
	acked        map[int32][2]time.Time
	lastAck      time.Time
	stall        time.Duration
	failed       int
	failures     []error
	seen         map[int][2]int64 // sequence number → partition, offset
	duplicates   int
	redelivered  int
	clientErrors []string // errors the consumer reported and retried
}

func newPxSequences() *pxSequences {
	return &pxSequences{acked: map[int32][2]time.Time{}, seen: map[int][2]int64{}}
}

func (s *pxSequences) ack(r *kgo.Record, err error) {
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

// ackedAfter reports whether every partition had a record produced after t acknowledged.
func (s *pxSequences) ackedAfter(t time.Time, partitions int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range partitions {
		if !s.acked[p][0].After(t) {
			return false
		}
	}
	return true
}

func (s *pxSequences) read(r *kgo.Record) error {
	num, _, _ := bytes.Cut(r.Value, []byte(":"))
	seq, err := strconv.Atoi(string(num))
	if err != nil {
		return fmt.Errorf("record value %q is no sequence number", r.Value)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	at := [2]int64{int64(r.Partition), r.Offset}
	switch prev, ok := s.seen[seq]; {
	case !ok:
		s.seen[seq] = at
	case prev == at:
		s.redelivered++
	default:
		s.duplicates++
	}
	return nil
}

func (s *pxSequences) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func (s *pxSequences) clientError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clientErrors = append(s.clientErrors, err.Error())
}

// pxProduce produces 0, 1, ... (each followed by ":" and padding to size bytes) with at most 64
// records in flight until stop, then flushes and returns how many it produced. Records of a few
// KiB make Produce requests of hundreds of KiB, which a drain is likely to find half-read.
func pxProduce(ctx context.Context, cl *kgo.Client, s *pxSequences, size int, stop <-chan struct{}) int {
	sem := make(chan struct{}, 64)
	pad := bytes.Repeat([]byte("x"), size)
	for n := 0; ; n++ {
		select {
		case <-stop:
			_ = cl.Flush(ctx)
			return n
		case sem <- struct{}{}:
		}
		v := strconv.AppendInt(nil, int64(n), 10)
		v = append(append(v, ':'), pad[:max(0, size-len(v)-1)]...)
		cl.Produce(ctx, kgo.SliceRecord(v), func(r *kgo.Record, err error) {
			s.ack(r, err)
			<-sem
		})
	}
}

// pxConsume reads in a consumer group until ctx ends. It returns the first error of a partition
// that is not retriable; the rest (kgo.ErrDataLoss, which kfake provokes after a leader change,
// and the group session's errors, after which franz-go rejoins) are recorded.
func pxConsume(ctx context.Context, cl *kgo.Client, s *pxSequences) error {
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		for _, fe := range fs.Errors() {
			var loss *kgo.ErrDataLoss
			if fe.Topic == "" || errors.As(fe.Err, &loss) || kerr.IsRetriable(fe.Err) {
				s.clientError(fe.Err)
				continue
			}
			return fmt.Errorf("fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
		}
		var err error
		fs.EachRecord(func(r *kgo.Record) {
			if e := s.read(r); e != nil && err == nil {
				err = e
			}
		})
		if err != nil {
			return err
		}
	}
}

// pxWait polls cond every 20 ms until it holds or ctx ends.
func pxWait(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
