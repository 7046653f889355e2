package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// PathRemap rewrites a path prefix in the loaded configuration (--remap-path FROM=TO).
type PathRemap struct{ From, To string }

// Options configure a Server.
type Options struct {
	// ConfigPath is the configuration file, re-read when it changes.
	ConfigPath string
	// Remaps are applied to every file path in the configuration, in order.
	Remaps []PathRemap
	// PollInterval is how often the configuration and key material are checked for changes.
	PollInterval time.Duration
	// BindAddress, when set, replaces the bind address of every listener and of the management
	// port (--bind-address). Test runners set 127.0.0.1 so nothing listens beyond loopback; in a
	// pod the configured address (all interfaces) is right.
	BindAddress string
	// Listen binds the Kafka listeners; nil means net.Listen. Tests use it to bind inside
	// another network namespace.
	Listen func(network, address string) (net.Listener, error)
	// Dial opens upstream TCP connections; nil means a net.Dialer with the upstream dial timeout
	// and keepalive. Tests use it to resolve names without DNS.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Profiling serves Go's /debug/pprof/ profiles on the management port (--profiling), for
	// measuring the proxy under load; off by default, as they show the proxy's internals.
	Profiling bool
}

// Server is a running proxy.
type Server struct {
	opts    Options
	Metrics *Metrics
	reload  *reloadState

	mu        sync.Mutex
	cfg       *config.Config
	limits    atomic.Pointer[config.Limits]
	listeners map[string]*listenerRT
	vcs       map[string]*vcState
	conns     map[*proxyConn]struct{}
	// Last good key material, reused while a later load of the same files fails.
	lastPairs    map[string]*tls.Certificate
	lastListener map[string]*snapshot
	lastUpTLS    map[string]*tls.Config
	applied      [32]byte
	lastBad      [32]byte
	// parsed is the configuration last parsed, from bytes whose SHA-256 is parsedSum; only the
	// polling goroutine (and Run before it) uses them.
	parsed    *config.Config
	parsedSum [32]byte
	mgmt      *http.Server
	mgmtAddr  net.Addr

	ticketSecret [32]byte

	// chains keeps the virtual clusters' filter chains across reloads; vcChains are those of the
	// served virtual clusters (nil: no filters), what a new connection must still find.
	chains   filter.Chains
	vcChains map[string]*filter.Chain

	// budget is the filters' process-wide memory budget, of budgetSize bytes (filterBudget).
	budgetMu   sync.Mutex
	budget     *filter.Budget
	budgetSize int64

	connCount  atomic.Int32
	sources    sourceCounts
	handshakes tokenBucket
	refusedLog logLimiter
	ready      atomic.Bool
	draining   atomic.Bool
	wg         sync.WaitGroup
}

// listenerRT is a bound listener and its current routing snapshot.
type listenerRT struct {
	cfg  config.Listener
	lns  []net.Listener
	snap atomic.Pointer[snapshot]
}

// snapshot is an immutable view of one listener's routing, swapped whole on reload.
type snapshot struct {
	listener  config.Listener
	certs     []*tls.Certificate
	clientCAs *x509.CertPool
	params    config.TLSParams
	routes    []*vcRoute
	// byBootstrap and byPattern index routes by lower-case bootstrap host and broker pattern.
	byBootstrap, byPattern map[string]*vcRoute
	// ticketSeed keys this listener's session tickets (see sessionTicketKeys).
	ticketSeed [32]byte
	// configs are the TLS settings handshakes answer with, shared by connections.
	configs tlsConfigs
}

// vcRoute is one served virtual cluster on a listener.
type vcRoute struct {
	cfg config.VirtualCluster
	// names names the brokers in the addresses clients are given, and reads them back from SNI.
	names       *config.BrokerNames
	listener    config.Listener
	state       *vcState
	upstreamTLS *tls.Config
	// filters is the virtual cluster's filter chain; nil without filters, so its connections
	// keep the byte-copying path.
	filters *filter.Chain
}

// brokerNames are the route's broker names; by node id for a route built without them.
func (r *vcRoute) brokerNames() *config.BrokerNames {
	if r.names == nil {
		n, _ := config.NewBrokerNames(&r.cfg, nil) // without a key it cannot fail
		return n
	}
	return r.names
}

