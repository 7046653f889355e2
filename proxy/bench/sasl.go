package main

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/internal/procstat"
	"github.com/kafkalink/kafkalink/proxy/filter/sasltermination/termtest"
	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// saslHandshakes measures SaslTermination: n SCRAM-SHA-512 authentications, each on a new
// connection (ApiVersions, SaslHandshake, two SaslAuthenticate rounds, close), by a few
// clients at once, through a kafkalink-proxy process of its own that answers them all itself
// (no upstream connection is made). It prints the rate, and the proxy's CPU per handshake and
// the rate that makes per core: authentication is CPU-bound, so the proxy's CPU, not the wall
// clock of a machine the clients share, is the figure to size by. Plain TCP shows the SASL
// cost; TLS adds the TLS handshake's.
func saslHandshakes(n int, dir, target string, certs benchCertFiles) error {
	ports, firstBroker := freePorts(3), consecutivePorts(1)
	cfgPath, err := writeSaslConfig(dir, ports, firstBroker, certs, target)
	if err != nil {
		return err
	}
	p, err := startProxy(dir, cfgPath, ports[2], false)
	if err != nil {
		return err
	}
	defer p.stop()
	fmt.Printf("\nSaslTermination: %d SCRAM-SHA-512 handshakes per row, each on a new connection, %d clients at once, answered by the proxy alone:\n\n", n, saslClients)
	fmt.Println("| listener | handshakes/s | proxy CPU µs/handshake | handshakes/s per proxy core |")
	fmt.Println("|---|---|---|---|")
	rows := []struct {
		name string
		dial func() (net.Conn, error)
	}{
		{"plain", func() (net.Conn, error) { return net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0])) }},
		{"TLS", func() (net.Conn, error) {
			return tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[1]), &tls.Config{ServerName: "sasl-bootstrap.bench.test", RootCAs: certs.pool})
		}},
	}
	for _, row := range rows {
		cpu0, start := procstat.CPU(p.pid()), time.Now()
		if err := runHandshakes(n, row.dial); err != nil {
			return fmt.Errorf("%s: %w", row.name, err)
		}
		wall, cpu := time.Since(start), procstat.CPU(p.pid())-cpu0
		perHandshake := float64(cpu.Microseconds()) / float64(n)
		fmt.Printf("| %s | %.0f | %.0f | %.0f |\n", row.name, float64(n)/wall.Seconds(), perHandshake, 1e6/perHandshake)
	}
	return nil
}

// saslClients is how many clients authenticate at once.
const saslClients = 8

// runHandshakes runs n handshakes over saslClients goroutines, each with its own client (which
// salts its password once).
func runHandshakes(n int, dial func() (net.Conn, error)) error {
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	errs := make(chan error, saslClients)
	for range saslClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &termtest.ScramClient{User: "bench", Pass: "bench-secret"}
			for left.Add(-1) >= 0 {
				if err := handshakeOn(dial, client); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// handshakeOn authenticates on a new connection and closes it.
func handshakeOn(dial func() (net.Conn, error), client *termtest.ScramClient) error {
	c, err := dial()
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench"))
	corr := int32(0)
	rt := func(req kmsg.Request) (kmsg.Response, error) {
		corr++
		if _, err := c.Write(f.AppendRequest(nil, req, corr)); err != nil {
			return nil, err
		}
		return readResponse(br, req)
	}
	return termtest.Handshake(rt, client)
}

// readResponse reads the response frame of req.
func readResponse(br *bufio.Reader, req kmsg.Request) (kmsg.Response, error) {
	var size [4]byte
	if _, err := io.ReadFull(br, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, err
	}
	if len(body) < 4 {
		return nil, fmt.Errorf("a response of %d bytes", len(body))
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() && len(body) > 0 {
		body = body[1:] // the empty header tag section
	}
	return resp, resp.ReadFrom(body)
}

// writeSaslConfig writes a proxy configuration with SaslTermination on a plain and a TLS
// listener, and its store of the one user.
func writeSaslConfig(dir string, ports []int, firstBroker int, certs benchCertFiles, target string) (string, error) {
	st := sasl.NewCredentialStore()
	cred, err := sasl.NewScramCredential(sasl.ScramSHA512, []byte("bench-secret"), sasl.NewSalt(), sasl.DefaultPhantomIterations)
	if err == nil {
		err = st.Set("bench", sasl.ScramSHA512, cred)
	}
	if err != nil {
		return "", err
	}
	b, err := st.Marshal()
	if err != nil {
		return "", err
	}
	store := filepath.Join(dir, "sasl-users.json")
	if err := os.WriteFile(store, b, 0o600); err != nil {
		return "", err
	}
	filters := fmt.Sprintf(`[{name: t, type: SaslTermination, config: {mechanisms: [{mechanism: SCRAM-SHA-512, credentialStore: ScramCredentialFile, credentialStoreConfig: {file: %s}}]}}]`, store)
	cfg := fmt.Sprintf(`version: kafkalink.io/proxy-config/v1
listeners:
- name: plain
  port: %d
  bindAddress: 127.0.0.1
  portPerBroker: {firstBrokerPort: %d, maxNodeId: 0}
- name: tls
  port: %d
  bindAddress: 127.0.0.1
  keyPairs: [{certificateFile: %s, privateKeyFile: %s}]
virtualClusters:
- {name: plain, listener: plain, bootstrapHost: plain-bootstrap.bench.test, brokerPattern: plain-broker-$(nodeId).bench.test, targetBootstrap: %[6]q, filters: %[7]s}
- {name: sasl, listener: tls, bootstrapHost: sasl-bootstrap.bench.test, brokerPattern: sasl-broker-$(nodeId).bench.test, targetBootstrap: %[6]q, filters: %[7]s}
management: {port: %[8]d, bindAddress: 127.0.0.1, metrics: true}
limits: {maxConnectionsPerSource: 20000, handshakesPerSecond: 100000}
`, ports[0], firstBroker, ports[1], certs.proxyCert, certs.proxyKey, target, filters, ports[2])
	path := filepath.Join(dir, "sasl-proxy.yaml")
	return path, os.WriteFile(path, []byte(cfg), 0o600)
}

// saslRun is -sasl-handshakes for run.
var saslRun int

// saslOnlyRun is -sasl-only: the handshake rate alone, without the throughput tables.
func saslOnlyRun(n int) error {
	dir, err := os.MkdirTemp("", "kafkalink-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	certs, err := benchCerts(dir)
	if err != nil {
		return err
	}
	// Nothing is forwarded: the target is never dialed.
	return saslHandshakes(n, dir, "127.0.0.1:9", certs)
}
