package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
)

// The relay is the ceiling for any proxy on this machine: it accepts on loopback and copies
// bytes both ways to one broker with io.Copy (splice between TCP sockets), understanding
// nothing. With a key pair it terminates TLS first, as the proxy's TLS listener does. It runs
// as a process of its own (this binary, re-run with the relayCommand argument), like the
// proxy, so that the CPU each uses per MiB is its own.

// relayCommand is the first argument that makes this binary a relay.
const relayCommand = "relay"

// relayMain serves one listener per target (args: certFile keyFile target..., "-" for no
// TLS), prints their addresses on one line in the targets' order, and relays until stdin
// closes: the benchmark ends, and so does the relay.
func relayMain(args []string) error {
	if len(args) < 3 {
		return fmt.Errorf("usage: %s certFile|- keyFile|- target [target]", relayCommand)
	}
	var tlsConfig *tls.Config
	if args[0] != "-" {
		pair, err := tls.LoadX509KeyPair(args[0], args[1])
		if err != nil {
			return err
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{pair}}
	}
	var addrs []string
	for _, target := range args[2:] {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		if tlsConfig != nil {
			ln = tls.NewListener(ln, tlsConfig)
		}
		go accept(ln, target)
		addrs = append(addrs, ln.Addr().String())
	}
	fmt.Println(strings.Join(addrs, " "))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

func accept(ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go pipe(c, target)
	}
}

func pipe(c net.Conn, target string) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done // either side closing ends both
}

// relay is a running relay process: its listener for each broker address.
type relay struct {
	proc  *exec.Cmd
	stdin io.Closer
	addrs map[string]string // broker address -> relay listener
}

// startRelay starts a relay process for targets; certFile and keyFile are empty for plain.
func startRelay(targets []string, certFile, keyFile string) (*relay, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if certFile == "" {
		certFile, keyFile = "-", "-"
	}
	cmd := exec.Command(self, append([]string{relayCommand, certFile, keyFile}, targets...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &relay{proc: cmd, stdin: stdin, addrs: map[string]string{}}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	listeners := strings.Fields(line)
	if err == nil && len(listeners) != len(targets) {
		err = fmt.Errorf("it printed %q", line)
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("the relay did not start: %w", err)
	}
	for i, t := range targets {
		r.addrs[t] = listeners[i]
	}
	return r, nil
}

// Close ends the relay process.
func (r *relay) Close() {
	_ = r.stdin.Close()
	_ = r.proc.Wait()
}

func (r *relay) pid() int { return r.proc.Process.Pid }

// dialer sends each broker connection of a client to that broker's relay listener: a relay
// that does not rewrite metadata needs the client to come back through it by itself.
func (r *relay) dialer(roots *x509.CertPool) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		to, ok := r.addrs[addr]
		if !ok {
			return nil, fmt.Errorf("no relay for %s", addr)
		}
		if roots != nil {
			d := &tls.Dialer{Config: &tls.Config{ServerName: "127.0.0.1", RootCAs: roots}}
			return d.DialContext(ctx, network, to)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, to)
	}
}