// route finds the virtual cluster and node id (-1 for the bootstrap) of an SNI host, in time
// that does not grow with the virtual clusters (a gateway may have a thousand routes, and every
// handshake asks): by bootstrap host, then by broker pattern, trying each run of digits in the
// host as the node id. Config validation keeps the hosts of a listener's virtual clusters apart.
func (s *snapshot) route(host string) (*vcRoute, int32, bool) {
	host = strings.TrimSuffix(host, ".")
	if len(host) > maxHostLength {
		// No configured host is longer; a client's SNI may be (up to 64 KiB), and each run of
		// digits below would build a candidate of the host's length.
		return nil, 0, false
	}
	host = strings.ToLower(host)
	if r, ok := s.byBootstrap[host]; ok {
		return r, -1, true
	}
	placeholder := strings.ToLower(config.NodeIDPlaceholder)
	for i := 0; i < len(host); i++ {
		if !isDigit(host[i]) || (i > 0 && isDigit(host[i-1])) {
			continue
		}
		j := i
		for j < len(host) && isDigit(host[j]) {
			j++
		}
		if r, ok := s.byPattern[host[:i]+placeholder+host[j:]]; ok {
			if id, ok := r.brokerNames().Match(host); ok {
				return r, id, true
			}
		}
	}
	// A hash mapping's token ends the first label (config.HashedPatternKey).
	if key, ok := config.HashedPatternKey(host); ok {
		if r, ok := s.byPattern[key]; ok && r.brokerNames().Hashed() {
			if id, ok := r.names.Match(host); ok {
				return r, id, true
			}
		}
	}
	return nil, 0, false
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// maxHostLength is the longest DNS name; config validation holds every virtual cluster's hosts to it.
const maxHostLength = 253

// index fills the lookups route uses, once a snapshot's routes are complete.
func (s *snapshot) index() {
	s.byBootstrap = make(map[string]*vcRoute, len(s.routes))
	s.byPattern = make(map[string]*vcRoute, len(s.routes))
	for _, r := range s.routes {
		s.byBootstrap[strings.ToLower(r.cfg.BootstrapHost)] = r
		s.byPattern[strings.ToLower(r.cfg.BrokerPattern)] = r
	}
}

// patterns lists the hosts a listener answers, for the unknown-SNI log line.
func (s *snapshot) patterns() []string {
	var out []string
	for _, r := range s.routes {
		out = append(out, r.cfg.BootstrapHost, r.cfg.BrokerPattern)
	}
	return out
}

// New returns a server for the options; Run starts it.
func New(opts Options) *Server {
	if opts.PollInterval == 0 {
		opts.PollInterval = time.Second
	}
	if opts.Listen == nil {
		opts.Listen = net.Listen
	}
	s := &Server{opts: opts, Metrics: NewMetrics(), listeners: map[string]*listenerRT{}, vcs: map[string]*vcState{}, conns: map[*proxyConn]struct{}{}}
	s.reload = newReloadState(s.Metrics.Registry)
	if _, err := rand.Read(s.ticketSecret[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return s
}

// Ready reports whether the configuration is loaded and every listener is bound.
func (s *Server) Ready() bool { return s.ready.Load() }

// ManagementAddr returns the bound management address once Run has started it.
func (s *Server) ManagementAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mgmtAddr
}

// readConfig reads the configuration file, applies the path remaps, and fingerprints it
// together with the content of every file it refers to.
func (s *Server) readConfig() (*config.Config, [32]byte, error) {
	raw, err := os.ReadFile(s.opts.ConfigPath)
	if err != nil {
		return nil, [32]byte{}, err
	}
	h := sha256.New()
	h.Write(raw)
	cfg, err := s.parseConfig(raw)
	if err != nil {
		var fp [32]byte
		copy(fp[:], h.Sum(nil))
		return nil, fp, fmt.Errorf("%s: %w", s.opts.ConfigPath, err)
	}
	for _, f := range cfg.Files() {
		b, err := os.ReadFile(f)
		h.Write([]byte(f))
		h.Write([]byte{0})
		if err == nil {
			h.Write(b)
		}
		h.Write([]byte{0})
	}
	var fp [32]byte
	copy(fp[:], h.Sum(nil))
	return cfg, fp, nil
}

// parseConfig parses and validates the configuration file's bytes, with this process's path
// remaps and bind address. Bytes it parsed last time give the same *config.Config (which apply
// only reads): the file is polled every second, and validating a gateway of 1,000 virtual
// clusters takes milliseconds (every pair's hosts are compared), while the key files it names
// change far more often than it does.
func (s *Server) parseConfig(raw []byte) (*config.Config, error) {
	sum := sha256.Sum256(raw)
	if s.parsed != nil && sum == s.parsedSum {
		return s.parsed, nil
	}
	cfg, err := config.Parse(raw)
	if err != nil {
		return nil, err
	}
	for _, r := range s.opts.Remaps {
		cfg.RemapPaths(r.From, r.To)
	}
	if s.opts.BindAddress != "" {
		for i := range cfg.Listeners {
			cfg.Listeners[i].BindAddress = s.opts.BindAddress
		}
		cfg.Management.BindAddress = s.opts.BindAddress
	}
	s.parsed, s.parsedSum = cfg, sum
	return cfg, nil
}

// Run loads the configuration, binds the listeners and the management port, and serves
// until ctx ends; then it drains connections within the configured drain timeout.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	cfg, fp, err := s.readConfig()
	if err != nil {
		return err
	}
	if err := s.apply(ctx, cfg); err != nil {
		return err
	}
	s.applied = fp
	if err := s.startManagement(ctx, cfg.Management); err != nil {
		s.closeListeners()
		return err
	}
	s.ready.Store(true)
	logger.Info("Proxy ready", "listeners", len(cfg.Listeners), "virtualClusters", len(cfg.VirtualClusters))

	t := time.NewTicker(s.opts.PollInterval)
	defer t.Stop()
	linger := time.NewTicker(lingerPeriod)
	defer linger.Stop()
	for {
		select {
		case <-ctx.Done():
			return s.shutdown(logger)
		case <-t.C:
			s.reloadIfChanged(ctx)
		case <-linger.C:
			s.endIdleResponses()
		}
	}
}

// endIdleResponses ends the response side's goroutine of every connection idle for a
// lingerPeriod (connRelay.endIfIdle): an idle connection holds one goroutine.
func (s *Server) endIdleResponses() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pc := range s.conns {
		if r := pc.relay.Load(); r != nil {
			r.endIfIdle()
		}
	}
}

