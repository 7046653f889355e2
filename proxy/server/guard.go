package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// Defences against anonymous clients: what a connection may cost before it has proved to be
// a Kafka client (per-source caps, a handshake rate, the first-request deadline), and what a
// peer that stops reading may hold (write deadlines).

// Reasons of kafkalink_proxy_connections_refused_total.
const (
	refusedMaxConnections = "max_connections"
	refusedPerSource      = "per_source"
	refusedHandshakeRate  = "handshake_rate"
	refusedDraining       = "draining"
	refusedFirstRequest   = "first_request_timeout"
)

// sourceCounts counts open connections per source IP address.
type sourceCounts struct {
	mu sync.Mutex
	n  map[netip.Addr]int32
}

func sourceOf(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(ta.IP)
		return ip.Unmap()
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// acquire counts one more connection from ip, unless it already has max (0: no cap).
func (s *sourceCounts) acquire(ip netip.Addr, max int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[netip.Addr]int32{}
	}
	if max > 0 && s.n[ip] >= max {
		return false
	}
	s.n[ip]++
	return true
}

func (s *sourceCounts) release(ip netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[ip]--; s.n[ip] <= 0 {
		delete(s.n, ip)
	}
}

// tokenBucket is a rate limiter with a burst as large as the rate per second.
type tokenBucket struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// allow takes a token if one is left at rate per second (rate <= 0: no limit).
func (b *tokenBucket) allow(now time.Time, rate int32) bool {
	if rate <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	burst := float64(rate)
	if b.last.IsZero() {
		b.tokens = burst
	} else if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(burst, b.tokens+dt*float64(rate))
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// deadlineWriter sets a write deadline on conn before writes, so a write to a peer that stopped
// reading fails after timeout instead of blocking forever. The deadline is moved at most every
// refresh (a timer update per write would cost), so one write gets between timeout-refresh and
// timeout. One goroutine writes.
type deadlineWriter struct {
	w       io.Writer
	conn    net.Conn
	timeout time.Duration
	last    time.Time
}

func newDeadlineWriter(w io.Writer, conn net.Conn, timeout time.Duration) io.Writer {
	if timeout <= 0 {
		return w
	}
	return &deadlineWriter{w: w, conn: conn, timeout: timeout}
}

func (d *deadlineWriter) Write(b []byte) (int, error) {
	now := time.Now()
	if now.Sub(d.last) > min(time.Second, d.timeout/4) {
		d.last = now
		if err := d.conn.SetWriteDeadline(now.Add(d.timeout)); err != nil {
			return 0, err
		}
	}
	return d.w.Write(b)
}

// prefixReader returns prefix, then reads r: the first request, read before the relay starts,
// goes through the relay like any other.
type prefixReader struct {
	prefix []byte
	r      io.Reader
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		if len(p.prefix) == 0 {
			p.prefix = nil // let the first request's bytes go
		}
		return n, nil
	}
	return p.r.Read(b)
}

// errFirstRequestTimeout is a client that sent no complete first request in time.
var errFirstRequestTimeout = errors.New("no complete first request within limits.firstRequestTimeout")

// readFirstRequest reads one whole request frame (size included) from c within timeout. The
// buffer grows with the bytes that arrive, not with the size the client announces, so an idle
// or slow client holds little memory.
func readFirstRequest(c net.Conn, r io.Reader, timeout time.Duration, maxFrame int32) ([]byte, error) {
	if timeout > 0 {
		if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
			return nil, err
		}
	}
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, firstRequestErr(err)
	}
	size := int32(binary.BigEndian.Uint32(hdr[:]))
	if size < 8 || size > maxFrame {
		return nil, fmt.Errorf("%w: request size %d outside 8..%d", kafka.ErrMalformed, size, maxFrame)
	}
	var buf bytes.Buffer
	buf.Grow(int(min(size, 512)) + 4)
	buf.Write(hdr[:])
	n, err := buf.ReadFrom(io.LimitReader(r, int64(size)))
	if err == nil && n < int64(size) {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, firstRequestErr(err)
	}
	if timeout > 0 {
		if err := c.SetReadDeadline(time.Time{}); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

func firstRequestErr(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errFirstRequestTimeout
	}
	return err
}

// keepAlive is the TCP keepalive of client and broker connections: a peer that vanished
// (a node gone, a NAT entry dropped) is noticed in about a minute of silence.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 10 * time.Second, Count: 3}

// logLimiter lets one log line through per second and counts the ones it held back.
type logLimiter struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether to log now, with the number of lines suppressed since the last one.
func (l *logLimiter) allow() (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Sub(l.last) < time.Second {
		l.suppressed++
		return 0, false
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return n, true
}
