package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/internal/procstat"
)

// idleScale measures kafkalink-proxy holding n idle client connections, for each n in counts:
// TLS connections that sent one ApiVersions (so the proxy's upstream connection is open too)
// and then nothing. The proxy runs as a process of its own (proxyProcess).
func idleScale(counts []int, dir, target, certFile, keyFile string, roots *x509.CertPool) error {
	// Two descriptors per connection here (the client's and kfake's), as many in the proxy,
	// which inherits the raised limit. Counts that do not fit are said and skipped, so the
	// rest of the table is still printed.
	lim, err := raiseFileLimit(fdsFor(counts[len(counts)-1]))
	if err != nil {
		return fmt.Errorf("raising the descriptor limit: %w", err)
	}
	// A count that does not fit is replaced by the largest multiple of 500 that does, once.
	fits := (int(lim) - fdReserve) / 2 / 500 * 500
	for len(counts) > 0 && fdsFor(counts[len(counts)-1]) > lim {
		n := counts[len(counts)-1]
		counts = counts[:len(counts)-1]
		fmt.Printf("\n-idle %d does not fit: it needs about %d file descriptors per process, and this machine lets a process open %d (ulimit -Hn; raising it needs CAP_SYS_RESOURCE)", n, fdsFor(n), lim)
		if fits > 0 && (len(counts) == 0 || counts[len(counts)-1] < fits) {
			fmt.Printf("; measuring %d instead", fits)
			counts = append(counts, fits)
		}
		fmt.Println()
	}
	if len(counts) == 0 {
		return nil
	}
	ports := freePorts(2)
	cfg := fmt.Sprintf(`version: kafkalink.io/proxy-config/v1
listeners:
- {name: tls, port: %d, bindAddress: 127.0.0.1, keyPairs: [{certificateFile: %s, privateKeyFile: %s}]}
virtualClusters:
- {name: idle, listener: tls, bootstrapHost: idle-bootstrap.bench.test, brokerPattern: idle-broker-$(nodeId).bench.test, targetBootstrap: %q}
management: {port: %d, bindAddress: 127.0.0.1, metrics: true}
limits: {maxConnections: 20000, maxConnectionsPerSource: 20000, handshakesPerSecond: 5000}
`, ports[0], certFile, keyFile, target, ports[1])
	cfgPath := filepath.Join(dir, "idle.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	proxy, err := startProxy(dir, cfgPath, ports[1], true)
	if err != nil {
		return err
	}
	defer proxy.stop()
	base, err := proxy.settled()
	if err != nil {
		return err
	}
	baseLater, err := proxy.scavenged(base)
	if err != nil {
		return err
	}
	fmt.Printf("\nIdle connections (TLS, one ApiVersions each), kafkalink-proxy as its own process, read after two forced GCs, then again once the runtime's scavenger stopped returning freed memory (at most %s later); per connection = growth over the idle proxy (RSS %.1f MiB, heap %.1f MiB, %d goroutines):\n\n",
		idleScavenge, base[vmRSS]/(1<<20), base[heapInuse]/(1<<20), int(base["go_goroutines"]))
	fmt.Println("| connections | RSS MiB | Go heap MiB | goroutines | RSS KiB per connection | heap KiB per connection | stacks KiB per connection | freed, kept KiB per connection | goroutines per connection | scavenged after s | RSS KiB per connection, scavenged | freed, kept KiB per connection, scavenged |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for _, n := range counts {
		for len(conns) < n {
			c, err := idleConn(ports[0], roots)
			if err != nil {
				return fmt.Errorf("connection %d: %w", len(conns)+1, err)
			}
			conns = append(conns, c)
		}
		m, err := proxy.settled()
		if err != nil {
			return err
		}
		if idleProfile != "" {
			if err := proxy.saveHeapProfile(fmt.Sprintf("%s.%d", idleProfile, n)); err != nil {
				return err
			}
		}
		later, err := proxy.scavenged(m)
		if err != nil {
			return err
		}
		per := func(m, base map[string]float64, k string) float64 { return (m[k] - base[k]) / 1024 / float64(n) }
		fmt.Printf("| %d | %.1f | %.1f | %d | %.1f | %.1f | %.1f | %.1f | %.2f | %.1f | %.1f | %.1f |\n", n, m[vmRSS]/(1<<20), m[heapInuse]/(1<<20), int(m["go_goroutines"]),
			per(m, base, vmRSS), per(m, base, heapInuse), per(m, base, "go_memstats_stack_inuse_bytes"), per(m, base, freedKept), per(m, base, "go_goroutines")*1024,
			later[waited], per(later, baseLater, vmRSS), per(later, baseLater, freedKept))
	}
	return nil
}

// The memory figures of the idle table: the proxy's VmRSS (/proc/<pid>/status) and its heap's
// spans in use.
const vmRSS, heapInuse = "VmRSS", "go_memstats_heap_inuse_bytes"

// The heap's free pages: idle, of which released to the kernel; the rest is kept (freedKept).
const heapIdle, heapReleased, freedKept = "go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes", "freed and kept"

// settled is the proxy's metrics, with its VmRSS, once the connections just opened settled
// (upstream dials done, buffers given back) and two garbage collections ran: the second
// empties the sync.Pools the first moved to their victim caches, so the heap is what the
// connections hold, not garbage or pooled buffers waiting for a collection.
func (p *proxyProcess) settled() (map[string]float64, error) {
	time.Sleep(time.Second)
	for range 2 {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1", p.mgmtPort)) //nolint:noctx // a loopback URL the benchmark made
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	m, err := scrape(p.metricsURL)
	if err != nil {
		return nil, err
	}
	m[vmRSS] = float64(procstat.RSS(p.pid()))
	// Freed and kept: heap pages the runtime freed and has not given back to the kernel yet.
	m[freedKept] = m[heapIdle] - m[heapReleased]
	return m, nil
}

// idleScavenge is -idle-scavenge.
var idleScavenge = 10 * time.Second

// waited is the seconds scavenged waited, in its map.
const waited = "waited"

// scavenged reads the proxy's memory again once the runtime's background scavenger has
// returned what it will of the memory freed before the reading m (taken right after the forced
// collections): when freed-and-kept has not fallen for a second, or after idleScavenge. The
// scavenger returns freed pages above about 110 % of the heap in use at the last collection, a
// little at a time, so the reading right after a collection counts pages it is about to
// return. A proxy left idle collects at least every two minutes (the runtime forces it), so
// this is what an idle proxy's RSS settles to; the reading m is what it may be just after a
// burst of handshakes and a collection.
func (p *proxyProcess) scavenged(m map[string]float64) (map[string]float64, error) {
	start, last, lastFall := time.Now(), m, time.Now()
	for time.Since(start) < idleScavenge && time.Since(lastFall) < time.Second {
		time.Sleep(100 * time.Millisecond)
		now, err := scrape(p.metricsURL)
		if err != nil {
			return nil, err
		}
		now[vmRSS] = float64(procstat.RSS(p.pid()))
		now[freedKept] = now[heapIdle] - now[heapReleased]
		if now[freedKept] < last[freedKept] {
			lastFall = time.Now()
		}
		last = now
	}
	last[waited] = time.Since(start).Seconds()
	return last, nil
}

// idleConn opens a TLS connection to the proxy, exchanges one ApiVersions, and leaves it idle.
func idleConn(port int, roots *x509.CertPool) (net.Conn, error) {
	d := &tls.Dialer{Config: &tls.Config{ServerName: "idle-bootstrap.bench.test", RootCAs: roots}}
	c, err := d.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "bench", "1"
	if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		c.Close()
		return nil, err
	}
	var size [4]byte
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, size[:]); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, nil
}

