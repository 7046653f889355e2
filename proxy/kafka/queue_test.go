package kafka

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// frameCounter is a broker that counts the whole frames written to it and says when a
// number of them arrived.
type frameCounter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	frames  int
	arrived chan struct{} // a value per frame
}

func (f *frameCounter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf.Write(p)
	for f.buf.Len() >= 4 {
		size := int(binary.BigEndian.Uint32(f.buf.Bytes()))
		if f.buf.Len() < 4+size {
			break
		}
		f.buf.Next(4 + size)
		f.frames++
		f.arrived <- struct{}{}
	}
	return len(p), nil
}

// TestFullQueueFlushesFirst pipelines more requests than the queue holds, all in one read, to a
// broker that answers (takes a Pending) only once it received the request: the request side
// must send on what it forwarded before it waits for room, or both sides wait for ever.
func TestFullQueueFlushesFirst(t *testing.T) {
	const n, queue = 8, 2
	var client []byte
	for i := range n {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(MaxVersion(kmsg.Metadata.Int16()))
		client = append(client, kmsg.NewRequestFormatter().AppendRequest(nil, req, int32(i))...)
	}
	broker := &frameCounter{arrived: make(chan struct{}, n)}
	pending := make(chan Pending, queue)
	done := make(chan error, 1)
	go func() {
		done <- CopyRequests(bytes.NewReader(client), broker, pending, RelayOptions{MaxFrame: 1 << 20})
	}()
	// The bound only keeps a failing test from hanging: nothing is slow here.
	timeout := time.After(20 * time.Second)
	for i := range n {
		select {
		case <-broker.arrived:
		case <-timeout:
			t.Fatalf("the broker received %d of %d requests: the relay waits for room in the queue with requests it did not send (%d bytes, %d queued, relay %v)", i, n, broker.buf.Len(), len(pending), relayErr(done))
		}
		if p, ok := <-pending; !ok || p.CorrelationID != int32(i) {
			t.Fatalf("request %d queued as correlation id %d (queue open: %v; the relay ended with %v)", i, p.CorrelationID, ok, relayErr(done))
		}
	}
	if err := <-done; err == nil || err.Error() != "EOF" {
		t.Fatalf("CopyRequests ended with %v, want EOF", err)
	}
	if _, open := <-pending; open {
		t.Fatal("a request was queued twice")
	}
}

// relayErr is how CopyRequests ended, if it did.
func relayErr(done <-chan error) error {
	select {
	case err := <-done:
		return err
	default:
		return nil
	}
}

// TestResponseRelayInBursts: RelayQueued relays what is queued and returns when the queue is
// empty, with every response sent; Wake asks for nothing and is skipped; the next burst goes on
// where the last ended, until the queue is closed.
func TestResponseRelayInBursts(t *testing.T) {
	var client bytes.Buffer
	rr := NewResponseRelay(bytes.NewReader(nil), &client, RelayOptions{MaxFrame: 1 << 20})
	pending := make(chan Pending, 4)
	pending <- Pending{Local: []byte("a")}
	pending <- Wake
	pending <- Pending{Local: []byte("b")}
	closed, err := rr.RelayQueued(pending)
	if err != nil || closed || client.String() != "ab" {
		t.Fatalf("first burst: closed %v, err %v, client got %q; want false, nil, \"ab\"", closed, err, client.String())
	}
	pending <- Wake
	pending <- Pending{Local: []byte("c")}
	close(pending)
	closed, err = rr.RelayQueued(pending)
	if err != nil || !closed || client.String() != "abc" {
		t.Fatalf("last burst: closed %v, err %v, client got %q; want true, nil, \"abc\"", closed, err, client.String())
	}
}

// TestAClientsKeyIsNeverWake: a request's API key is the client's to choose, -1 included; only
// Wake itself wakes the response side, so no request of any key is skipped as one.
func TestAClientsKeyIsNeverWake(t *testing.T) {
	for _, key := range []int16{-1, 0, 18, 32767, -32768} {
		if IsWake(Pending{Key: key}) {
			t.Errorf("a request of key %d is taken for Wake", key)
		}
	}
	if !IsWake(Wake) {
		t.Error("Wake is not Wake")
	}
}

// TestPendingSize keeps a Pending at 64 bytes on 64-bit platforms: every connection's queue
// holds eight of them (server.maxPending), idle or not.
func TestPendingSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) == 8 && unsafe.Sizeof(Pending{}) != 64 {
		t.Fatalf("a Pending is %d bytes, want 64", unsafe.Sizeof(Pending{}))
	}
}
