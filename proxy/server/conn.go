package server

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// maxPending bounds requests in flight per connection; a client pipelining more waits (the
// request side stops reading until a response went out). A broker handles one request of a
// connection at a time, so a deeper queue gains nothing, and every connection, idle or not,
// holds the queue's buffer: 8 × 64 bytes (it was 1,024 requests, 64 KiB of heap each, then
// 32, then 16). Clients pipeline up to 5 by default (Java's max.in.flight.requests.per.connection).
const maxPending = 8

// tlsWaitSize is the wait buffer of a TLS client's request side (kafka.RelayOptions.WaitSize):
// the 12 bytes of a request's size and header, rounded up.
const tlsWaitSize = 16

// errDraining ends the request side of a connection during shutdown.
var errDraining = errors.New("proxy shutting down")

// errExpired ends the request side of a connection a filter gave an expiry
// (ConnectionExpiration); the responses in flight are still written.
var errExpired = errors.New("connection expired")

// proxyConn is one relayed client connection.
type proxyConn struct {
	client, upstream net.Conn
	vc               string
	state            *vcState
	// filters is the chain the connection was routed with (nil: none); a reload that replaces
	// it ends the connection.
	filters *filter.Chain

	// expires is when a filter asked the connection to end (filter.Conn.ExpireAt); nil without
	// filters.
	expires func() time.Time
	// atBoundary is set while the request side waits for a request's first bytes: a read
	// deadline that fires then interrupts no request. draining is set once the proxy drains.
	// Each side stores its own flag before it loads the other's, so a drain and the request
	// side cannot both miss each other (see beforeRead): that costs no lock per request. The
	// read deadlines they set are set under mu.
	atBoundary atomic.Bool
	draining   atomic.Bool

	mu          sync.Mutex
	idle        time.Duration
	lastRefresh time.Time
	// deadline is the read deadline beforeRead set last (zero: none); a request whose first
	// bytes arrived as a drain began gets it back (requestStarted).
	deadline time.Time

	// relay is the connection's relay once it is set up.
	relay atomic.Pointer[connRelay]
}

// beforeRead refreshes the idle deadline before the proxy waits for the next request, and
// stops reading requests once the proxy drains or the connection's expiry (ConnectionExpiration)
// has passed. The deadline is never later than the expiry, so an idle connection ends then too.
func (pc *proxyConn) beforeRead() error {
	if h := panicHook.Load(); h != nil {
		(*h)("requests")
	}
	// At the boundary before the drain check: a drain that begins after the check sees the
	// boundary and interrupts the wait (drain).
	pc.atBoundary.Store(true)
	if pc.draining.Load() {
		return errDraining
	}
	now := time.Now()
	expires := pc.expiry()
	if !expires.IsZero() && !now.Before(expires) {
		return errExpired
	}
	// Refreshing on every frame would cost a timer update per request; once a second is enough.
	// Only the request side writes lastRefresh.
	if now.Sub(pc.lastRefresh) > time.Second {
		return pc.refreshDeadline(now, expires)
	}
	return nil
}

// refreshDeadline moves the idle read deadline on. Under mu, so it cannot undo the deadline
// of a drain that began since beforeRead looked (it looks again).
func (pc *proxyConn) refreshDeadline(now, expires time.Time) error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.draining.Load() {
		return errDraining
	}
	pc.lastRefresh = now
	pc.deadline = now.Add(pc.idle)
	if !expires.IsZero() && expires.Before(pc.deadline) {
		pc.deadline = expires
	}
	return pc.client.SetReadDeadline(pc.deadline)
}

// expiry is when the connection is to end; zero when never.
func (pc *proxyConn) expiry() time.Time {
	if pc.expires == nil {
		return time.Time{}
	}
	return pc.expires()
}

// expiredBetweenRequests reports whether the request side's read failed because the
// connection's expiry came while it waited for a request: nothing was cut short.
func (pc *proxyConn) expiredBetweenRequests(err error) bool {
	var ne net.Error
	e := pc.expiry()
	return pc.atBoundary.Load() && errors.As(err, &ne) && ne.Timeout() && !e.IsZero() && !time.Now().Before(e)
}

