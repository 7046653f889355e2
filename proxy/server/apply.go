package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// loading is one configuration being applied: what apply's steps build, in order, before commit
// swaps it in.
type loading struct {
	cfg   *config.Config
	snaps map[string]*snapshot        // by listener; a listener that failed to load has none
	pairs map[string]*tls.Certificate // by pairKey, the last good key material next time
	vcs   map[string]*vcState         // the served virtual clusters
	upTLS map[string]*tls.Config      // by virtual cluster
	fresh map[string]*listenerRT      // listeners bound anew
	plan  *filter.Plan                // the virtual clusters' filter chains
	chain map[string]*filter.Chain    // the served virtual clusters' chains (nil: no filters)
}

// apply loads cfg (every file it names), binds new listeners, swaps the snapshots in, and closes
// what was removed. A listener, key pair or virtual cluster whose files or socket fail is left
// out, or keeps its last good key material, and never stops the rest; removals always apply.
func (s *Server) apply(ctx context.Context, cfg *config.Config) error {
	logger := klog.FromContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Metrics.LoadErrors.Reset()
	next := &loading{cfg: cfg, snaps: map[string]*snapshot{}, pairs: map[string]*tls.Certificate{}, vcs: map[string]*vcState{},
		upTLS: map[string]*tls.Config{}, fresh: map[string]*listenerRT{}, plan: s.chains.Plan(), chain: map[string]*filter.Chain{}}
	for _, l := range cfg.Listeners {
		if snap := s.loadListener(logger, l, next); snap != nil {
			next.snaps[l.Name] = snap
		}
	}
	for _, vc := range cfg.VirtualClusters {
		s.loadVirtualCluster(ctx, vc, next)
	}
	for _, snap := range next.snaps {
		snap.index()
	}
	s.bindListeners(ctx, next)
	s.commit(ctx, next)
	return nil
}

// loadListener builds a listener's snapshot without its routes: its key pairs, client CAs and
// TLS parameters. A key pair that fails keeps its last good version or is left out; a listener
// whose client CAs or options fail keeps its last good ones, or is left out (nil).
func (s *Server) loadListener(logger klog.Logger, l config.Listener, next *loading) *snapshot {
	snap := &snapshot{listener: l}
	if !l.TLS() {
		return snap
	}
	snap.certs = s.loadKeyPairs(logger, l, next)
	var err error
	if snap.clientCAs, err = loadPool(l.ClientCAFiles); err != nil {
		err = fmt.Errorf("clientCAFiles: %w", err)
	} else if snap.params, err = resolveTLSOptions(l.Options); err != nil {
		err = fmt.Errorf("options: %w", err)
	}
	if err == nil {
		snap.ticketSeed = s.ticketSeed(l)
		return snap
	}
	// Serving without the client CAs would let anyone in: keep the last good ones, or leave the listener out.
	prev := s.lastListener[l.Name]
	s.loadErr(logger, "listener", l.Name, err, prev != nil)
	if prev == nil {
		return nil
	}
	snap.clientCAs, snap.params, snap.ticketSeed = prev.clientCAs, prev.params, prev.ticketSeed
	return snap
}

// loadKeyPairs loads a TLS listener's key pairs; one that fails keeps its last good version, or
// is left out.
func (s *Server) loadKeyPairs(logger klog.Logger, l config.Listener, next *loading) []*tls.Certificate {
	var certs []*tls.Certificate
	for i, kp := range l.KeyPairs {
		c, err := loadKeyPair(kp)
		if err != nil {
			c = s.lastPairs[pairKey(kp)]
			s.loadErr(logger, "certificate", fmt.Sprintf("%s/keyPairs[%d]", l.Name, i), fmt.Errorf("%s: %w", kp.CertificateFile, err), c != nil)
			if c == nil {
				continue
			}
		}
		next.pairs[pairKey(kp)] = c
		certs = append(certs, c)
	}
	return certs
}

// loadVirtualCluster adds a virtual cluster's route to its listener's snapshot: with its filter
// chain (kept from the last configuration when unchanged) and upstream TLS. A virtual cluster
// whose filters cannot start, whose listener failed, or whose upstream TLS fails without a last
// good version is left out.
func (s *Server) loadVirtualCluster(ctx context.Context, vc config.VirtualCluster, next *loading) {
	logger := klog.FromContext(ctx)
	chain, err := next.plan.Chain(ctx, vc.Name, vc.Filters, filter.LimitsFrom(next.cfg.Limits, s.filterBudget(next.cfg.Limits.FilterMemoryBytes)))
	if err != nil {
		// Fail closed: traffic the user asked to filter is never served unfiltered.
		logger.Error(err, "Refusing to serve virtual cluster: a filter cannot start", "virtualCluster", vc.Name)
		s.Metrics.Refused.WithLabelValues(vc.Name).Set(1)
		return
	}
	s.Metrics.Refused.DeleteLabelValues(vc.Name)
	snap := next.snaps[vc.Listener]
	if snap == nil {
		s.loadErr(logger, "virtual_cluster", vc.Name, fmt.Errorf("its listener %s failed to load", vc.Listener), false)
		return
	}
	names, err := brokerNames(&vc)
	if err != nil {
		// Fail closed: brokers named by their node ids would reveal what the mapping hides.
		s.loadErr(logger, "virtual_cluster", vc.Name, fmt.Errorf("brokerIdentity: %w", err), false)
		return
	}
	up, err := upstreamTLS(vc.UpstreamTLS)
	if err != nil {
		up = s.lastUpTLS[vc.Name]
		if vc.UpstreamTLS == nil || up == nil || s.vcs[vc.Name] == nil || s.vcs[vc.Name].target != vc.TargetBootstrap {
			up = nil
		}
		s.loadErr(logger, "virtual_cluster", vc.Name, fmt.Errorf("upstreamTLS: %w", err), up != nil)
		if up == nil {
			return
		}
	}
	next.upTLS[vc.Name] = up
	st := s.vcs[vc.Name]
	if st == nil || st.target != vc.TargetBootstrap {
		st = &vcState{name: vc.Name, target: vc.TargetBootstrap, brokers: map[int32]string{}}
	}
	next.vcs[vc.Name] = st
	next.chain[vc.Name] = chain
	snap.routes = append(snap.routes, &vcRoute{cfg: vc, names: names, listener: *next.cfg.Listener(vc.Listener), state: st, upstreamTLS: up, filters: chain})
}

