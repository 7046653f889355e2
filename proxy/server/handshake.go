package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// sniMatch is what the TLS handshake of one connection learnt: the route and node id its SNI
// names, or why it was refused (a handshake_failures reason).
type sniMatch struct {
	route  *vcRoute
	nodeID int32
	reason string
}

// handshake completes a TLS listener's handshake, routing by SNI: the route and node id, or
// false when the handshake failed (counted and logged; the connection is closed).
func (s *Server) handshake(ctx context.Context, snap *snapshot, c net.Conn, timeout time.Duration) (*tls.Conn, sniMatch, bool) {
	var m sniMatch
	tc := tls.Server(c, &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			return s.matchSNI(klog.FromContext(ctx), snap, c, hello, &m)
		},
	})
	hctx, cancel := context.WithTimeout(ctx, timeout)
	err := tc.HandshakeContext(hctx)
	cancel()
	if err == nil {
		return tc, m, true
	}
	if m.reason == "" {
		m.reason = "tls_error"
		if errors.Is(err, context.DeadlineExceeded) {
			m.reason = "timeout"
		}
		klog.FromContext(ctx).V(2).Info("TLS handshake failed", "listener", snap.listener.Name, "remote", c.RemoteAddr().String(), "err", err)
	}
	s.Metrics.HandshakeFailures.WithLabelValues(snap.listener.Name, m.reason).Inc()
	c.Close()
	return nil, m, false
}

// matchSNI finds the virtual cluster and node id of a ClientHello's SNI, and the TLS settings to
// answer it with: the listener's certificate for that name, its TLS parameters, session
// tickets and client CAs. An SNI no virtual cluster has, or no certificate covers, is refused.
func (s *Server) matchSNI(logger klog.Logger, snap *snapshot, c net.Conn, hello *tls.ClientHelloInfo, m *sniMatch) (*tls.Config, error) {
	r, id, ok := snap.route(hello.ServerName)
	if !ok {
		m.reason = "unknown_sni"
		if hello.ServerName == "" {
			m.reason = "no_sni"
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
		m.reason = "no_certificate"
		if n, ok := s.refusedLog.allow(); ok {
			logger.Info("Refused TLS handshake: no certificate of the listener covers this SNI", "listener", snap.listener.Name,
				"sni", hello.ServerName, "virtualCluster", r.cfg.Name, "suppressed", n)
		}
		return nil, fmt.Errorf("no certificate for %q", hello.ServerName)
	}
	m.route, m.nodeID = r, id
	return snap.tlsConfig(cert, time.Now()), nil
}

// tlsConfigs shares the TLS settings of a listener's connections: one tls.Config per
// certificate and session ticket period. A tls.Conn keeps its config for its life, and one
// built per handshake cost every connection about 1 KiB of heap.
type tlsConfigs struct {
	mu     sync.Mutex
	period int64
	byCert map[*tls.Certificate]*tls.Config
}

// tlsConfig is the config that answers a ClientHello with cert: the listener's TLS parameters,
// session ticket keys for now and client CAs.
func (snap *snapshot) tlsConfig(cert *tls.Certificate, now time.Time) *tls.Config {
	c := &snap.configs
	c.mu.Lock()
	defer c.mu.Unlock()
	if period := ticketPeriod(now); c.byCert == nil || period != c.period {
		c.period, c.byCert = period, map[*tls.Certificate]*tls.Config{}
	}
	if cfg, ok := c.byCert[cert]; ok {
		return cfg
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{*cert}}
	snap.params.Apply(cfg)
	cfg.SetSessionTicketKeys(sessionTicketKeys(snap.ticketSeed, now))
	if snap.clientCAs != nil {
		cfg.ClientCAs = snap.clientCAs
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	c.byCert[cert] = cfg
	return cfg
}