// reloadIfChanged applies the configuration file when it (or a file it names) changed. A file
// this proxy cannot read (missing, invalid, or of a config version outside the skew policy in
// package config) is logged once per change and reported by s.reload; the last good
// configuration keeps serving and the proxy does not exit.
func (s *Server) reloadIfChanged(ctx context.Context) {
	logger := klog.FromContext(ctx)
	cfg, fp, err := s.readConfig()
	if err != nil && fp == ([32]byte{}) {
		// An unreadable file has no content to fingerprint: its error stands in, so a missing
		// file is reported once, not never.
		fp = sha256.Sum256([]byte(err.Error()))
	}
	// The files filters read are watched too (s.chains): a rotated Vault token rebuilds the
	// chains that read it.
	if fp == s.applied && !s.chains.Changed() {
		if s.reload.clear() {
			s.lastBad = [32]byte{}
			logger.Info("Configuration file is back to the one served")
		}
		return
	}
	if err != nil && fp == s.lastBad {
		return
	}
	if err == nil {
		err = s.apply(ctx, cfg)
	}
	if err != nil {
		s.lastBad = fp
		s.reload.refuse(err)
		s.Metrics.Reloads.WithLabelValues("error").Inc()
		logger.Error(err, "Reload failed; still serving the previous configuration", "reason", rejectedReason(err))
		return
	}
	s.applied = fp
	s.reload.clear()
	s.Metrics.Reloads.WithLabelValues("success").Inc()
	logger.Info("Reloaded configuration and key material", "virtualClusters", len(cfg.VirtualClusters))
}

