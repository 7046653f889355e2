package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// lazyUpstream is the upstream connection of a virtual cluster whose filters authenticate
// clients themselves (filter.Terminator): it is dialed by the first write, that is the first
// request the chain forwards, so a client that never authenticates (a wrong password, garbage,
// a port scan) costs the broker nothing. Reads wait for the dial. Deadlines set before the
// dial apply to the connection once it is made.
type lazyUpstream struct {
	dial   func(ctx context.Context) (net.Conn, error)
	ctx    context.Context
	cancel context.CancelFunc

	once  sync.Once
	ready chan struct{} // closed once the dial ended, well or not
	conn  net.Conn
	err   error

	mu            sync.Mutex
	closed        bool
	read, written time.Time // deadlines set before the dial
}

// errUpstreamClosed is a read or write of a lazy upstream closed before it was dialed.
var errUpstreamClosed = errors.New("upstream connection closed before it was dialed")

func newLazyUpstream(ctx context.Context, dial func(ctx context.Context) (net.Conn, error)) *lazyUpstream {
	ctx, cancel := context.WithCancel(ctx)
	return &lazyUpstream{dial: dial, ctx: ctx, cancel: cancel, ready: make(chan struct{})}
}

// connect dials once; every caller gets the one connection or error.
func (l *lazyUpstream) connect() (net.Conn, error) {
	l.once.Do(func() {
		var c net.Conn
		err := errUpstreamClosed
		if l.ctx.Err() == nil {
			c, err = l.dial(l.ctx)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		switch {
		case err != nil:
			l.err = err
		case l.closed:
			c.Close()
			l.err = errUpstreamClosed
		default:
			l.conn = c
			if !l.read.IsZero() {
				_ = c.SetReadDeadline(l.read)
			}
			if !l.written.IsZero() {
				_ = c.SetWriteDeadline(l.written)
			}
		}
		close(l.ready)
	})
	<-l.ready
	return l.conn, l.err
}

// dialed is the connection once dialed, else nil.
func (l *lazyUpstream) dialed() net.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn
}

func (l *lazyUpstream) Write(b []byte) (int, error) {
	c, err := l.connect()
	if err != nil {
		return 0, err
	}
	return c.Write(b)
}

// Read waits for a request to have dialed the connection: the response side reads only after
// a request was forwarded, or blocks here until the connection is closed.
func (l *lazyUpstream) Read(b []byte) (int, error) {
	select {
	case <-l.ready:
	case <-l.ctx.Done():
		return 0, net.ErrClosed
	}
	if l.err != nil {
		// The dial's failure was counted and logged where it happened (dialAsProxy).
		return 0, fmt.Errorf("%w: %w", net.ErrClosed, l.err)
	}
	return l.conn.Read(b)
}

// Close closes the connection, or ends a dial under way and any dial to come.
func (l *lazyUpstream) Close() error {
	l.mu.Lock()
	l.closed = true
	c := l.conn
	l.mu.Unlock()
	l.cancel()
	if c != nil {
		return c.Close()
	}
	return nil
}

// unconnected stands for the addresses of a connection not dialed yet.
var unconnected = &net.TCPAddr{}

func (l *lazyUpstream) LocalAddr() net.Addr {
	if c := l.dialed(); c != nil {
		return c.LocalAddr()
	}
	return unconnected
}

func (l *lazyUpstream) RemoteAddr() net.Addr {
	if c := l.dialed(); c != nil {
		return c.RemoteAddr()
	}
	return unconnected
}

func (l *lazyUpstream) SetDeadline(t time.Time) error {
	return errors.Join(l.SetReadDeadline(t), l.SetWriteDeadline(t))
}

func (l *lazyUpstream) SetReadDeadline(t time.Time) error {
	return l.deadline(t, &l.read, net.Conn.SetReadDeadline)
}

func (l *lazyUpstream) SetWriteDeadline(t time.Time) error {
	return l.deadline(t, &l.written, net.Conn.SetWriteDeadline)
}

func (l *lazyUpstream) deadline(t time.Time, keep *time.Time, set func(net.Conn, time.Time) error) error {
	l.mu.Lock()
	c := l.conn
	if c == nil {
		*keep = t
	}
	l.mu.Unlock()
	if c != nil {
		return set(c, t)
	}
	return nil
}

