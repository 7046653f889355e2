package server

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// tcpPair is both ends of one loopback TCP connection.
func tcpPair(t testing.TB) (dialled, accepted net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dialled, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if accepted, err = l.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dialled.Close(); accepted.Close() })
	return dialled, accepted
}

// TestSplicerMovesExactlyN: between two TCP connections, the splicer moves exactly the bytes
// asked for, over several chunks, counts them, leaves the next bytes in the source, and says
// io.EOF when the source ends first; it declines while not ready, and there is none for a
// connection that is not TCP.
func TestSplicerMovesExactlyN(t *testing.T) {
	sender, src := tcpPair(t)
	dst, receiver := tcpPair(t)
	counted := prometheus.NewCounter(prometheus.CounterOpts{Name: "spliced"})
	ready := false
	sp := splicer(src, dst, 10*time.Second, counted, func() bool { return ready })
	if sp == nil {
		t.Fatal("no splicer between two TCP connections")
	}
	if ok, err := sp(1); ok || err != nil {
		t.Fatalf("spliced while not ready: %v %v", ok, err)
	}
	ready = true

	payload := bytes.Repeat([]byte("0123456789abcdef"), (3*spliceChunk+100)/16)
	next := []byte("the next frame")
	go func() { _, _ = sender.Write(append(append([]byte(nil), payload...), next...)) }()
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(payload))
		_, _ = io.ReadFull(receiver, b)
		got <- b
	}()
	if ok, err := sp(int64(len(payload))); !ok || err != nil {
		t.Fatalf("splice: %v %v", ok, err)
	}
	if !bytes.Equal(<-got, payload) {
		t.Fatal("the destination did not receive the payload as sent")
	}
	if c := testutil.ToFloat64(counted); c != float64(len(payload)) {
		t.Fatalf("counted %v bytes, moved %d", c, len(payload))
	}
	rest := make([]byte, len(next))
	if _, err := io.ReadFull(src, rest); err != nil || !bytes.Equal(rest, next) {
		t.Fatalf("the bytes after the payload: %q %v", rest, err)
	}

	go func() { _, _ = sender.Write([]byte("short")); sender.Close() }()
	go func() { _, _ = io.Copy(io.Discard, receiver) }()
	if ok, err := sp(100); !ok || !errors.Is(err, io.EOF) {
		t.Fatalf("a source that ends early: %v %v, want io.EOF", ok, err)
	}

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if splicer(a, dst, 0, counted, nil) != nil || splicer(src, b, 0, counted, nil) != nil {
		t.Fatal("a splicer for a connection that is not TCP")
	}
}