// brokerNames names a virtual cluster's brokers: by node id, or by the hash mapping with the key
// its key file holds.
func brokerNames(vc *config.VirtualCluster) (*config.BrokerNames, error) {
	if vc.BrokerIdentity == nil {
		return config.NewBrokerNames(vc, nil)
	}
	key, err := os.ReadFile(vc.BrokerIdentity.KeyFile)
	if err != nil {
		return nil, err
	}
	return config.NewBrokerNames(vc, key)
}

// bindListeners binds new or changed listeners; one that cannot bind is left out.
func (s *Server) bindListeners(ctx context.Context, next *loading) {
	for _, l := range next.cfg.Listeners {
		if next.snaps[l.Name] == nil {
			continue
		}
		if old := s.listeners[l.Name]; old != nil && sameBinding(old.cfg, l) {
			continue
		}
		rt := &listenerRT{cfg: l}
		if err := rt.bind(s.listeners[l.Name], s.opts.Listen); err != nil {
			s.loadErr(klog.FromContext(ctx), "listener", l.Name, err, false)
			delete(next.snaps, l.Name)
			continue
		}
		next.fresh[l.Name] = rt
	}
}

// commit swaps the loaded configuration in: closes removed listeners and starts serving fresh
// ones, stores the snapshots, ends the connections of removed or changed virtual clusters, and
// closes the filter chains nothing uses any more.
func (s *Server) commit(ctx context.Context, next *loading) {
	logger := klog.FromContext(ctx)
	for name, old := range s.listeners {
		if next.snaps[name] == nil || next.fresh[name] != nil {
			old.close()
			delete(s.listeners, name)
		}
	}
	for name, rt := range next.fresh {
		s.listeners[name] = rt
		s.startServing(ctx, rt)
	}
	// rt.cfg is left alone: serve goroutines read it, and sameBinding kept what matters for binding.
	for name, rt := range s.listeners {
		rt.snap.Store(next.snaps[name])
	}
	retired := next.plan.Commit()
	s.endStaleConnections(next)
	if err := filter.CloseAll(retired); err != nil {
		logger.Error(err, "Closing the filters of a replaced or removed virtual cluster")
	}
	logger.V(2).Info("Filter chains", "retired", len(retired), "served", len(next.chain))
	for name := range s.vcs {
		if next.vcs[name] == nil {
			s.Metrics.forgetVirtualCluster(name)
		}
	}
	if s.cfg != nil && s.cfg.Management != next.cfg.Management {
		logger.Info("Management port settings changed; they take effect at the next start", "old", s.cfg.Management, "new", next.cfg.Management)
	}
	s.vcs, s.vcChains = next.vcs, next.chain
	s.cfg = next.cfg
	s.lastPairs, s.lastListener, s.lastUpTLS = next.pairs, next.snaps, next.upTLS
	lim := next.cfg.Limits
	s.limits.Store(&lim)
}

// startServing accepts on each socket of a freshly bound listener.
func (s *Server) startServing(ctx context.Context, rt *listenerRT) {
	for i, ln := range rt.lns {
		nodeID := int32(-1)
		if !rt.cfg.TLS() && i > 0 {
			nodeID = int32(i - 1)
		}
		s.wg.Add(1)
		go s.serve(ctx, rt, ln, nodeID)
	}
}

// endStaleConnections ends the connections of removed or retargeted virtual clusters, and of
// those whose filters changed (a connection never goes on with filters the configuration no
// longer has); the others are untouched. A connection without filters drains as at shutdown:
// the request it is reading is forwarded whole and answered, no further request is read, and
// limits.drainTimeout bounds it. One whose filter chain is retired closes now: the chain is
// closed below, so no response could go through it, and the filters read each request whole
// before forwarding it, so nothing half-read has reached the broker.
func (s *Server) endStaleConnections(next *loading) {
	timeout := next.cfg.Limits.DrainTimeout.Duration
	for pc := range s.conns {
		st := next.vcs[pc.vc]
		if st != nil && st == pc.state && next.chain[pc.vc] == pc.filters {
			continue
		}
		if pc.filters != nil {
			pc.closeNow()
			continue
		}
		pc.drain()
		time.AfterFunc(timeout, pc.closeNow)
	}
}
