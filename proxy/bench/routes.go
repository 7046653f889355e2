package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// routesScale measures the proxy with many virtual clusters on one TLS listener, as a gateway
// with n routes configures it: how long the proxy takes to serve a new configuration of n
// virtual clusters once the file is written (from one), and TLS handshakes per second with one
// virtual cluster and with n (every handshake picks its virtual cluster by SNI).
func routesScale(n int, dir, target, certFile, keyFile string, pool *x509.CertPool) error {
	port, mgmt := freePorts(2)[0], freePorts(2)[1]
	cfgPath := filepath.Join(dir, "routes.yaml")
	if err := os.WriteFile(cfgPath, routesConfig(1, port, mgmt, certFile, keyFile, target), 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	defer cancel()
	// Looking for a new configuration every 10 ms (the proxy's default is 1 s), so the reload
	// figure is the proxy's own work, not the wait for its next look.
	done, err := serveProxy(ctx, cfgPath, 10*time.Millisecond)
	if err != nil {
		return err
	}
	fmt.Printf("\n%d virtual clusters on one TLS listener (one gateway with %d routes):\n", n, n)
	oneVC := handshakeRate(port, pool, 1, 3*time.Second)

	start := time.Now()
	cfg := routesConfig(n, port, mgmt, certFile, keyFile, target)
	if err := os.WriteFile(cfgPath+".new", cfg, 0o600); err != nil {
		return err
	}
	if err := os.Rename(cfgPath+".new", cfgPath); err != nil { // as the kubelet swaps a ConfigMap
		return err
	}
	last := vcHost(n - 1)
	for handshake(port, pool, last) != nil {
		if time.Since(start) > time.Minute {
			return fmt.Errorf("the proxy did not serve %s a minute after the new configuration", last)
		}
		time.Sleep(5 * time.Millisecond)
	}
	reload := time.Since(start)
	manyVCs := handshakeRate(port, pool, n, 3*time.Second)
	fmt.Printf("  configuration: %d bytes; written -> the last virtual cluster served: %s (looking every 10 ms; the proxy's default is every 1 s)\n", len(cfg), reload.Round(time.Millisecond))
	fmt.Printf("  TLS handshakes/s, SNI routed: 1 virtual cluster %.0f, %d virtual clusters %.0f (%.2fx)\n", oneVC, n, manyVCs, manyVCs/oneVC)
	cancel()
	<-done
	return nil
}

func vcHost(i int) string { return fmt.Sprintf("vc-%04d-bootstrap.bench.test", i) }

func routesConfig(n, port, mgmt int, certFile, keyFile, target string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `version: kafkalink.io/proxy-config/v1
listeners:
- name: tls
  port: %d
  bindAddress: 127.0.0.1
  keyPairs: [{certificateFile: %s, privateKeyFile: %s}]
management: {port: %d, bindAddress: 127.0.0.1}
limits: {maxConnectionsPerSource: 20000, handshakesPerSecond: 1000000}
virtualClusters:
`, port, certFile, keyFile, mgmt)
	for i := range n {
		fmt.Fprintf(&b, "- {name: vc-%04d, listener: tls, bootstrapHost: %s, brokerPattern: vc-%04d-broker-$(nodeId).bench.test, targetBootstrap: %q}\n",
			i, vcHost(i), i, target)
	}
	return []byte(b.String())
}

// handshake completes one TLS handshake with the proxy for host.
func handshake(port int, pool *x509.CertPool, host string) error {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second}, Config: &tls.Config{RootCAs: pool, ServerName: host}}
	c, err := d.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return c.Close()
}

// handshakeRate is TLS handshakes per second over d, from 4 clients, spread over vcs virtual
// clusters.
func handshakeRate(port int, pool *x509.CertPool, vcs int, d time.Duration) float64 {
	var count atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; time.Now().Before(deadline); i += 4 {
				if handshake(port, pool, vcHost(i%vcs)) == nil {
					count.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(count.Load()) / d.Seconds()
}
