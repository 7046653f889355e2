package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// vcState is what the proxy learns about one virtual cluster; it survives config reloads
// as long as the virtual cluster keeps its name and target.
type vcState struct {
	name   string
	target string
	mu     sync.RWMutex
	// brokers maps node id to the upstream host:port, learned from responses.
	brokers map[int32]string

	// Discovery of unknown brokers: one Metadata request at a time per virtual cluster (later
	// callers wait for it), and node ids it did not find (or a failed discovery) are answered
	// from a short negative cache, so a client asking for a broker that does not exist costs no
	// upstream dial per connection.
	discMu     sync.Mutex
	disc       *discovery
	unknown    map[int32]time.Time
	failedTill time.Time
	// unknownLogged: an unknown broker was logged at Info once already.
	unknownLogged atomic.Bool
}

type discovery struct {
	done chan struct{}
	err  error
}

// negativeTTL is how long an unknown node id (or a failed discovery) is remembered.
const negativeTTL = 5 * time.Second

// maxUnknown bounds the negative cache; when full it starts again.
const maxUnknown = 1024

// cachedUnknown reports whether id was looked up in vain recently, or discovery failed.
func (s *vcState) cachedUnknown(id int32, now time.Time) bool {
	s.discMu.Lock()
	defer s.discMu.Unlock()
	return now.Before(s.failedTill) || now.Before(s.unknown[id])
}

func (s *vcState) markUnknown(id int32, now time.Time) {
	s.discMu.Lock()
	defer s.discMu.Unlock()
	if s.unknown == nil || len(s.unknown) >= maxUnknown {
		s.unknown = map[int32]time.Time{}
	}
	s.unknown[id] = now.Add(negativeTTL)
}