// boundaryReader clears its connection's atBoundary once a request's bytes arrive.
type boundaryReader struct {
	r  io.Reader
	pc *proxyConn
}

func (b boundaryReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 && b.pc.atBoundary.Load() {
		b.pc.requestStarted()
	}
	return n, err
}

// requestStarted records that a request's first bytes arrived: from now on a drain lets the
// request finish. A drain that began while those bytes were being read has set a read deadline
// in the past, which would cut the request after its first bytes (and, on the byte-copying
// path, after they were forwarded): the deadline beforeRead set is put back.
func (pc *proxyConn) requestStarted() {
	pc.atBoundary.Store(false)
	if !pc.draining.Load() {
		return // a drain that begins now sees no boundary and sets no deadline
	}
	// The drain stored draining under mu, and set its deadline before it let go of mu.
	pc.mu.Lock()
	defer pc.mu.Unlock()
	_ = pc.client.SetReadDeadline(pc.deadline)
}

// drain stops the request side at the next frame boundary; responses in flight still flow.
// A request whose first bytes were read is read to its end and forwarded whole (the byte-copying
// path forwards a frame as it arrives, so interrupting it would leave the broker half a request);
// only a request side waiting for a request's first bytes is interrupted now. The drain
// timeout bounds both.
func (pc *proxyConn) drain() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.draining.Store(true)
	if pc.atBoundary.Load() {
		_ = pc.client.SetReadDeadline(time.Now())
	}
}

// stoppedForDrain reports whether the request side ended because of a drain: beforeRead
// refused to read on, or the drain's deadline interrupted the wait for a request's first
// bytes. A read that failed inside a request is no drain: the request is cut short, and the
// connection is closed at once rather than left waiting for its response.
func (pc *proxyConn) stoppedForDrain(err error) bool {
	if errors.Is(err, errDraining) {
		return true
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.draining.Load() && pc.atBoundary.Load()
}

func (pc *proxyConn) closeNow() {
	pc.client.Close()
	if pc.upstream != nil {
		pc.upstream.Close()
	}
}

// countingConn counts bytes into Prometheus counters.
type countingConn struct {
	net.Conn
	in, out prometheus.Counter
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.in.Add(float64(n))
	}
	return n, err
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.out.Add(float64(n))
	}
	return n, err
}

// handle routes one accepted connection: the route (by SNI in the TLS handshake, or the plain
// listener's one), the first request, the upstream connection. It returns the connection's
// relay, to run until either side ends, or nil when a step failed and closed the connection.
func (s *Server) handle(ctx context.Context, rt *listenerRT, c net.Conn, plainNodeID int32) *connRelay {
	snap := rt.snap.Load()
	lim := *s.limits.Load()
	tuneTCP(c, lim)
	client, route, nodeID, ok := s.routeConn(ctx, snap, c, plainNodeID, lim)
	if !ok {
		return nil
	}
	vc := route.cfg.Name
	logger := connLogger(klog.FromContext(ctx), vc, nodeID, c.RemoteAddr())
	cc := countingConn{Conn: client, in: s.Metrics.Bytes.WithLabelValues(vc, "in"), out: s.Metrics.Bytes.WithLabelValues(vc, "out")}
	first, ok := s.firstRequest(logger, client, cc, vc, lim)
	if !ok {
		return nil
	}
	up, addr, ok := s.upstreamFor(klog.NewContext(ctx, logger), route, nodeID, cc, first, lim)
	if !ok {
		client.Close()
		return nil
	}
	pc := &proxyConn{client: client, upstream: up, vc: vc, state: route.state, filters: route.filters, idle: lim.IdleTimeout.Duration}
	if !s.register(pc, route) {
		pc.closeNow()
		return nil
	}
	closed := s.Metrics.connectionOpened(vc, nodeID)
	logger.V(2).Info("Connection routed", "upstream", addr)
	return s.newRelay(klog.FromContext(ctx), nodeID, pc, route, lim, cc, first, closed)
}

// tuneTCP sets a client TCP connection's options: no Nagle delay, keepalive, and the user
// timeout that bounds unacknowledged writes.
func tuneTCP(c net.Conn, lim config.Limits) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAliveConfig(keepAlive)
		setUserTimeout(tc, lim.WriteTimeout.Duration)
	}
}