func waitMetrics(url string) (map[string]float64, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := scrape(url)
		if err == nil {
			return m, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the proxy's metrics did not answer: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scrape reads the unlabelled samples of a Prometheus text page.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url) //nolint:gosec,noctx // a loopback URL the benchmark made
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			m[name] = v
		}
	}
	return m, sc.Err()
}

// fdReserve is the descriptors a process of the bench holds besides idle connections:
// listeners, kfake's brokers, the proxy's management port and its config files.
const fdReserve = 500

// fdsFor is the descriptors a process of the bench needs to hold n idle connections.
func fdsFor(n int) uint64 { return uint64(2*n + fdReserve) }

// raiseFileLimit raises this process's descriptor limit to need: the soft limit up to the hard
// one, and the hard one too where the process may (root, as on CI machines, whose hard limit
// is 20,000). It returns the soft limit now in force.
func raiseFileLimit(need uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur >= need {
		return lim.Cur, nil
	}
	want := syscall.Rlimit{Cur: need, Max: max(lim.Max, need)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err == nil {
		return need, nil
	}
	lim.Cur = lim.Max
	err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	return lim.Cur, err
}

// idleProfile is -idleprofile: where heap profiles of the idle proxy go.
var idleProfile string

// saveHeapProfile writes the proxy's heap profile (in use since start) to file.
func (p *proxyProcess) saveHeapProfile(file string) error {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", p.mgmtPort)) //nolint:noctx // a loopback URL the benchmark made
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o600)
}

// idleOnlyRun is -idle-only: the idle connections table alone, without the throughput tables.
func idleOnlyRun(counts []int) error {
	dir, err := os.MkdirTemp("", "kafkalink-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	certs, err := benchCerts(dir)
	if err != nil {
		return err
	}
	k, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return err
	}
	defer k.Close()
	return idleScale(counts, dir, k.ListenAddrs()[0], certs.proxyCert, certs.proxyKey, certs.pool)
}
