package server

import (
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// The tests of the response side's wait on the broker's socket (connRelay.next) run one
// connection's relay built by hand between loopback TCP connections whose far ends the test
// holds: no server loop calls endIfIdle, so nothing but what a test does wakes the response
// side. The time bounds only keep a failing test from hanging.
const rigBound = 10 * time.Second

// relayRig is a connection's relay and the far ends of its two connections.
type relayRig struct {
	r      *connRelay
	client net.Conn // the client's end
	broker net.Conn // the broker's end
	// ended receives the request side's and the response side's errors once the relay ended.
	ended chan [2]error
}

// newRelayRig starts a relay whose first request (read before the relay starts, as handle does)
// is first.
func newRelayRig(t testing.TB, first []byte) *relayRig {
	t.Helper()
	s := New(Options{})
	proxyClient, client := tcpPair(t)
	upstream, broker := tcpPair(t)
	route := &vcRoute{cfg: config.VirtualCluster{Name: "rig"}, state: &vcState{name: "rig"}}
	pc := &proxyConn{client: proxyClient, upstream: upstream, vc: "rig", state: route.state, idle: time.Hour}
	var lim config.Limits
	lim.MaxFrameBytes = 1 << 20
	lim.WriteTimeout.Duration = rigBound
	cc := countingConn{Conn: proxyClient, in: prometheus.NewCounter(prometheus.CounterOpts{Name: "in"}), out: prometheus.NewCounter(prometheus.CounterOpts{Name: "out"})}
	rig := &relayRig{client: client, broker: broker, ended: make(chan [2]error, 1)}
	rig.r = s.newRelay(klog.Background(), -1, pc, route, lim, cc, first, func() {})
	go func() {
		reqErr := rig.r.requests()
		respErr := rig.r.finishResponses()
		pc.closeNow()
		rig.ended <- [2]error{reqErr, respErr}
	}()
	return rig
}

// heartbeat is a Heartbeat request frame: its response is passed on as the broker sent it.
func heartbeat(corr int32) []byte {
	return kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrHeartbeatRequest(), corr)
}

// heartbeatResponse is a Heartbeat v0 response frame: the correlation id and no error.
func heartbeatResponse(corr int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, 6)
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	return append(b, 0, 0)
}

// tooNewApiVersions is an ApiVersions request newer than the proxy's: the proxy answers it
// itself (a local answer), and the broker never sees it.
func tooNewApiVersions(corr int32) []byte {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(kafka.MaxVersion(kmsg.ApiVersions.Int16()) + 1)
	return kmsg.NewRequestFormatter().AppendRequest(nil, req, corr)
}

// readCorr reads one frame from c within the bound and returns its correlation id, at its
// offset: a response's first field (0), a request's after its key and version (4).
func readCorr(t *testing.T, c net.Conn, at int, what string) int32 {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(rigBound))
	f, err := readFrame(c)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(f) < at+4 {
		t.Fatalf("%s: a frame of %d bytes", what, len(f))
	}
	return int32(binary.BigEndian.Uint32(f[at:]))
}

// write writes b to c.
func write(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// exchange has the broker answer the request of corr it receives, and the client read the
// answer.
func (rig *relayRig) exchange(t *testing.T, corr int32) {
	t.Helper()
	if got := readCorr(t, rig.broker, 4, "the broker's request"); got != corr {
		t.Fatalf("the broker got correlation id %d, want %d", got, corr)
	}
	write(t, rig.broker, heartbeatResponse(corr))
	if got := readCorr(t, rig.client, 0, "the client's response"); got != corr {
		t.Fatalf("the client got correlation id %d, want %d", got, corr)
	}
}

// waitUntil polls cond, within the bound.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(rigBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %v", what, rigBound)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitingOnBroker waits until the response side waits on the broker's socket with an empty
// queue.
func (rig *relayRig) waitingOnBroker(t *testing.T) {
	t.Helper()
	waitUntil(t, "waiting on the broker", func() bool { return rig.r.brokerWait.Load() == waitingOnBroker })
}

// end waits for the relay to end and returns its two sides' errors.
func (rig *relayRig) end(t *testing.T) (reqErr, respErr error) {
	t.Helper()
	select {
	case errs := <-rig.ended:
		return errs[0], errs[1]
	case <-time.After(rigBound):
		t.Fatalf("the relay did not end within %v", rigBound)
		return nil, nil
	}
}

// TestLocalAnswerWhileWaitingOnBroker: the response side waits on the broker with nothing
// queued, and the client sends a request the proxy answers itself: the answer goes out at once,
// though the broker sends nothing (and no endIfIdle comes to wake the response side), and the
// connection goes on.
func TestLocalAnswerWhileWaitingOnBroker(t *testing.T) {
	rig := newRelayRig(t, heartbeat(1))
	rig.exchange(t, 1)
	for corr := int32(2); corr < 6; corr++ {
		rig.waitingOnBroker(t)
		write(t, rig.client, tooNewApiVersions(corr))
		if got := readCorr(t, rig.client, 0, "the local answer"); got != corr {
			t.Fatalf("the client got correlation id %d, want the local answer's %d", got, corr)
		}
	}
	write(t, rig.client, heartbeat(6))
	rig.exchange(t, 6)
	rig.client.Close()
	if reqErr, respErr := rig.end(t); !errors.Is(reqErr, io.EOF) || respErr != nil {
		t.Fatalf("the relay ended with %v, %v; want EOF, nil", reqErr, respErr)
	}
}

// TestIdleEndWhileWaitingOnBroker: endIfIdle ends a response side that waits on the broker's
// socket (once a whole period passed without a request, its second call); the deadline that
// interrupted the wait is cleared, so the next request's response is relayed.
func TestIdleEndWhileWaitingOnBroker(t *testing.T) {
	rig := newRelayRig(t, heartbeat(1))
	rig.exchange(t, 1)
	for corr := int32(2); corr < 5; corr++ {
		rig.waitingOnBroker(t)
		rig.r.endIfIdle() // a request since the last call: the connection was active
		rig.r.endIfIdle()
		waitUntil(t, "ended", func() bool { return !rig.r.respRunning.Load() })
		write(t, rig.client, heartbeat(corr))
		rig.exchange(t, corr)
	}
}

// TestBrokerClosingAnActiveIdleConnection: a broker that closes its connection while nothing is
// awaited closes the client's too, with an error that says so, not at the next request.
func TestBrokerClosingAnActiveIdleConnection(t *testing.T) {
	rig := newRelayRig(t, heartbeat(1))
	rig.exchange(t, 1)
	rig.waitingOnBroker(t)
	rig.broker.Close()
	_ = rig.client.SetReadDeadline(time.Now().Add(rigBound))
	if _, err := rig.client.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the client's read ended with %v, want EOF", err)
	}
	if _, respErr := rig.end(t); !errors.Is(respErr, errBrokerClosed) {
		t.Fatalf("the response side ended with %v, want %v", respErr, errBrokerClosed)
	}
}