// routeConn finds a connection's virtual cluster and node id: by SNI in the TLS handshake, or on
// a plain listener its one virtual cluster and the port's node id. false: the connection is
// closed.
func (s *Server) routeConn(ctx context.Context, snap *snapshot, c net.Conn, plainNodeID int32, lim config.Limits) (net.Conn, *vcRoute, int32, bool) {
	if snap.listener.TLS() {
		tc, m, ok := s.handshake(ctx, snap, c, lim.HandshakeTimeout.Duration)
		return tc, m.route, m.nodeID, ok
	}
	if len(snap.routes) == 0 {
		c.Close()
		return nil, nil, 0, false
	}
	return c, snap.routes[0], plainNodeID, true
}

// firstRequest reads the connection's first request: nothing is spent on a connection (no
// upstream dial, no relay buffers) before its client has sent a whole first request within
// limits.firstRequestTimeout. false: the connection is closed.
func (s *Server) firstRequest(logger klog.Logger, client net.Conn, cc countingConn, vc string, lim config.Limits) ([]byte, bool) {
	first, err := readFirstRequest(client, cc, lim.FirstRequestTimeout.Duration, lim.MaxFrameBytes)
	if err == nil {
		return first, true
	}
	switch {
	case errors.Is(err, errFirstRequestTimeout):
		s.Metrics.Refusals.WithLabelValues(refusedFirstRequest).Inc()
		logger.V(2).Info("Closing connection: no complete first request in time", "timeout", lim.FirstRequestTimeout.Duration)
	case errors.Is(err, kafka.ErrMalformed):
		s.Metrics.MalformedFrames.WithLabelValues(vc).Inc()
		logger.Info("Closed connection on a malformed frame", "err", err)
	default:
		logger.V(2).Info("Connection closed before its first request", "err", err)
	}
	client.Close()
	return nil, false
}

// upstreamFor is the connection to the broker: dialed now, or for a virtual cluster whose filters
// authenticate clients, once the chain forwards a request (lazyUpstream), so the requests it
// answers itself (ApiVersions, SASL) never make an upstream connection.
func (s *Server) upstreamFor(ctx context.Context, route *vcRoute, nodeID int32, cc countingConn, first []byte, lim config.Limits) (net.Conn, string, bool) {
	if route.filters == nil || !route.filters.TerminatesSASL() {
		return s.upstreamConn(ctx, route, nodeID, cc, first, lim)
	}
	dial := func(ctx context.Context) (net.Conn, error) { return s.dialAsProxy(ctx, route, nodeID, lim) }
	return newLazyUpstream(ctx, dial), "(once the client authenticated)", true
}

// upstreamConn dials the broker a connection is for: the virtual cluster's bootstrap, or the
// broker of its node id. A broker the proxy does not know yet, or cannot reach, answers the
// client's ApiVersions with BROKER_NOT_AVAILABLE (clients retry with a metadata refresh). false:
// the caller closes the client connection.
func (s *Server) upstreamConn(ctx context.Context, route *vcRoute, nodeID int32, cc countingConn, first []byte, lim config.Limits) (net.Conn, string, bool) {
	logger := klog.FromContext(ctx)
	vc := route.cfg.Name
	addr := route.cfg.TargetBootstrap
	if nodeID >= 0 {
		var err error
		if addr, err = s.brokerAddress(ctx, route, nodeID, lim); err != nil {
			s.Metrics.UpstreamErrors.WithLabelValues(vc, "unknown_broker").Inc()
			// Said once per virtual cluster (it names what to configure), then at V(2): a
			// client retrying would otherwise flood the log; the metric counts every one.
			if route.state.unknownLogged.CompareAndSwap(false, true) {
				logger.Info("Closing connection: upstream broker unknown; later ones are logged at verbosity 2", "err", err)
			} else {
				logger.V(2).Info("Closing connection: upstream broker unknown", "err", err)
			}
			answerBrokerNotAvailable(cc, first, lim.WriteTimeout.Duration)
			return nil, addr, false
		}
	}
	up, err := s.dialUpstream(ctx, route, addr, nodeID >= 0, lim)
	if err != nil {
		s.Metrics.UpstreamErrors.WithLabelValues(vc, "dial").Inc()
		logger.Info("Closing connection: upstream dial failed", "upstream", addr, "err", err)
		// A broker that is down refuses the client's dial, which clients retry; through the
		// proxy the dial succeeds, and a bare close of the first request reads to clients as a
		// TLS or SASL misconfiguration (franz-go does not retry it, and tears down its group
		// session). The answer says what a refused dial would have.
		answerBrokerNotAvailable(cc, first, lim.WriteTimeout.Duration)
		return nil, addr, false
	}
	return up, addr, true
}