// ticketSeed derives a listener's session ticket seed from the process secret, the listener
// name and its client CAs: tickets survive reloads, but one listener's tickets never resume a
// session on another listener, or after its client CAs change (a resumed session skips the
// client certificate check).
func (s *Server) ticketSeed(l config.Listener) [32]byte {
	h := sha256.New()
	h.Write(s.ticketSecret[:])
	h.Write([]byte(l.Name))
	for _, f := range l.ClientCAFiles {
		b, _ := os.ReadFile(f)
		h.Write([]byte{0})
		h.Write(b)
	}
	var seed [32]byte
	copy(seed[:], h.Sum(nil))
	return seed
}

// ticketRotation is how long one session ticket key encrypts new tickets; tickets stay valid for
// one more period.
const ticketRotation = 24 * time.Hour

// sessionTicketKeys returns the ticket keys of a listener for now: the current period's key
// first (it encrypts), the previous period's second. Every connection shares them, so sessions
// resume; a new process starts with a new secret.
func sessionTicketKeys(seed [32]byte, now time.Time) [][32]byte {
	period := ticketPeriod(now)
	keys := make([][32]byte, 2)
	for i := range keys {
		h := sha256.New()
		h.Write(seed[:])
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(period-int64(i)))
		h.Write(b[:])
		copy(keys[i][:], h.Sum(nil))
	}
	return keys
}

// ticketPeriod numbers the session ticket period of now.
func ticketPeriod(now time.Time) int64 {
	return now.Unix() / int64(ticketRotation/time.Second)
}

// loadErr records a part of the configuration that failed to load and is left out (or kept at
// its last good state): a log line and kafkalink_proxy_config_load_errors{kind,name}=1.
func (s *Server) loadErr(logger klog.Logger, kind, name string, err error, kept bool) {
	s.Metrics.LoadErrors.WithLabelValues(kind, name).Set(1)
	if kept {
		logger.Error(err, "Failed to load; still serving the last good version", "kind", kind, "name", name)
		return
	}
	logger.Error(err, "Failed to load; left out, the rest is served", "kind", kind, "name", name)
}

func sameBinding(a, b config.Listener) bool {
	return a.Port == b.Port && a.BindAddress == b.BindAddress && a.TLS() == b.TLS() &&
		(a.TLS() || *a.PortPerBroker == *b.PortPerBroker)
}

// bind opens the sockets of a listener: one for TLS, bootstrap plus one per node id for
// plain. A listener rebound on the same port is closed first.
func (rt *listenerRT) bind(old *listenerRT, listen func(network, address string) (net.Listener, error)) error {
	if old != nil {
		old.close()
	}
	ports := []int32{rt.cfg.Port}
	if !rt.cfg.TLS() {
		for n := int32(0); n <= rt.cfg.PortPerBroker.MaxNodeID; n++ {
			ports = append(ports, rt.cfg.PortPerBroker.FirstBrokerPort+n)
		}
	}
	for _, p := range ports {
		ln, err := listen("tcp", net.JoinHostPort(rt.cfg.BindAddress, strconv.Itoa(int(p))))
		if err != nil {
			rt.close()
			return err
		}
		rt.lns = append(rt.lns, ln)
	}
	return nil
}

func (rt *listenerRT) close() {
	for _, ln := range rt.lns {
		ln.Close()
	}
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rt := range s.listeners {
		rt.close()
	}
}

func (s *Server) serve(ctx context.Context, rt *listenerRT, ln net.Listener, nodeID int32) {
	defer s.wg.Done()
	logger := klog.FromContext(ctx)
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			logger.Error(err, "Accept failed", "listener", rt.cfg.Name)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		src := sourceOf(c.RemoteAddr())
		if reason := s.admit(rt, src); reason != "" {
			s.Metrics.Refusals.WithLabelValues(reason).Inc()
			if reason == refusedMaxConnections {
				s.Metrics.ConnectionLimit.Inc()
			}
			c.Close()
			continue
		}
		go s.serveConn(ctx, rt, c, src, nodeID)
	}
}