// TestUnaskedBytesFromTheBroker: bytes the broker sends while nothing is awaited close the
// connection as malformed once the connection is idle (the next endIfIdle), not at the next
// request, and nothing hangs.
func TestUnaskedBytesFromTheBroker(t *testing.T) {
	rig := newRelayRig(t, heartbeat(1))
	rig.exchange(t, 1)
	rig.waitingOnBroker(t)
	write(t, rig.broker, heartbeatResponse(99))
	waitUntil(t, "done waiting", func() bool { return rig.r.brokerWait.Load() == notWaiting })
	rig.r.endIfIdle()
	rig.r.endIfIdle()
	_ = rig.client.SetReadDeadline(time.Now().Add(rigBound))
	if n, err := rig.client.Read(make([]byte, 64)); !errors.Is(err, io.EOF) {
		t.Fatalf("the client's read ended with %d bytes, %v; want EOF", n, err)
	}
	if _, respErr := rig.end(t); !errors.Is(respErr, kafka.ErrMalformed) {
		t.Fatalf("the response side ended with %v, want a malformed frame", respErr)
	}
}

// TestUnaskedBytesBeforeAResponse: bytes the broker sends before a request's response, with a
// request queued, are read as that response: a wrong correlation id closes the connection.
func TestUnaskedBytesBeforeAResponse(t *testing.T) {
	rig := newRelayRig(t, heartbeat(1))
	rig.exchange(t, 1)
	rig.waitingOnBroker(t)
	write(t, rig.broker, heartbeatResponse(99))
	write(t, rig.client, heartbeat(2))
	_ = rig.client.SetReadDeadline(time.Now().Add(rigBound))
	if n, err := rig.client.Read(make([]byte, 64)); !errors.Is(err, io.EOF) {
		t.Fatalf("the client's read ended with %d bytes, %v; want EOF", n, err)
	}
	if _, respErr := rig.end(t); !errors.Is(respErr, kafka.ErrMalformed) {
		t.Fatalf("the response side ended with %v, want a malformed frame", respErr)
	}
}

// TestBrokerWaitRaces sends requests one after another, forwarded ones and ones the proxy
// answers itself in a random mix, to a broker that answers at once: every answer must arrive,
// in order. Without idle ends, a local answer queued as the response side starts its wait on the
// broker is found only through the kick (a lost one hangs the test until its bound); with
// endIfIdle called all the while, response sides end and start again between requests.
func TestBrokerWaitRaces(t *testing.T) {
	for name, idleEnds := range map[string]bool{"without idle ends": false, "with endIfIdle all the while": true} {
		t.Run(name, func(t *testing.T) {
			rig := newRelayRig(t, heartbeat(0))
			go echoBroker(rig.broker)
			if got := readCorr(t, rig.client, 0, "the first response"); got != 0 {
				t.Fatalf("the client got correlation id %d, want 0", got)
			}
			stop := make(chan struct{})
			defer close(stop)
			if idleEnds {
				go func() {
					for {
						select {
						case <-stop:
							return
						default:
							rig.r.endIfIdle()
							runtime.Gosched()
						}
					}
				}()
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for corr := int32(1); corr <= 3000; corr++ {
				req := heartbeat(corr)
				if rng.IntN(3) == 0 {
					req = tooNewApiVersions(corr)
				}
				write(t, rig.client, req)
				if got := readCorr(t, rig.client, 0, "a response"); got != corr {
					t.Fatalf("the client got correlation id %d, want %d", got, corr)
				}
			}
		})
	}
}