// register adds a routed connection to those the server tracks (reloads and the drain end
// them), unless a reload removed or changed its virtual cluster, or shutdown started, while it
// was being set up.
func (s *Server) register(pc *proxyConn, route *vcRoute) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vcs[pc.vc] != route.state || s.vcChains[pc.vc] != route.filters || s.draining.Load() {
		return false
	}
	s.conns[pc] = struct{}{}
	s.Metrics.ConnectionsTotal.WithLabelValues(pc.vc).Inc()
	s.Metrics.ConnectionsActive.WithLabelValues(pc.vc).Inc()
	return true
}

// unregister forgets a connection that ended.
func (s *Server) unregister(pc *proxyConn) {
	s.Metrics.ConnectionsActive.WithLabelValues(pc.vc).Dec()
	s.mu.Lock()
	delete(s.conns, pc)
	s.mu.Unlock()
}

// addressMap learns upstream broker addresses and gives clients this virtual cluster's
// broker host and port instead.
func (s *Server) addressMap(rt *vcRoute, st *vcState, port func(int32) int32) kafka.AddressMap {
	return func(id int32, host string, p int32) (string, int32) {
		st.learn(id, host, p)
		return rt.brokerNames().Host(id), port(id)
	}
}

// panicHook, when set by a test, runs before each read of requests ("requests", inside
// CopyRequests) and at the start of the response side ("responses").
var panicHook atomic.Pointer[func(side string)]

// recovered turns a panic of one connection's goroutine into closing that connection: one
// client must never take the process, and every other connection, down with it.
func (s *Server) recovered(logger klog.Logger, r any, closeConn func()) {
	s.Metrics.Panics.Inc()
	logger.Error(fmt.Errorf("panic: %v", r), "Connection handling panicked; closed the connection", "stack", string(debug.Stack()))
	closeConn()
}

// newRelay is a routed connection's relay (run) with its two sides: the request side runs on
// the relay's goroutine. Kafka is request/response: nothing comes from the broker while no
// response is awaited, so the response side has a goroutine only while the connection is
// active: started when a request is queued and none runs, ended a lingerPeriod or two after
// the last request (responses). An idle connection holds one goroutine, waiting for its
// client.
func (s *Server) newRelay(base klog.Logger, nodeID int32, pc *proxyConn, route *vcRoute, lim config.Limits, cc countingConn, first []byte, closed func()) *connRelay {
	r := &connRelay{s: s, base: base, nodeID: nodeID, pc: pc, route: route, cc: cc, wt: lim.WriteTimeout.Duration, closed: closed,
		pending: make(chan kafka.Pending, maxPending),
		opts:    kafka.RelayOptions{MaxFrame: lim.MaxFrameBytes, Stats: s.Metrics.virtualCluster(route.cfg.Name)}}
	if fc := connectionFilters(route, pc.client); fc != nil {
		pc.expires = fc.Expires
		r.fc = fc
		r.opts.Filters = fc // a nil *filter.Conn would be a non-nil interface
	}
	r.reqs = r.requestRelay(first)
	r.resp = r.responseRelay()
	pc.relay.Store(r)
	return r
}

