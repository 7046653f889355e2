package server

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// maxPending bounds requests in flight per connection; a client pipelining more waits.
const maxPending = 1024

// errDraining ends the request side of a connection during shutdown.
var errDraining = errors.New("proxy shutting down")

// proxyConn is one relayed client connection.
type proxyConn struct {
	client, upstream net.Conn
	vc               string
	state            *vcState

	mu          sync.Mutex
	draining    bool
	idle        time.Duration
	lastRefresh time.Time
}

// beforeRead refreshes the idle deadline before the proxy waits for the next request, and
// stops reading requests once the proxy drains.
func (pc *proxyConn) beforeRead() error {
	if h := panicHook.Load(); h != nil {
		(*h)("requests")
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.draining {
		return errDraining
	}
	// Refreshing on every frame would cost a timer update per request; once a second is enough.
	if now := time.Now(); now.Sub(pc.lastRefresh) > time.Second {
		pc.lastRefresh = now
		return pc.client.SetReadDeadline(now.Add(pc.idle))
	}
	return nil
}

// drain stops the request side at the next frame boundary; responses in flight still flow.
func (pc *proxyConn) drain() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.draining = true
	_ = pc.client.SetReadDeadline(time.Now())
}

func (pc *proxyConn) isDraining() bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.draining
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

// handle routes one accepted connection and relays it until either side ends.
func (s *Server) handle(ctx context.Context, rt *listenerRT, c net.Conn, plainNodeID int32) {
	logger := klog.FromContext(ctx)
	snap := rt.snap.Load()
	lim := *s.limits.Load()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAliveConfig(keepAlive)
		setUserTimeout(tc, lim.WriteTimeout.Duration)
	}
	var route *vcRoute
	nodeID := plainNodeID
	client := c
	if snap.listener.TLS() {
		var reason string
		tc := tls.Server(c, &tls.Config{
			MinVersion: tls.VersionTLS12,
			GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
				r, id, ok := snap.route(hello.ServerName)
				if !ok {
					reason = "unknown_sni"
					if hello.ServerName == "" {
						reason = "no_sni"
					}
					if n, ok := s.refusedLog.allow(); ok {
						logger.Info("Refused TLS handshake: no virtual cluster for this SNI (at most one such line a second; -v=2 logs each with the listener's hosts)",
							"listener", snap.listener.Name, "sni", hello.ServerName, "remote", c.RemoteAddr().String(), "suppressed", n)
					}
					logger.V(2).Info("Refused TLS handshake: no virtual cluster for this SNI", "listener", snap.listener.Name,
						"sni", hello.ServerName, "remote", c.RemoteAddr().String(), "patterns", describe(snap.patterns()))
					return nil, fmt.Errorf("no virtual cluster for SNI %q", hello.ServerName)
				}
				cert := SelectCertificate(snap.certs, hello.ServerName)
				if cert == nil {
					reason = "no_certificate"
					if n, ok := s.refusedLog.allow(); ok {
						logger.Info("Refused TLS handshake: no certificate of the listener covers this SNI", "listener", snap.listener.Name,
							"sni", hello.ServerName, "virtualCluster", r.cfg.Name, "suppressed", n)
					}
					return nil, fmt.Errorf("no certificate for %q", hello.ServerName)
				}
				cfg := &tls.Config{Certificates: []tls.Certificate{*cert}}
				snap.params.Apply(cfg)
				cfg.SetSessionTicketKeys(sessionTicketKeys(snap.ticketSeed, time.Now()))
				if snap.clientCAs != nil {
					cfg.ClientCAs = snap.clientCAs
					cfg.ClientAuth = tls.RequireAndVerifyClientCert
				}
				route, nodeID = r, id
				return cfg, nil
			},
		})
		hctx, cancel := context.WithTimeout(ctx, lim.HandshakeTimeout.Duration)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			if reason == "" {
				reason = "tls_error"
				if errors.Is(err, context.DeadlineExceeded) {
					reason = "timeout"
				}
				logger.V(2).Info("TLS handshake failed", "listener", snap.listener.Name, "remote", c.RemoteAddr().String(), "err", err)
			}
			s.Metrics.HandshakeFailures.WithLabelValues(snap.listener.Name, reason).Inc()
			c.Close()
			return
		}
		client = tc
	} else {
		if len(snap.routes) == 0 {
			c.Close()
			return
		}
		route = snap.routes[0]
	}

	vc := route.cfg.Name
	logger = klog.LoggerWithValues(logger, "virtualCluster", vc, "nodeId", nodeID, "remote", c.RemoteAddr().String())
	cc := countingConn{Conn: client, in: s.Metrics.Bytes.WithLabelValues(vc, "in"), out: s.Metrics.Bytes.WithLabelValues(vc, "out")}
	// Nothing is spent on a connection (no upstream dial, no relay buffers) before its client has
	// sent a whole first request within limits.firstRequestTimeout.
	first, err := readFirstRequest(client, cc, lim.FirstRequestTimeout.Duration, lim.MaxFrameBytes)
	if err != nil {
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
		return
	}
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
			client.Close()
			return
		}
	}
	up, err := s.dialUpstream(ctx, route, addr, lim)
	if err != nil {
		s.Metrics.UpstreamErrors.WithLabelValues(vc, "dial").Inc()
		logger.Info("Closing connection: upstream dial failed", "upstream", addr, "err", err)
		client.Close()
		return
	}

	pc := &proxyConn{client: client, upstream: up, vc: vc, state: route.state, idle: lim.IdleTimeout.Duration}
	defer pc.closeNow() // also when the relay panics
	s.mu.Lock()
	if s.vcs[vc] != route.state || s.draining.Load() {
		// Removed by a reload (or shutdown started) while this connection was being set up.
		s.mu.Unlock()
		pc.closeNow()
		return
	}
	s.conns[pc] = struct{}{}
	s.mu.Unlock()
	s.Metrics.ConnectionsTotal.WithLabelValues(vc).Inc()
	active := s.Metrics.ConnectionsActive.WithLabelValues(vc)
	active.Inc()
	defer s.Metrics.connectionOpened(vc, nodeID)()
	defer func() {
		active.Dec()
		s.mu.Lock()
		delete(s.conns, pc)
		s.mu.Unlock()
	}()
	logger.V(2).Info("Connection routed", "upstream", addr)
	s.relay(logger, pc, route, lim, cc, first)
}