// dialAsProxy is the dial of a lazy upstream: the broker of nodeID (or the bootstrap), whose
// versions the chain learns, authenticated with the virtual cluster's credential when it has one
// (a broker that needs no SASL, on a plain or mTLS listener, needs none). Failures are counted
// and logged as upstreamConn does.
func (s *Server) dialAsProxy(ctx context.Context, route *vcRoute, nodeID int32, lim config.Limits) (net.Conn, error) {
	logger := klog.FromContext(ctx)
	vc := route.cfg.Name
	addr := route.cfg.TargetBootstrap
	if nodeID >= 0 {
		var err error
		if addr, err = s.brokerAddress(ctx, route, nodeID, lim); err != nil {
			s.Metrics.UpstreamErrors.WithLabelValues(vc, "unknown_broker").Inc()
			logger.V(2).Info("Closing connection: upstream broker unknown", "err", err)
			return nil, err
		}
	}
	c, err := s.dialUpstream(ctx, route, addr, nodeID >= 0, lim)
	if err != nil {
		s.Metrics.UpstreamErrors.WithLabelValues(vc, "dial").Inc()
		logger.Info("Closing connection: upstream dial failed", "upstream", addr, "err", err)
		return nil, err
	}
	if err := s.upstreamHandshake(ctx, route, c, lim); err != nil {
		c.Close()
		s.Metrics.UpstreamErrors.WithLabelValues(vc, "authentication").Inc()
		logger.Info("Closing connection: the proxy's own upstream handshake failed", "upstream", addr, "err", err)
		return nil, err
	}
	logger.V(2).Info("Upstream connected for an authenticated client", "upstream", addr)
	return c, nil
}

// upstreamHandshake runs ApiVersions (teaching the chain the brokers' versions, which clients
// are offered before they authenticate) and, with a credential, SASL as the proxy, within the
// dial timeout. Nothing of the client's has been written yet, so the proxy's correlation ids
// cannot meet the client's.
func (s *Server) upstreamHandshake(ctx context.Context, route *vcRoute, c net.Conn, lim config.Limits) error {
	_ = c.SetDeadline(time.Now().Add(lim.UpstreamDialTimeout.Duration))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	br := bufio.NewReader(c)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kafkalink-proxy"))
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(0)
	avResp := kmsg.NewPtrApiVersionsResponse()
	if err := roundTrip(c, br, f, av, avResp, 1, lim.MaxFrameBytes); err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	route.filters.LearnVersions(avResp)
	if d := route.cfg.Discovery; d != nil {
		if _, err := authenticate(ctx, c, br, f, d, 2, lim.MaxFrameBytes); err != nil {
			return fmt.Errorf("SASL %s as the virtual cluster's credential: %w", d.Mechanism, err)
		}
	}
	if br.Buffered() > 0 {
		return errors.New("the broker sent more than the proxy asked for")
	}
	return nil
}

// splicerFor is splicer for a connection's two sides, one of which may be a lazy upstream: it
// splices only once that is dialed, and declines before (the relay then copies). The flush that
// precedes a splice of a request dials it; a response is read only from a dialed one. Each
// direction's splicer is used by one goroutine, so resolving it once needs no lock.
func splicerFor(src, dst net.Conn, writeTimeout time.Duration, counted prometheus.Counter, ready func() bool) kafka.Splicer {
	lazySrc, _ := src.(*lazyUpstream)
	lazyDst, _ := dst.(*lazyUpstream)
	if lazySrc == nil && lazyDst == nil {
		return splicer(src, dst, writeTimeout, counted, ready)
	}
	var resolved kafka.Splicer
	return func(n int64) (bool, error) {
		if resolved == nil {
			from, to := src, dst
			if lazySrc != nil {
				from = lazySrc.dialed()
			}
			if lazyDst != nil {
				to = lazyDst.dialed()
			}
			if from == nil || to == nil {
				return false, nil
			}
			if resolved = splicer(from, to, writeTimeout, counted, ready); resolved == nil {
				resolved = func(int64) (bool, error) { return false, nil } // TLS on a side: never
			}
		}
		return resolved(n)
	}
}