// connRelay is what both sides of one connection's relay share.
type connRelay struct {
	s *Server
	// base is the server's logger, and nodeID the broker the connection is for: the
	// connection's logger (logger) is made from them when something is logged, for one kept
	// per connection cost every idle connection a quarter KiB.
	base    klog.Logger
	nodeID  int32
	pc      *proxyConn
	route   *vcRoute
	cc      countingConn
	wt      time.Duration // the write timeout
	pending chan kafka.Pending
	opts    kafka.RelayOptions // what both sides set alike
	fc      *filter.Conn       // the connection's filters; nil without
	closed  func()             // counts the connection closed (connectionOpened)

	reqs *kafka.RequestRelay
	resp *kafka.ResponseRelay
	// respRunning is set while a goroutine runs the response side: the request side starts
	// one when it queues a request and none runs (startResponses).
	respRunning atomic.Bool
	// active is set when a request is queued, cleared by endIfIdle.
	active atomic.Bool
	// queueMu orders endIfIdle's Wake before the request side's close of the queue.
	queueMu     sync.Mutex
	queueClosed bool
	// brokerWait is where the response side waits (awaitBroker): notWaiting, waitingOnBroker,
	// or interrupted by kick. kicks counts what was queued that the broker will not answer
	// (Local answers, Wake, the queue's close); kicksSeen, the response side's own, is how many
	// of them it has looked for. waitMu orders a kick's past deadline before the response
	// side's clearing of it.
	brokerWait atomic.Int32
	kicks      atomic.Uint32
	kicksSeen  uint32
	waitMu     sync.Mutex
	// brokerDialed is set, by the response side, once the upstream is dialed (always, but for
	// a lazy upstream): only then does it wait on the broker's socket.
	brokerDialed bool
	respWG       sync.WaitGroup
	// respErr is the error the response side failed with; read once respWG is done.
	respErr error
}

// logger is the connection's logger, with its virtual cluster, node id and client address.
func (r *connRelay) logger() klog.Logger {
	return connLogger(r.base, r.route.cfg.Name, r.nodeID, r.pc.client.RemoteAddr())
}

// connLogger is a connection's logger.
func connLogger(base klog.Logger, vc string, nodeID int32, remote net.Addr) klog.Logger {
	return klog.LoggerWithValues(base, "virtualCluster", vc, "nodeId", nodeID, "remote", remote.String())
}

// run is the relay's goroutine: the request side, then the responses still in flight, then
// the connection's end. It is kept shallow, for its stack is the one an idle connection holds:
// the wait for the client's next request is three calls below it (requests, Wait, and the
// reads), and the runtime grows a stack for the deepest call it ever made.
func (r *connRelay) run(src netip.Addr) {
	s, pc := r.s, r.pc
	defer s.connEnded(src)
	defer func() {
		if p := recover(); p != nil {
			s.recovered(r.logger(), p, pc.closeNow)
		}
	}()
	defer pc.closeNow()
	defer s.unregister(pc)
	defer r.closed()
	if r.fc != nil {
		defer r.fc.End()
	}
	reqErr := r.requests()
	respErr := r.finishResponses()
	pc.closeNow()
	s.relayEnded(r.logger(), r.route.cfg.Name, reqErr, respErr)
}

// requests is the request side: the client's requests to the broker, after the first. It
// closes the queue when it ends. A panic closes the connection; anything but a clean end or a
// drain ends it at once.
func (r *connRelay) requests() (err error) {
	defer r.closeQueue()
	defer func() {
		if p := recover(); p != nil {
			r.s.recovered(r.logger(), p, r.pc.closeNow)
			err = fmt.Errorf("request side panicked: %v", p)
		}
	}()
	for err == nil {
		if err = r.reqs.RelayBuffered(); err == nil {
			err = r.reqs.Wait()
		}
	}
	switch {
	case r.pc.stoppedForDrain(err):
		// Between requests: let the responses in flight finish.
		err = errDraining
	case r.pc.expiredBetweenRequests(err):
		err = errExpired
	}
	if errors.Is(err, errExpired) {
		r.logger().V(2).Info("Connection expired: no more requests read; closing once the responses in flight are written")
	}
	if !errors.Is(err, errDraining) && !errors.Is(err, errExpired) && !errors.Is(err, io.EOF) {
		r.pc.closeNow()
	}
	return err
}