// discoverOnce runs fn, or waits for the run already under way and shares its result.
func (s *vcState) discoverOnce(ctx context.Context, fn func() error) error {
	s.discMu.Lock()
	if d := s.disc; d != nil {
		s.discMu.Unlock()
		select {
		case <-d.done:
			return d.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	d := &discovery{done: make(chan struct{})}
	s.disc = d
	s.discMu.Unlock()
	d.err = fn()
	s.discMu.Lock()
	s.disc = nil
	if d.err != nil {
		s.failedTill = time.Now().Add(negativeTTL)
	}
	s.discMu.Unlock()
	close(d.done)
	return d.err
}

func (s *vcState) get(id int32) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, ok := s.brokers[id]
	return a, ok
}

func (s *vcState) learn(id int32, host string, port int32) {
	addr := net.JoinHostPort(host, fmt.Sprint(port))
	s.mu.RLock()
	same := s.brokers[id] == addr
	s.mu.RUnlock()
	if same {
		return
	}
	s.mu.Lock()
	s.brokers[id] = strings.Clone(addr)
	s.mu.Unlock()
}

// upstreamTLS builds the client TLS configuration of a virtual cluster, or nil for plain.
func upstreamTLS(u *config.UpstreamTLS) (*tls.Config, error) {
	if u == nil {
		return nil, nil
	}
	params, err := resolveTLSOptions(u.Options)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{ServerName: strings.TrimSuffix(u.ServerName, "."), InsecureSkipVerify: u.InsecureSkipVerify} //nolint:gosec // explicit test-only opt-in
	params.Apply(c)
	if c.RootCAs, err = loadPool(u.CAFiles); err != nil {
		return nil, err
	}
	if u.CertificateFile != "" {
		kp, err := tls.LoadX509KeyPair(u.CertificateFile, u.PrivateKeyFile)
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c, nil
}

// dialUpstream connects to addr, with TLS when the virtual cluster asks for it, retrying
// with exponential backoff within the retry budget. A broker's address (broker) that refuses the
// dial is not retried: nothing listens there, the broker is down, and the client finds its
// partitions' new leaders with a metadata refresh once it is told (BROKER_NOT_AVAILABLE), as it
// would on a refused dial of its own. Retrying held the client's connection for the whole budget
// (30 s by default), every partition the broker led stalled as long. The bootstrap is retried:
// it may be a Service between two of its pods.
func (s *Server) dialUpstream(ctx context.Context, r *vcRoute, addr string, broker bool, lim config.Limits) (net.Conn, error) {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 50 * time.Millisecond
	b.MaxInterval = 2 * time.Second
	b.MaxElapsedTime = lim.UpstreamRetryBudget.Duration
	op := func() (net.Conn, error) {
		dial := s.opts.Dial
		if dial == nil {
			d := net.Dialer{Timeout: lim.UpstreamDialTimeout.Duration, KeepAliveConfig: keepAlive}
			dial = d.DialContext
		}
		c, err := dial(ctx, "tcp", addr)
		if err != nil {
			if broker && errors.Is(err, syscall.ECONNREFUSED) {
				return nil, backoff.Permanent(err)
			}
			return nil, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		if r.upstreamTLS == nil {
			return c, nil
		}
		cfg := r.upstreamTLS.Clone()
		if cfg.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			// Targets are written fully qualified ("kafka.ns.svc.cluster.local."): the dot
			// belongs to DNS, not to the name sent as SNI and verified in the certificate.
			cfg.ServerName = strings.TrimSuffix(host, ".")
		}
		tc := tls.Client(c, cfg)
		hctx, cancel := context.WithTimeout(ctx, lim.UpstreamDialTimeout.Duration)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			c.Close()
			var verr *tls.CertificateVerificationError
			if errors.As(err, &verr) {
				// A certificate the trust anchors reject will not get better by retrying now.
				return nil, backoff.Permanent(err)
			}
			return nil, err
		}
		return tc, nil
	}
	return backoff.RetryWithData(op, backoff.WithContext(b, ctx))
}

// brokerAddress returns the upstream address of node id, learning it with the proxy's own
// Metadata request to the target bootstrap when it is not known yet (after a restart, or
// on another replica than the one that relayed the client's metadata).
func (s *Server) brokerAddress(ctx context.Context, r *vcRoute, id int32, lim config.Limits) (string, error) {
	if len(r.cfg.UpstreamBrokers) > 0 {
		// Configured addresses are the whole truth: no discovery, so a SASL-only bootstrap
		// never sees an unauthenticated request from the proxy.
		if a, ok := r.cfg.UpstreamBroker(id); ok {
			return a, nil
		}
		return "", fmt.Errorf("broker %d is not one of the %d brokers configured for %s", id, len(r.cfg.UpstreamBrokers), r.cfg.Name)
	}
	if a, ok := r.state.get(id); ok {
		return a, nil
	}
	if r.state.cachedUnknown(id, time.Now()) {
		return "", fmt.Errorf("broker %d unknown: not in the metadata of %s, or its discovery failed, less than %s ago", id, r.cfg.TargetBootstrap, negativeTTL)
	}
	if err := r.state.discoverOnce(ctx, func() error { return s.discover(ctx, r, lim) }); err != nil {
		hint := "the discovery credential was refused, or the bootstrap is down"
		if r.cfg.Discovery == nil {
			hint = "a bootstrap that requires SASL refuses it: give the KafkaRoute rule a discoveryCredential"
		}
		return "", fmt.Errorf("broker %d unknown, and the proxy's own Metadata request to %s failed (%s): %w", id, r.cfg.TargetBootstrap, hint, err)
	}
	if a, ok := r.state.get(id); ok {
		return a, nil
	}
	r.state.markUnknown(id, time.Now())
	return "", fmt.Errorf("broker %d is not in the metadata of %s", id, r.cfg.TargetBootstrap)
}

func (s *Server) discover(ctx context.Context, r *vcRoute, lim config.Limits) error {
	ctx, cancel := context.WithTimeout(ctx, lim.UpstreamRetryBudget.Duration+lim.UpstreamDialTimeout.Duration)
	defer cancel()
	c, err := s.dialUpstream(ctx, r, r.cfg.TargetBootstrap, false, lim)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	br := bufio.NewReader(c)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kafkalink-proxy"))
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(0)
	avResp := kmsg.NewPtrApiVersionsResponse()
	if err := roundTrip(c, br, f, av, avResp, 1, lim.MaxFrameBytes); err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	version := int16(-1)
	for _, k := range avResp.ApiKeys {
		if k.ApiKey == kmsg.Metadata.Int16() {
			version = min(k.MaxVersion, kafka.MaxVersion(kmsg.Metadata.Int16()))
			if version < k.MinVersion {
				version = -1
			}
		}
	}
	if version < 0 {
		return errors.New("the broker offers no Metadata version the proxy speaks")
	}
	corr := int32(2)
	if d := r.cfg.Discovery; d != nil {
		if corr, err = authenticate(ctx, c, br, f, d, corr, lim.MaxFrameBytes); err != nil {
			return fmt.Errorf("SASL %s as the discovery credential: %w", d.Mechanism, err)
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(version)
	md.Topics = []kmsg.MetadataRequestTopic{} // no topics: brokers only
	mdResp := kmsg.NewPtrMetadataResponse()
	if err := roundTrip(c, br, f, md, mdResp, corr, lim.MaxFrameBytes); err != nil {
		return fmt.Errorf("the Metadata request (v%d): %w", version, err)
	}
	for _, b := range mdResp.Brokers {
		r.state.learn(b.NodeID, b.Host, b.Port)
	}
	return nil
}

func roundTrip(c net.Conn, br *bufio.Reader, f *kmsg.RequestFormatter, req kmsg.Request, resp kmsg.Response, corr int32, maxFrame int32) error {
	if _, err := c.Write(f.AppendRequest(nil, req, corr)); err != nil {
		return err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:]))
	if size < 4 || size > maxFrame {
		return fmt.Errorf("response size %d", size)
	}
	if got := int32(binary.BigEndian.Uint32(hdr[4:])); got != corr {
		return fmt.Errorf("correlation id %d, expected %d", got, corr)
	}
	body := make([]byte, size-4)
	if _, err := io.ReadFull(br, body); err != nil {
		return err
	}
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		_, n := binary.Uvarint(body) // header tags: the proxy sends none and expects none
		if n <= 0 || len(body) < n {
			return errors.New("bad response header")
		}
		body = body[n:]
	}
	return kafka.DecodeBounded(body, resp.ReadFrom)
}
