package server

import (
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// idleConnBudget is what an idle TLS connection may cost the test process's heap in all: the
// proxy's side (its relay, both connections, TLS state: about 17 KiB) and the test's client
// and kfake sides (about 20 KiB). The proxy's share was 80 KiB when every connection held a
// queue for 1,024 requests, which took the whole to about 100 KiB.
const idleConnBudget = 64 << 10

// TestIdleConnectionsHoldLittle opens TLS connections that each exchange one ApiVersions
// through the proxy and then wait: once idle they hold no relay buffer and no large queue, so
// the live heap grows by less than idleConnBudget per connection.
func TestIdleConnectionsHoldLittle(t *testing.T) {
	p, pc, pki := simpleProxy(t, "")
	const n = 200
	before := liveHeap()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range n {
		c := dialTLS(t, pc, pki, "a-bootstrap.kafka.test")
		conns = append(conns, c)
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "idle", "1"
		rawRequest(t, c, req, int32(i))
		if _, err := readFrame(c); err != nil {
			t.Fatal(err)
		}
	}
	p.srv.mu.Lock()
	got := len(p.srv.conns)
	p.srv.mu.Unlock()
	if got != n {
		t.Fatalf("the proxy relays %d connections, want %d", got, n)
	}
	per := (liveHeap() - before) / n
	t.Logf("heap per idle connection (proxy, client and kfake): %.1f KiB", float64(per)/1024)
	if per > idleConnBudget {
		t.Errorf("an idle connection holds %.1f KiB of heap in all, over %d KiB", float64(per)/1024, idleConnBudget>>10)
	}
}

// liveHeap is the heap's spans in use after two collections: the second empties the
// sync.Pools the first moved to their victim caches, so pooled buffers do not count.
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// TestIdleConnectionHoldsOneGoroutine: a connection whose client sent nothing for a
// lingerPeriod holds one goroutine (the relay's, waiting for the client); its response side
// ends, and starts again with the next request.
func TestIdleConnectionHoldsOneGoroutine(t *testing.T) {
	_, pc, pki := simpleProxy(t, "")
	const n = 20
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	exchange := func(c net.Conn, corr int32) {
		t.Helper()
		rawRequest(t, c, kmsg.NewPtrApiVersionsRequest(), corr)
		if _, err := readFrame(c); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		c := dialTLS(t, pc, pki, "a-bootstrap.kafka.test")
		conns = append(conns, c)
		exchange(c, int32(i))
	}
	for round := range 2 {
		var relays, responses int
		// The response sides end between one and two lingerPeriods after the last request.
		for range 200 {
			relays, responses = relayGoroutines()
			if responses == 0 {
				break
			}
			time.Sleep(lingerPeriod / 10)
		}
		if relays != n || responses != 0 {
			t.Fatalf("round %d: %d relay and %d response goroutines for %d idle connections, want %d and 0", round, relays, responses, n, n)
		}
		for i, c := range conns {
			exchange(c, int32(n*(round+1)+i))
		}
	}
}

// relayGoroutines counts the goroutines running a connection's relay (and its request side)
// and a response side.
func relayGoroutines() (relays, responses int) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		switch {
		case strings.Contains(g, ".(*connRelay).responses("):
			responses++
		case strings.Contains(g, ".(*connRelay).run("):
			relays++
		}
	}
	return relays, responses
}