// requestRelay is the request side's relay, from the first request (read before the relay
// starts) on.
func (r *connRelay) requestRelay(first []byte) *kafka.RequestRelay {
	client := &prefixReader{prefix: first, r: boundaryReader{r: r.cc, pc: r.pc}}
	opts := r.opts
	opts.BeforeRead = r.pc.beforeRead
	opts.Queued = r.queued
	opts.Splice = splicerFor(r.pc.client, r.pc.upstream, r.wt, r.cc.in, func() bool { return len(client.prefix) == 0 })
	if _, ok := r.pc.client.(*tls.Conn); ok {
		// An idle connection holds its wait buffer: 512 bytes, where a TLS client's next
		// request waits decrypted in its tls.Conn and a few bytes read wake the relay as well.
		opts.WaitSize = tlsWaitSize
	}
	return kafka.NewRequestRelay(client, newDeadlineWriter(r.pc.upstream, r.pc.upstream, r.wt), r.pending, opts)
}

// responseRelay is the response side: the broker's responses to the client, broker addresses
// rewritten.
func (r *connRelay) responseRelay() *kafka.ResponseRelay {
	l := r.route.listener
	port := func(int32) int32 { return r.route.cfg.Port(&l) }
	if !l.TLS() {
		port = func(id int32) int32 { return l.PortPerBroker.FirstBrokerPort + id }
	}
	opts := r.opts
	opts.Addresses = r.s.addressMap(r.route, r.pc.state, port)
	opts.Splice = splicerFor(r.pc.upstream, r.pc.client, r.wt, r.cc.out, nil)
	return kafka.NewResponseRelay(r.pc.upstream, newDeadlineWriter(r.cc, r.pc.client, r.wt), opts)
}

// queued is the request side's call after it queued a Pending: local when the proxy answers it
// itself. It marks the connection active and starts the response side's goroutine unless one
// runs; a local answer also wakes a response side that waits on the broker, which would
// otherwise wait for a response that never comes.
func (r *connRelay) queued(local bool) {
	if !r.active.Load() {
		r.active.Store(true)
	}
	if local {
		r.kick()
	}
	if r.respRunning.CompareAndSwap(false, true) {
		r.respWG.Add(1)
		go r.responses()
	}
}

// responses is the response side's goroutine. Between responses it waits, as long as the
// connection is active, on the broker's socket (next): starting a goroutine for each request
// would cost more than waking one, for a new goroutine's small stack grows again on every
// response. Once a whole lingerPeriod passed without a request, endIfIdle wakes it and it ends,
// unless a request was queued meanwhile: then it takes that on, for the request side started no
// goroutine while one ran. A response side that fails closes the connection and takes requests
// off the queue until the request side has ended, so the request side never waits for room.
func (r *connRelay) responses() {
	defer r.respWG.Done()
	for {
		ended, err := r.relayResponses()
		if err != nil {
			r.respErr = err
			r.pc.closeNow()
			drainPending(r.pending)
			return
		}
		if ended {
			return
		}
		r.respRunning.Store(false)
		if len(r.pending) == 0 || !r.respRunning.CompareAndSwap(false, true) {
			return
		}
	}
}

// relayResponses relays the responses queued, then waits for the next request while the
// connection is active. ended: the queue is closed and every response relayed. A panic closes
// the connection.
func (r *connRelay) relayResponses() (ended bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.s.recovered(r.logger(), p, r.pc.closeNow)
			err = fmt.Errorf("response side panicked: %v", p)
		}
	}()
	if h := panicHook.Load(); h != nil {
		(*h)("responses")
	}
	for {
		closed, err := r.resp.RelayQueued(r.pending)
		if err != nil {
			return false, err
		}
		if closed {
			return true, r.unasked() // every response is relayed: bytes left were not asked for
		}
		p, ok, err := r.next()
		switch {
		case err != nil:
			return false, err
		case !ok:
			return true, r.unasked() // what was relayed is sent: RelayQueued found the queue empty
		case kafka.IsWake(p) && !r.active.Load():
			return false, r.unaskedWhenIdle()
		}
		if err := r.resp.Relay(p); err != nil {
			return false, err
		}
	}
}

