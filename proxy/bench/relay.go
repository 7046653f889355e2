package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"sync"
)

// relay is the ceiling for any proxy on this machine: it accepts on loopback and copies bytes
// both ways to one broker with io.Copy (splice between TCP sockets), understanding nothing.
// With a TLS configuration it terminates TLS first, as the proxy's TLS listener does.
type relay struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
}

func startRelay(target string, tlsConfig *tls.Config) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	r := &relay{ln: ln, target: target}
	r.wg.Go(r.accept)
	return r, nil
}

func (r *relay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Go(func() { r.pipe(c) })
	}
}

func (r *relay) pipe(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", r.target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done // either side closing ends both
}

// Close stops accepting; open connections end when the benchmark's clients close them.
func (r *relay) Close() error { return r.ln.Close() }

// dialer sends every broker connection of a client to the relay: a relay that does not rewrite
// metadata needs the client to come back through it by itself.
func (r *relay) dialer(roots *x509.CertPool) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		if roots != nil {
			d := &tls.Dialer{Config: &tls.Config{ServerName: "127.0.0.1", RootCAs: roots}}
			return d.DialContext(ctx, network, r.ln.Addr().String())
		}
		var d net.Dialer
		return d.DialContext(ctx, network, r.ln.Addr().String())
	}
}