// addressMap learns upstream broker addresses and gives clients this virtual cluster's
// broker host and port instead.
func (s *Server) addressMap(rt *vcRoute, st *vcState, port func(int32) int32) kafka.AddressMap {
	return func(id int32, host string, p int32) (string, int32) {
		st.learn(id, host, p)
		return rt.cfg.BrokerHost(id), port(id)
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

func (s *Server) relay(logger klog.Logger, pc *proxyConn, route *vcRoute, lim config.Limits, cc countingConn, first []byte) {
	vc := route.cfg.Name
	stats := s.Metrics.virtualCluster(vc)
	l := route.listener
	port := func(int32) int32 { return route.cfg.Port(&l) }
	if !l.TLS() {
		port = func(id int32) int32 { return l.PortPerBroker.FirstBrokerPort + id }
	}
	pending := make(chan kafka.Pending, maxPending)
	filters := connectionFilters(route)
	reqDone := make(chan error, 1)
	wt := lim.WriteTimeout.Duration
	go func() {
		var err error
		defer func() {
			if r := recover(); r != nil {
				s.recovered(logger, r, pc.closeNow)
				reqDone <- fmt.Errorf("request side panicked: %v", r)
			}
		}()
		client := &prefixReader{prefix: first, r: cc}
		splice := splicer(pc.client, pc.upstream, wt, cc.in, func() bool { return len(client.prefix) == 0 })
		err = kafka.CopyRequests(client, newDeadlineWriter(pc.upstream, pc.upstream, wt), pending, kafka.RelayOptions{MaxFrame: lim.MaxFrameBytes, BeforeRead: pc.beforeRead, Stats: stats, Filters: filters, Splice: splice})
		if pc.isDraining() {
			// The drain's deadline interrupted the read: let responses in flight finish.
			err = errDraining
		}
		if !errors.Is(err, errDraining) && !errors.Is(err, io.EOF) {
			// Anything but a clean end or a drain ends the connection now.
			pc.closeNow()
		}
		reqDone <- err
	}()
	respErr := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				s.recovered(logger, r, pc.closeNow)
				err = fmt.Errorf("response side panicked: %v", r)
			}
		}()
		if h := panicHook.Load(); h != nil {
			(*h)("responses")
		}
		return kafka.CopyResponses(pc.upstream, newDeadlineWriter(cc, pc.client, wt),
			pending, kafka.RelayOptions{MaxFrame: lim.MaxFrameBytes, Addresses: s.addressMap(route, pc.state, port), Stats: stats, Filters: filters,
				Splice: splicer(pc.upstream, pc.client, wt, cc.out, nil)})
	}()
	pc.closeNow()
	go func() {
		for range pending { // unblock the request side if it waits for room
		}
	}()
	reqErr := <-reqDone
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