// next is the next Pending to relay, once the queue, empty when it is called, has one; !ok once
// it is closed. While the broker has sent nothing it waits on the broker's socket, as a plain
// relay's goroutine does, not on the queue: the request side queues each request without waking
// anyone, and the broker's response wakes the response side once, from the network poller. The
// Pending it answers was queued before the request was forwarded, so it is at the head of the
// queue by then (the receive blocks only on bytes nobody asked for, until a Wake comes).
// Whatever else is queued (a local answer, Wake, the queue's close) interrupts that wait (kick).
// A lazy upstream not dialed yet has nothing to wait on: it waits on the queue.
func (r *connRelay) next() (kafka.Pending, bool, error) {
	for r.resp.Buffered() == 0 && r.upstreamDialed() {
		kicked, err := r.awaitBroker()
		if err != nil {
			return kafka.Pending{}, false, r.brokerEnded(err)
		}
		if kicked {
			select {
			case p, ok := <-r.pending:
				return p, ok, nil
			default: // RelayQueued took it already
			}
		}
	}
	p, ok := <-r.pending
	return p, ok, nil
}

// upstreamDialed reports whether the broker's connection is made: a lazy upstream is dialed by
// the first request forwarded.
func (r *connRelay) upstreamDialed() bool {
	if !r.brokerDialed {
		lu, lazy := r.pc.upstream.(*lazyUpstream)
		r.brokerDialed = !lazy || lu.dialed() != nil
	}
	return r.brokerDialed
}

// Where the response side waits (connRelay.brokerWait).
const (
	notWaiting int32 = iota
	waitingOnBroker
	interrupted
)

// aLongTimeAgo is a read deadline in the past: it interrupts a read at once.
var aLongTimeAgo = time.Unix(1, 0)

// awaitBroker waits on the broker's socket until it has bytes, or something the broker will
// not answer was queued: kicked, when the wait did not start for it. An interrupted wait
// returns neither (the caller looks again and sees the kick).
//
// The race: the response side stores waitingOnBroker, then loads kicks; a kick adds to kicks
// (after queuing), then loads brokerWait. Go's atomics are sequentially consistent, so one of
// the two loads sees the other side's store: either the response side sees the kick and does
// not wait, or the kick sees it waiting and interrupts it. Each loads after its own store, so
// both may see each other: the response side then does not wait, and the interrupt it is sent
// ends its next wait at once, one loop more (as does a kick that lands after the bytes came).
// The kick's Add comes after its send, so a response side that sees the kick finds what was
// queued (or took it already).
func (r *connRelay) awaitBroker() (kicked bool, err error) {
	r.brokerWait.Store(waitingOnBroker)
	if k := r.kicks.Load(); k != r.kicksSeen {
		r.kicksSeen = k
		r.stopWaiting()
		return true, nil
	}
	err = r.resp.WaitForBytes()
	if r.stopWaiting() && isTimeout(err) {
		return false, nil
	}
	return false, err
}

// stopWaiting ends a wait on the broker, and reports whether a kick interrupted it: then it
// clears the deadline the kick set. waitMu makes the kick's deadline land before that.
func (r *connRelay) stopWaiting() bool {
	if r.brokerWait.CompareAndSwap(waitingOnBroker, notWaiting) {
		return false
	}
	r.waitMu.Lock()
	defer r.waitMu.Unlock()
	_ = r.pc.upstream.SetReadDeadline(time.Time{})
	r.brokerWait.Store(notWaiting)
	return true
}

// kick tells a response side that waits on the broker that the queue holds something the
// broker will not answer (a local answer, Wake) or is closed: it interrupts the wait with a
// read deadline in the past. The caller has queued it; see awaitBroker for the race.
func (r *connRelay) kick() {
	r.kicks.Add(1)
	if r.brokerWait.Load() != waitingOnBroker {
		return
	}
	r.waitMu.Lock()
	defer r.waitMu.Unlock()
	if r.brokerWait.CompareAndSwap(waitingOnBroker, interrupted) {
		_ = r.pc.upstream.SetReadDeadline(aLongTimeAgo)
	}
}

// isTimeout reports whether err is a read deadline's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// errBrokerClosed is the response side's end when the broker closed the connection between
// responses.
var errBrokerClosed = errors.New("broker closed the connection")