// serveConn is one accepted connection's goroutine: it routes the connection (handle), starts
// its relay on a goroutine of its own, and ends. The relay's goroutine is the one an idle
// connection keeps, and it starts with a small stack, where this one's grew in the TLS
// handshake (the runtime halves a stack only while three quarters of it are unused). When the
// connection ends, or either goroutine panics, its place in the limits is given back.
func (s *Server) serveConn(ctx context.Context, rt *listenerRT, c net.Conn, src netip.Addr, nodeID int32) {
	var r *connRelay
	s.recovering(ctx, c, func() { r = s.handle(ctx, rt, c, nodeID) })
	if r == nil {
		s.connEnded(src)
		return
	}
	go r.run(src)
}

// recovering runs f; a panic closes c, and only c.
func (s *Server) recovering(ctx context.Context, c net.Conn, f func()) {
	defer func() {
		if r := recover(); r != nil {
			s.recovered(klog.FromContext(ctx), r, func() { c.Close() })
		}
	}()
	f()
}

// connEnded gives an ended connection's place in the limits back.
func (s *Server) connEnded(src netip.Addr) {
	s.sources.release(src)
	s.connCount.Add(-1)
}

// admit counts a new connection from src, or returns why it is refused: the proxy drains, or
// limits.maxConnections, limits.maxConnectionsPerSource or (on TLS listeners)
// limits.handshakesPerSecond is reached. Refusing costs no goroutine and no handshake.
func (s *Server) admit(rt *listenerRT, src netip.Addr) string {
	lim := s.limits.Load()
	if s.draining.Load() {
		return refusedDraining
	}
	if s.connCount.Add(1) > lim.MaxConnections {
		s.connCount.Add(-1)
		return refusedMaxConnections
	}
	if !s.sources.acquire(src, lim.MaxConnectionsPerSource) {
		s.connCount.Add(-1)
		return refusedPerSource
	}
	if rt.cfg.TLS() && !s.handshakes.allow(time.Now(), lim.HandshakesPerSecond) {
		s.sources.release(src)
		s.connCount.Add(-1)
		return refusedHandshakeRate
	}
	return ""
}

func (s *Server) startManagement(ctx context.Context, m config.Management) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		// A refused configuration file does not make the proxy unready: it serves its last good
		// configuration, and failing every replica's readiness over one bad ConfigMap would take
		// the whole gateway out of service. The body says why the file is not applied.
		if d := s.reload.detail(); d != "" {
			_, _ = w.Write([]byte("ok\n" + d + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	if m.Metrics {
		mux.Handle("/metrics", promhttp.HandlerFor(s.Metrics.Registry, promhttp.HandlerOpts{}))
	}
	if s.opts.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(m.BindAddress, strconv.Itoa(int(m.Port))))
	if err != nil {
		return fmt.Errorf("management port: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.mgmt, s.mgmtAddr = srv, ln.Addr()
	s.mu.Unlock()
	go serveManagement(ctx, srv, ln)
	return nil
}

// serveManagement is the management port's goroutine.
func serveManagement(ctx context.Context, srv *http.Server, ln net.Listener) {
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		klog.FromContext(ctx).Error(err, "Management server stopped")
	}
}

// shutdown stops accepting, lets every connection finish the requests it has in flight,
// and force-closes whatever remains after the drain timeout.
func (s *Server) shutdown(logger klog.Logger) error {
	s.ready.Store(false)
	s.draining.Store(true)
	s.closeListeners()
	s.mu.Lock()
	conns := make([]*proxyConn, 0, len(s.conns))
	for pc := range s.conns {
		conns = append(conns, pc)
	}
	timeout := s.cfg.Limits.DrainTimeout.Duration
	s.mu.Unlock()
	logger.Info("Draining connections", "connections", len(conns), "timeout", timeout)
	for _, pc := range conns {
		pc.drain()
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.mu.Lock()
	left := len(s.conns)
	for pc := range s.conns {
		pc.closeNow()
	}
	s.mu.Unlock()
	if left > 0 {
		logger.Info("Drain timeout reached; closed remaining connections", "connections", left)
	}
	s.wg.Wait()
	if s.mgmt != nil {
		_ = s.mgmt.Close()
	}
	return nil
}

// describe is a sorted, comma-separated list of hosts for logs.
func describe(hosts []string) string {
	hosts = slices.Clone(hosts)
	slices.Sort(hosts)
	return strings.Join(hosts, ", ")
}