// brokerEnded is the error of a wait on the broker that failed.
func (r *connRelay) brokerEnded(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w with %d requests in flight", errBrokerClosed, len(r.pending))
	}
	return err
}

// unasked is the error of a response side that ends with bytes of the broker's left over: no
// request asked for them, and a broker sends nothing unasked.
func (r *connRelay) unasked() error {
	if n := r.resp.Buffered(); n > 0 {
		return fmt.Errorf("%w: the broker sent %d bytes that answer no request", kafka.ErrMalformed, n)
	}
	return nil
}

// unaskedWhenIdle is unasked for a response side that ends for the connection is idle: bytes
// left over while requests are queued answer those requests (the next goroutine relays them).
func (r *connRelay) unaskedWhenIdle() error {
	if len(r.pending) > 0 {
		return nil
	}
	return r.unasked()
}

// lingerPeriod is how often endIfIdle runs: a connection's response side ends between one and
// two periods after its last request.
const lingerPeriod = 250 * time.Millisecond

// endIfIdle ends the response side of a connection that queued no request since the last
// call: a full lingerPeriod. The server calls it every lingerPeriod, for every connection.
func (r *connRelay) endIfIdle() {
	if !r.respRunning.Load() || r.active.Swap(false) {
		return
	}
	if r.queueWake() {
		r.kick()
	}
}

// queueWake queues Wake, unless the queue is closed or full (the response side is busy).
func (r *connRelay) queueWake() bool {
	r.queueMu.Lock()
	defer r.queueMu.Unlock()
	if r.queueClosed {
		return false
	}
	select {
	case r.pending <- kafka.Wake:
		return true
	default:
		return false
	}
}

// closeQueue closes the queue once the request side ended, and wakes a response side that
// waits on the broker: it relays what is queued and ends.
func (r *connRelay) closeQueue() {
	r.queueMu.Lock()
	r.queueClosed = true
	close(r.pending)
	r.queueMu.Unlock()
	r.kick()
}

// finishResponses, once the request side ended (and closed the queue), relays the responses
// still awaited, on this goroutine unless a burst runs already, and returns the response
// side's error.
func (r *connRelay) finishResponses() error {
	if r.respRunning.CompareAndSwap(false, true) {
		r.respWG.Add(1)
		r.responses()
	}
	r.respWG.Wait()
	return r.respErr
}

// drainPending unblocks a request side that waits for room once responses stopped.
func drainPending(pending <-chan kafka.Pending) {
	for range pending {
	}
}

// relayEnded counts and logs how a relayed connection ended.
func (s *Server) relayEnded(logger klog.Logger, vc string, reqErr, respErr error) {
	for _, err := range []error{reqErr, respErr} {
		if errors.Is(err, kafka.ErrMalformed) {
			s.Metrics.MalformedFrames.WithLabelValues(vc).Inc()
			logger.Info("Closed connection on a malformed frame", "err", err)
			return
		}
	}
	if respErr != nil && !errors.Is(respErr, net.ErrClosed) {
		s.Metrics.UpstreamErrors.WithLabelValues(vc, "relay").Inc()
	}
	logger.V(2).Info("Connection closed", "requestSide", errString(reqErr), "responseSide", errString(respErr))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// answerBrokerNotAvailable answers a connection's first request, when it is ApiVersions (every
// client's first), with BROKER_NOT_AVAILABLE, which clients retry with backoff and a metadata
// refresh, before the connection is closed. Any other first request only sees the close, which
// clients retry too.
func answerBrokerNotAvailable(w net.Conn, first []byte, timeout time.Duration) {
	if len(first) < 12 || int16(binary.BigEndian.Uint16(first[4:])) != kmsg.ApiVersions.Int16() {
		return
	}
	version := int16(binary.BigEndian.Uint16(first[6:]))
	corr := int32(binary.BigEndian.Uint32(first[8:]))
	if timeout > 0 {
		_ = w.SetWriteDeadline(time.Now().Add(timeout))
	}
	_, _ = w.Write(kafka.ApiVersionsError(corr, version, kerr.BrokerNotAvailable.Code))
}
