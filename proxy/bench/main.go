// Command bench measures kafkalink-proxy against direct connections and plain relays, in one
// run, and prints one table: produce and fetch MiB/s, p50/p99 produce latency, and CPU per MiB
// moved, for ten paths. The client and a kfake of three brokers (every topic's six partitions
// spread over them) run in this process, with Go's GC held off during timed phases; the relays
// and kafkalink-proxy each run as a process of their own, so each hop's CPU is its own:
//
//   - direct plain: kgo to kfake;
//   - relay plain: kgo through an io.Copy TCP relay (relay.go) to the same kfake: what any
//     proxy on this machine can reach at best;
//   - proxy plain: kgo to the proxy (plain listener, port per broker) to the same kfake;
//   - direct TLS: kgo to a kfake that serves TLS;
//   - relay TLS-down/plain-up: the relay terminating TLS, to the plain kfake;
//   - proxy TLS: kgo over TLS (real SNI) to the proxy, plain upstream to the plain kfake;
//   - proxy TLS + filter chain: the same through a virtual cluster with a RecordValidation
//     filter whose rule is for another topic, so every Produce and Fetch is decoded and
//     re-encoded by the chain and nothing else: the cost of having filters at all;
//   - proxy TLS + encryption: the same with RecordEncryption (Secret KMS), every value
//     encrypted on produce and decrypted on fetch;
//   - proxy mTLS + authorization: kgo with a client certificate (its DN is the subject) to a
//     listener with client CAs, through the Authorization filter with 100 rules (authzRules):
//     every request checked, Metadata filtered, Produce and Fetch forwarded as read. Compared
//     with the unfiltered proxy TLS row.
//   - proxy TLS + MultiTenant: the same with MultiTenant, every Produce and Fetch (request and
//     response) decoded, its topic names prefixed or stripped, and re-encoded.
//
// One table per record size and producer compression (-sizes, -codecs), then 1,000 connections
// each sending small Produce requests (-small-producers, or alone with -small-only, small.go),
// then a table of a separate kafkalink-proxy process holding 1,000 to 10,000 idle connections,
// or as many as the file descriptor limit allows (-idle, or alone with -idle-only, idle.go:
// VmRSS, heap and stacks per connection after forced GCs), and the SaslTermination handshake
// rate (-sasl-handshakes, or alone with -sasl-only, sasl.go). Run it with:
// go run ./proxy/bench [-mib 512] [-rounds 3] [-sizes 1024,16384] [-codecs none,lz4]. It is a benchmark, not a test:
// figures are noisy on a shared machine, so compare the ratios within one run.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	mathrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/internal/procstat"
	"github.com/kafkalink/kafkalink/proxy/server"
)

type path struct {
	name    string
	opts    []kgo.Opt
	base    int            // the row this one is compared with
	cluster *kfake.Cluster // where the records land
	hop     int            // the pid of the relay or proxy on the way; 0 for direct
	prefix  string         // what the path's filters put before topic names at the broker
}

type result struct {
	produce, fetch, p50, p99 float64
	cpuPerMiB                float64 // this process: client and kfake
	hopCPUPerMiB             float64 // the relay's or proxy's process
	// The same by phase, per MiB of that phase: what printCPUTable compares.
	produceCPU, produceHop, fetchCPU, fetchHop float64
	// Minor page faults per MiB of each phase, this process's and the hop's: copies into memory
	// touched for the first time pay one per page, which can outweigh the copy.
	produceFaults, produceHopFaults, fetchFaults, fetchHopFaults float64
}

// workload is the records of one table: their size and the producer's compression.
type workload struct {
	size  int
	codec string
}

// codecs are the -codecs names.
var codecs = map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}

func main() {
	if len(os.Args) > 1 && os.Args[1] == relayCommand {
		if err := relayMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	// 512 MiB keeps each timed phase above half a second: at 128 MiB a fetch took 160 ms, and
	// the ratios between paths wandered by ±10 % from round to round.
	mib := flag.Int("mib", 512, "MiB produced and fetched per path and round")
	rounds := flag.Int("rounds", 3, "rounds over the ten paths; the table shows the median")
	sizes := flag.String("sizes", "1024,16384", "record value sizes in bytes, comma-separated: one table each (and per codec)")
	codecList := flag.String("codecs", "none,lz4", "producer compression, comma-separated: none, gzip, snappy, lz4, zstd")
	small := flag.Int("small-producers", 1000, "connections sending small Produce requests one after another, per path; 0 skips")
	smallFor := flag.Duration("small-duration", 5*time.Second, "how long the small producers run per path")
	idle := flag.String("idle", "1000,2000,5000,10000", "idle connection counts held by a separate kafkalink-proxy process, comma-separated, ascending; empty skips")
	latN := flag.Int("latency-samples", 2000, "sequential single-record produces for the latency percentiles")
	routes := flag.Int("routes", 1000, "virtual clusters on one listener for the reload and SNI handshake figures (a gateway with this many routes); 0 skips")
	saslN := flag.Int("sasl-handshakes", 3000, "SCRAM-SHA-512 handshakes per listener through SaslTermination (sasl.go); 0 skips")
	saslOnly := flag.Bool("sasl-only", false, "run only the SaslTermination handshake rate")
	flag.StringVar(&idleProfile, "idleprofile", "", "write a heap profile of the idle proxy process (-idle) at each count to this file name plus .<count>")
	flag.StringVar(&onlyPaths, "paths", "", "measure only the paths whose names contain one of these comma-separated strings, and the rows they are compared with (-paths encryption: the encryption and unfiltered proxy TLS rows), in the throughput and small producers tables; empty: all")
	smallOnly := flag.Bool("small-only", false, "run only the small producers table (-small-producers); -proxyprofile then profiles it into the file name plus .small.N")
	idleOnly := flag.Bool("idle-only", false, "run only the idle connections table (-idle)")
	flag.DurationVar(&idleScavenge, "idle-scavenge", idleScavenge, "how long the idle table waits at most, after its first reading, for the runtime's scavenger to return freed memory before its second")
	flag.IntVar(&fetchMaxBytes, "fetch-max-bytes", fetchMaxBytes, "a Fetch request's MaxBytes (the consumer's fetch.max.bytes; Kafka's default)")
	flag.IntVar(&fetchPartitionBytes, "fetch-partition-bytes", fetchPartitionBytes, "a Fetch request's PartitionMaxBytes (the consumer's max.partition.fetch.bytes; Kafka's default)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.StringVar(&proxyProfile, "proxyprofile", "", "write CPU profiles of the kafkalink-proxy process during the throughput paths to this file name plus .N, and during the small producers plus .small.N (5 s each; merge them with go tool pprof)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	var loads []workload
	for _, c := range strings.Split(*codecList, ",") {
		for _, sz := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(sz)
			if _, ok := codecs[c]; err != nil || n < 100 || !ok {
				fmt.Fprintf(os.Stderr, "bad -sizes %q or -codecs %q\n", sz, c)
				os.Exit(2)
			}
			loads = append(loads, workload{n, c})
		}
	}
	var idleCounts []int
	for _, s := range strings.Split(*idle, ",") {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			idleCounts = append(idleCounts, n)
		}
	}
	if *idleOnly {
		if err := idleOnlyRun(idleCounts); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *saslOnly {
		if err := saslOnlyRun(*saslN); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	saslRun = *saslN
	if err := run(loads, idleCounts, smallRun{*small, *smallFor, *smallOnly}, *routes, *mib, *rounds, *latN); err != nil {
		fmt.Fprintln(os.Stderr, err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// smallRun is the -small-producers measurement: connections and duration; only is
// -small-only.
type smallRun struct {
	n    int
	d    time.Duration
	only bool
}

// brokers and partitions shape both kfake clusters: every topic's partitions are spread evenly
// over the brokers, so a client talks to all of them at once, as with a real Kafka.
const brokers, partitions = 3, 6

func run(loads []workload, idleCounts []int, small smallRun, routes, mib, rounds, latN int) error {
	dir, err := os.MkdirTemp("", "kafkalink-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	certs, err := benchCerts(dir)
	if err != nil {
		return err
	}
	plain, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(partitions))
	if err != nil {
		return err
	}
	defer plain.Close()
	tlsK, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(partitions),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{*certs.kfake}}))
	if err != nil {
		return err
	}
	defer tlsK.Close()
	hops, err := startHops(dir, certs, plain.ListenAddrs(), len(loads)*rounds*9)
	if err != nil {
		return err
	}
	defer hops.stop()

	paths := selectPaths(benchPaths(plain, tlsK, certs, hops), onlyPaths)
	steal0, total0 := cpuSteal()
	fmt.Printf("\nkafkalink-proxy benchmark: %d MiB per path, median of %d rounds, %d latency samples, kfake with %d brokers and %d partitions per topic, CPUs=%s\n",
		mib, rounds, latN, brokers, partitions, runtimeProcs())
	if !small.only {
		stopProfile := hops.proxy.profile(hops.ports[2], "")
		err = measureAll(paths, loads, mib, rounds, latN)
		stopProfile()
		if err != nil {
			return err
		}
	}
	if small.n > 0 {
		stopProfile := hops.proxy.profile(hops.ports[2], ".small")
		err := smallProducers(small, plain, tlsK, hops, certs.pool)
		stopProfile()
		if err != nil {
			return err
		}
	}
	if small.only {
		return nil
	}
	fmt.Println("\nRelay rows compare with the direct row of their kind, proxy rows with the relay (the ceiling for any proxy here), filtered rows with the unfiltered proxy. MiB are record values.",
		"Hop CPU is the relay's or the proxy's process alone per MiB produced plus fetched; client+kfake CPU is the benchmark's own process (Go GC held off while timed).")
	if steal1, total1 := cpuSteal(); total1 > total0 {
		// On a virtual machine the hypervisor may run others on "our" cores; every path then
		// slows unevenly and the ratios wander. Above a few percent, take the table with salt.
		fmt.Printf("host steal time during the run: %.1f%% of CPU time\n", 100*float64(steal1-steal0)/float64(total1-total0))
	}
	hops.stop()
	if saslRun > 0 {
		if err := saslHandshakes(saslRun, dir, plain.ListenAddrs()[0], certs); err != nil {
			return err
		}
	}
	if routes > 0 {
		if err := routesScale(routes, dir, plain.ListenAddrs()[0], certs.proxyCert, certs.proxyKey, certs.pool); err != nil {
			return err
		}
	}
	if len(idleCounts) > 0 {
		return idleScale(idleCounts, dir, plain.ListenAddrs()[0], certs.proxyCert, certs.proxyKey, certs.pool)
	}
	return nil
}

// hops are the processes between client and kfake: the two relays and kafkalink-proxy, each
// a process of its own so that its CPU time is its own.
type hops struct {
	plainRelay, tlsRelay *relay
	proxy                *proxyProcess
	ports                []int // the proxy's plain bootstrap port, TLS port, management port, mTLS port
	firstBrokerPort      int   // the proxy's plain listener: one port per broker from here
}

func startHops(dir string, certs benchCertFiles, targets []string, topics int) (*hops, error) {
	h := &hops{}
	var err error
	if h.plainRelay, err = startRelay(targets, "", ""); err != nil {
		return nil, err
	}
	if h.tlsRelay, err = startRelay(targets, certs.kfakeCert, certs.kfakeKey); err != nil {
		h.stop()
		return nil, err
	}
	keks := filepath.Join(dir, "keks")
	if err := writeKEKs(keks, topics); err != nil {
		h.stop()
		return nil, err
	}
	h.ports, h.firstBrokerPort = freePorts(4), consecutivePorts(brokers)
	if err := os.WriteFile(filepath.Join(dir, "rules.acl"), []byte(authzRules()), 0o600); err != nil {
		h.stop()
		return nil, err
	}
	cfgPath, err := writeProxyConfig(dir, h, certs, targets[0], keks)
	if err == nil {
		h.proxy, err = startProxy(dir, cfgPath, h.ports[2], false)
	}
	if err != nil {
		h.stop()
		return nil, err
	}
	return h, nil
}

func (h *hops) stop() {
	for _, r := range []*relay{h.plainRelay, h.tlsRelay} {
		if r != nil {
			r.Close()
		}
	}
	if h.proxy != nil {
		h.proxy.stop()
	}
	*h = hops{}
}

// benchPaths are the ten paths: clients dial the proxy's hostnames on loopback, over TLS with
// the name as SNI where the path is TLS, and the relays for every broker.
func benchPaths(plain, tlsK *kfake.Cluster, certs benchCertFiles, h *hops) []path {
	pool := certs.pool
	toLoopback := func(useTLS bool, client ...tls.Certificate) func(context.Context, string, string) (net.Conn, error) {
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, _ := net.SplitHostPort(addr)
			if useTLS {
				d := &tls.Dialer{Config: &tls.Config{ServerName: host, RootCAs: pool, Certificates: client}}
				return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
			}
			var d net.Dialer
			return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
		}
	}
	viaTLS := func(vc string) []kgo.Opt {
		return []kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("%s-bootstrap.bench.test:%d", vc, h.ports[1])), kgo.Dialer(toLoopback(true))}
	}
	proxy, plainRelay, tlsRelay := h.proxy.pid(), h.plainRelay.pid(), h.tlsRelay.pid()
	return []path{
		{"direct plain", []kgo.Opt{kgo.SeedBrokers(plain.ListenAddrs()...)}, 0, plain, 0, ""},
		{"relay plain", []kgo.Opt{kgo.SeedBrokers(plain.ListenAddrs()...), kgo.Dialer(h.plainRelay.dialer(nil))}, 0, plain, plainRelay, ""},
		{"proxy plain", []kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("plain-bootstrap.bench.test:%d", h.ports[0])), kgo.Dialer(toLoopback(false))}, 1, plain, proxy, ""},
		{"direct TLS", []kgo.Opt{kgo.SeedBrokers(tlsK.ListenAddrs()...), kgo.DialTLSConfig(&tls.Config{RootCAs: pool})}, 3, tlsK, 0, ""},
		{"relay TLS-down/plain-up", []kgo.Opt{kgo.SeedBrokers(plain.ListenAddrs()...), kgo.Dialer(h.tlsRelay.dialer(pool))}, 3, plain, tlsRelay, ""},
		{"proxy TLS-down/plain-up", viaTLS("tls"), 4, plain, proxy, ""},
		{"proxy TLS + filter chain", viaTLS("chain"), 5, plain, proxy, ""},
		{"proxy TLS + encryption", viaTLS("enc"), 5, plain, proxy, ""},
		{"proxy TLS + MultiTenant", viaTLS("mt"), 5, plain, proxy, "mt-"},
		{"proxy mTLS + authorization", []kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("authz-bootstrap.bench.test:%d", h.ports[3])),
			kgo.Dialer(toLoopback(true, *certs.client))}, 5, plain, proxy, ""},
	}
}

// onlyPaths is -paths.
var onlyPaths string

// selectPaths keeps the paths whose names contain one of the comma-separated names, and the
// rows they are compared with (and theirs), renumbering the rows' bases; empty names keep all.
func selectPaths(paths []path, names string) []path {
	return selectRows(paths, names, func(p *path) (string, *int) { return p.name, &p.base })
}

// selectRows is selectPaths for any table whose rows have a name and a base row (field gives
// both).
func selectRows[T any](rows []T, names string, field func(*T) (string, *int)) []T {
	if names == "" {
		return rows
	}
	keep := make([]bool, len(rows))
	for i := range rows {
		name, _ := field(&rows[i])
		for _, n := range strings.Split(names, ",") {
			if n != "" && strings.Contains(name, n) {
				for j := i; !keep[j]; {
					keep[j] = true
					_, base := field(&rows[j])
					j = *base
				}
			}
		}
	}
	index := make([]int, len(rows))
	var kept []T
	for i, r := range rows {
		if keep[i] {
			index[i] = len(kept)
			kept = append(kept, r)
		}
	}
	for i := range kept {
		_, base := field(&kept[i])
		*base = index[*base]
	}
	return kept
}

// measureAll measures every path for every workload, rounds times, and prints a table per
// workload.
func measureAll(paths []path, loads []workload, mib, rounds, latN int) error {
	defer residentHeap(heapPerMiB * int64(mib) << 20)()
	topics := 0
	for _, w := range loads {
		all := make([][]result, len(paths))
		for r := 0; r < rounds; r++ {
			for i, p := range paths {
				res, err := measure(p, fmt.Sprintf("bench-%d", topics), mib, latN, w)
				topics++
				if err != nil {
					return fmt.Errorf("%s: %w", p.name, err)
				}
				all[i] = append(all[i], res)
				fmt.Fprintf(os.Stderr, "%d B %s round %d %-24s produce %7.1f MiB/s fetch %7.1f MiB/s p50 %6.0f µs p99 %6.0f µs cpu %5.1f ms/MiB hop %5.1f ms/MiB\n",
					w.size, w.codec, r+1, p.name, res.produce, res.fetch, res.p50, res.p99, res.cpuPerMiB, res.hopCPUPerMiB)
			}
		}
		printTable(w, paths, all)
	}
	return nil
}

// benchCertFiles are the run's TLS material: the CA (pool), kfake's key pair for 127.0.0.1 (also
// written to files, for the TLS relay), and the proxy's key pair for *.bench.test.
type benchCertFiles struct {
	pool                *x509.CertPool
	caFile              string           // the CA, the mTLS listener's client CA
	client              *tls.Certificate // the mTLS path's client: CN=bench
	kfake               *tls.Certificate
	kfakeCert, kfakeKey string
	proxyCert, proxyKey string
}

func benchCerts(dir string) (benchCertFiles, error) {
	var c benchCertFiles
	ca, caKey, pool, err := newCA()
	if err != nil {
		return c, err
	}
	c.pool = pool
	if c.kfake, err = issue(ca, caKey, nil, []net.IP{net.IPv4(127, 0, 0, 1)}); err != nil {
		return c, err
	}
	proxyCert, err := issue(ca, caKey, []string{"*.bench.test"}, nil)
	if err != nil {
		return c, err
	}
	if c.client, err = issue(ca, caKey, nil, nil); err != nil {
		return c, err
	}
	c.caFile = filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(c.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o600); err != nil {
		return c, err
	}
	c.kfakeCert, c.kfakeKey = filepath.Join(dir, "kfake.crt"), filepath.Join(dir, "kfake.key")
	if err := writePair(c.kfake, c.kfakeCert, c.kfakeKey); err != nil {
		return c, err
	}
	c.proxyCert, c.proxyKey = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	return c, writePair(proxyCert, c.proxyCert, c.proxyKey)
}

// serveProxy runs kafkalink-proxy in this process until ctx ends, and returns once it is ready;
// done then says how it ended. poll is how often it looks for a changed configuration (the
// proxy's default when zero).
func serveProxy(ctx context.Context, cfgPath string, poll time.Duration) (done <-chan error, err error) {
	srv := server.New(server.Options{ConfigPath: cfgPath, PollInterval: poll})
	ended := make(chan error, 1)
	go func() { ended <- srv.Run(ctx) }()
	for !srv.Ready() {
		select {
		case err := <-ended:
			return nil, fmt.Errorf("the proxy did not start: %w", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return ended, nil
}

// writeProxyConfig writes the proxy's configuration: a plain listener (port per broker), a TLS
// one with four virtual clusters (unfiltered, filter chain, encryption, MultiTenant) and an mTLS
// one with the authorization cluster, all to the plain kfake at target.
func writeProxyConfig(dir string, h *hops, certs benchCertFiles, target, keks string) (string, error) {
	cfg := fmt.Sprintf(`version: kafkalink.io/proxy-config/v1
listeners:
- name: plain
  port: %d
  bindAddress: 127.0.0.1
  portPerBroker: {firstBrokerPort: %d, maxNodeId: %d}
- name: tls
  port: %d
  bindAddress: 127.0.0.1
  keyPairs: [{certificateFile: %s, privateKeyFile: %s}]
- name: mtls
  port: %[10]d
  bindAddress: 127.0.0.1
  keyPairs: [{certificateFile: %[5]s, privateKeyFile: %[6]s}]
  clientCAFiles: [%[11]s]
virtualClusters:
- {name: plain, listener: plain, bootstrapHost: plain-bootstrap.bench.test, brokerPattern: plain-broker-$(nodeId).bench.test, targetBootstrap: %[7]q}
- {name: tls, listener: tls, bootstrapHost: tls-bootstrap.bench.test, brokerPattern: tls-broker-$(nodeId).bench.test, targetBootstrap: %[7]q}
- name: chain
  listener: tls
  bootstrapHost: chain-bootstrap.bench.test
  brokerPattern: chain-broker-$(nodeId).bench.test
  targetBootstrap: %[7]q
  filters: [{name: v, type: RecordValidation, config: {rules: [{topicNames: [not-benched], valueRule: {syntacticallyCorrectJson: {}}}]}}]
- name: enc
  listener: tls
  bootstrapHost: enc-bootstrap.bench.test
  brokerPattern: enc-broker-$(nodeId).bench.test
  targetBootstrap: %[7]q
  filters: [{name: e, type: RecordEncryption, config: {kms: KubernetesSecretKms, kmsConfig: {keyDir: %[9]s}, selector: TemplateKekSelector, selectorConfig: {template: "KEK_$(topicName)"}}}]
- name: authz
  listener: mtls
  bootstrapHost: authz-bootstrap.bench.test
  brokerPattern: authz-broker-$(nodeId).bench.test
  targetBootstrap: %[7]q
  filters: [{name: a, type: Authorization, config: {authorizer: AclAuthorizerService, authorizerConfig: {aclFile: %[12]s}}}]
- name: mt
  listener: tls
  bootstrapHost: mt-bootstrap.bench.test
  brokerPattern: mt-broker-$(nodeId).bench.test
  targetBootstrap: %[7]q
  filters: [{name: t, type: MultiTenant, config: {}}]
management: {port: %[8]d, bindAddress: 127.0.0.1, metrics: true}
limits: {maxConnectionsPerSource: 20000, handshakesPerSecond: 5000}
`, h.ports[0], h.firstBrokerPort, brokers-1, h.ports[1], certs.proxyCert, certs.proxyKey, target, h.ports[2], keks,
		h.ports[3], certs.caFile, filepath.Join(dir, "rules.acl"))
	cfgPath := filepath.Join(dir, "proxy.yaml")
	return cfgPath, os.WriteFile(cfgPath, []byte(cfg), 0o600)
}

// printTable prints one workload's medians. Hop CPU is compared only where both rows have a hop.
func printTable(w workload, paths []path, all [][]result) {
	med := make([]result, len(paths))
	for i := range paths {
		med[i] = median(all[i])
	}
	fmt.Printf("\n%d-byte records, compression %s:\n\n", w.size, w.codec)
	fmt.Println("| path | produce MiB/s | fetch MiB/s | compared with | produce vs | fetch vs | produce p50 µs | produce p99 µs | added p99 µs | hop CPU ms/MiB | hop CPU vs | client+kfake CPU ms/MiB |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for i, p := range paths {
		base := med[p.base]
		hop, hopVs := "-", "-"
		if p.hop != 0 {
			hop = fmt.Sprintf("%.2f", med[i].hopCPUPerMiB)
			if paths[p.base].hop != 0 && base.hopCPUPerMiB > 0 {
				hopVs = fmt.Sprintf("%.2f×", med[i].hopCPUPerMiB/base.hopCPUPerMiB)
			}
		}
		fmt.Printf("| %s | %.0f | %.0f | %s | %.0f%% | %.0f%% | %.0f | %.0f | %+.0f | %s | %s | %.2f |\n", p.name, med[i].produce, med[i].fetch, paths[p.base].name,
			100*med[i].produce/base.produce, 100*med[i].fetch/base.fetch, med[i].p50, med[i].p99, med[i].p99-base.p99, hop, hopVs, med[i].cpuPerMiB)
	}
	printCPUTable(paths, med)
}

// printCPUTable prints each phase's CPU per MiB, the bench's process and the hop's, and the
// ratio they imply where the two cores are what bounds throughput: the compared row's CPU per MiB
// over this row's. Unlike MiB/s, that ratio holds on a host that other work shares.
func printCPUTable(paths []path, med []result) {
	fmt.Println("\n| path | produce: client+kfake, hop ms/MiB | CPU-bound vs | fetch: client+kfake, hop ms/MiB | CPU-bound vs | page faults per MiB, produce: client+kfake, hop | fetch: client+kfake, hop |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for i, p := range paths {
		m, base := med[i], med[p.base]
		fmt.Printf("| %s | %.2f + %.2f | %.0f%% | %.2f + %.2f | %.0f%% | %.0f, %.0f | %.0f, %.0f |\n", p.name,
			m.produceCPU, m.produceHop, 100*(base.produceCPU+base.produceHop)/(m.produceCPU+m.produceHop),
			m.fetchCPU, m.fetchHop, 100*(base.fetchCPU+base.fetchHop)/(m.fetchCPU+m.fetchHop),
			m.produceFaults, m.produceHopFaults, m.fetchFaults, m.fetchHopFaults)
	}
}

// writeKEKs writes a KEK for every topic the benchmark produces to (bench-0 … bench-<n-1>, and
// small), for the encryption path's Secret KMS.
func writeKEKs(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	names := []string{"KEK_small"}
	for i := range n {
		names = append(names, fmt.Sprintf("KEK_bench-%d", i))
	}
	for _, name := range names {
		kek := make([]byte, 32)
		_, _ = rand.Read(kek)
		if err := os.WriteFile(filepath.Join(dir, name), kek, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// recordValue is a value of size bytes, a quarter random and the rest text, so that compression
// has something to do, as with real records.
func recordValue(size int) []byte {
	v := []byte(strings.Repeat("kafkalink record value ", size/23+1))[:size]
	_, _ = rand.Read(v[:size/4])
	return v
}

// batchMaxBytes is the producers' batch size on every path: under kfake's 1 MiB message limit
// with room for what encryption adds to each record (docs/record-encryption.md).
const batchMaxBytes = 900 << 10

func measure(p path, topic string, mib, latN int, w workload) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var res result
	value := recordValue(w.size)
	n := mib * 1024 * 1024 / len(value)

	prod, err := kgo.NewClient(append(p.opts, kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchMaxBytes(batchMaxBytes), kgo.ProducerBatchCompression(codecs[w.codec]), kgo.MaxBufferedRecords(n+1), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))...)
	if err != nil {
		return res, err
	}
	defer prod.Close()
	if err := spreadTopic(ctx, prod, p.cluster, p.prefix, topic); err != nil {
		return res, err
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil { // warm up
		return res, err
	}
	holdGC()
	cpu0, hop0 := cpuTime(), procstat.CPU(p.hop)
	f0, hf0 := minorFaults(os.Getpid()), minorFaults(p.hop)
	start := time.Now()
	var produceErr atomic.Value
	for i := 0; i < n; i++ {
		prod.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				produceErr.CompareAndSwap(nil, err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		return res, err
	}
	if err, _ := produceErr.Load().(error); err != nil {
		return res, fmt.Errorf("produce: %w", err)
	}
	el := time.Since(start).Seconds()
	res.produce = float64(mib) / el
	cpu1, hop1 := cpuTime(), procstat.CPU(p.hop)
	res.produceCPU, res.produceHop = perMiB(cpu1-cpu0, mib), perMiB(hop1-hop0, mib)
	f1, hf1 := minorFaults(os.Getpid()), minorFaults(p.hop)
	res.produceFaults, res.produceHopFaults = float64(f1-f0)/float64(mib), float64(hf1-hf0)/float64(mib)

	fetched, fel, err := fetchAll(ctx, prod, topic)
	if err != nil {
		return res, err
	}
	if fetched < int64(n) {
		return res, fmt.Errorf("fetched %d records, produced %d", fetched, n)
	}
	res.fetch = float64(fetched) * float64(len(value)) / (1 << 20) / fel.Seconds()
	cpu2, hop2 := cpuTime(), procstat.CPU(p.hop)
	res.fetchCPU, res.fetchHop = perMiB(cpu2-cpu1, mib), perMiB(hop2-hop1, mib)
	f2, hf2 := minorFaults(os.Getpid()), minorFaults(p.hop)
	res.fetchFaults, res.fetchHopFaults = float64(f2-f1)/float64(mib), float64(hf2-hf1)/float64(mib)
	res.cpuPerMiB = perMiB(cpu2-cpu0, 2*mib)
	if p.hop != 0 {
		res.hopCPUPerMiB = perMiB(hop2-hop0, 2*mib)
	}
	if res.p50, res.p99, err = produceLatency(ctx, prod, latN); err != nil {
		return res, err
	}

	// Free kfake's memory before the next path.
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{topic}
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, dt)
	_, _ = req.RequestWith(ctx, prod)
	return res, nil
}

// spreadTopic creates topic with the benchmark's partitions and gives each partition a leader
// in turn, so that every broker leads as many (kfake picks leaders at random). prefix is what
// the path's filters put before the name at the broker.
func spreadTopic(ctx context.Context, cl *kgo.Client, cluster *kfake.Cluster, prefix, topic string) error {
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		return err
	}
	for p := range int32(partitions) {
		if err := cluster.MoveTopicPartition(prefix+topic, p, p%brokers); err != nil {
			return err
		}
	}
	return nil
}

// heapPerMiB is the heap the bench's process reserves per MiB of -mib (residentHeap): GC held
// off, a path's produce and fetch take 7–8.5 bytes of heap per byte of records (1 KiB records
// through encryption the most: kfake stores and copies 15 % more bytes), so 10 leaves room.
const heapPerMiB = 10

// residentHeap turns the bench process's GC off until the returned function is called (holdGC
// then collects between paths), and first makes size bytes of heap resident: allocated,
// touched, and freed. Every timed phase then allocates from pages already touched, as long as
// it needs at most size.
//
// Why: with GC held off during a phase, the process's heap grows by several bytes per byte
// moved. Before, the GC came back on between paths and the runtime's scavenger returned freed
// pages to the OS meanwhile, so a phase that needed more heap than the ones before it (the
// 1 KiB fetch through encryption: 15 % more bytes from kfake) paid a minor page fault per 4 KiB
// of the excess, about 200 per MiB fetched, that no other path paid (1–4): the bench measured
// its own memory, not the path.
func residentHeap(size int64) (release func()) {
	old := debug.SetGCPercent(-1)
	chunks := make([][]byte, 0, size/(64<<20)+1)
	page := os.Getpagesize()
	for got := int64(0); got < size; got += 64 << 20 {
		c := make([]byte, 64<<20)
		for i := 0; i < len(c); i += page {
			c[i] = 1
		}
		chunks = append(chunks, c)
	}
	runtime.KeepAlive(chunks)
	holdGC()
	return func() { debug.SetGCPercent(old) }
}

// holdGC runs a collection now, so that the path measured next starts with the heap that the
// ones before it freed, and leaves the GC off (residentHeap): the benchmark's own process
// (client and kfake) does not collect during a timed phase, where its GC would take a core
// from the hop being measured. The proxy and relays collect as they would.
//
// The collection runs at the default GOGC and the GC is turned off right after it: the
// runtime's scavenger aims to keep the heap retained at what the last collection found in use
// times the ratio of the heap goal now to the one then, so a goal that jumps from twice the
// live heap to unlimited keeps it from returning the freed pages to the OS. A collection run
// with the GC already off sets no such jump, and the scavenger returns, while the next path
// runs, the pages it will allocate from (about 150 MiB a path).
func holdGC() {
	debug.SetGCPercent(100)
	runtime.GC()
	debug.SetGCPercent(-1)
}

// produceLatency is the p50 and p99 in µs of latN sequential one-record produces, after 100
// not counted; zeros when latN is 0.
func produceLatency(ctx context.Context, prod *kgo.Client, latN int) (p50, p99 float64, err error) {
	if latN <= 0 {
		return 0, 0, nil
	}
	lat := make([]float64, 0, latN)
	small := &kgo.Record{Value: make([]byte, 100)}
	for i := 0; i < latN+100; i++ {
		s := time.Now()
		r := *small
		if err := prod.ProduceSync(ctx, &r).FirstErr(); err != nil {
			return 0, 0, err
		}
		if i >= 100 {
			lat = append(lat, float64(time.Since(s).Microseconds()))
		}
	}
	sort.Float64s(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], nil
}

// fetchAll reads every partition of topic from offset 0 to its end and returns the records
// received (the offsets fetched past: with compression, bytes would not count values) and the
// time taken: from each partition's leader, all leaders at once, with sequential Fetch requests
// of the default sizes (fetchMaxBytes) on the client's connection to that broker. kgo's consumer would buffer
// everything before the first poll returns, which hides the transfer time.
func fetchAll(ctx context.Context, cl *kgo.Client, topic string) (int64, time.Duration, error) {
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	md, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		return 0, 0, err
	}
	if len(md.Topics) != 1 {
		return 0, 0, fmt.Errorf("topic %s not found", topic)
	}
	byLeader := map[int32]map[int32]int64{} // leader -> partition -> next offset
	for _, p := range md.Topics[0].Partitions {
		if byLeader[p.Leader] == nil {
			byLeader[p.Leader] = map[int32]int64{}
		}
		byLeader[p.Leader][p.Partition] = 0
	}
	var total atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for leader, offsets := range byLeader {
		wg.Go(func() {
			n, err := fetchFrom(ctx, cl.Broker(int(leader)), topic, md.Topics[0].TopicID, offsets)
			total.Add(n)
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, 0, err
	}
	return total.Load(), time.Since(start), nil
}

// The Fetch sizes are a Java consumer's defaults (fetch.max.bytes 52428800,
// max.partition.fetch.bytes 1048576; franz-go's are the same), so that a response holds what a
// default consumer's would: at most 1 MiB of each partition.
var fetchMaxBytes, fetchPartitionBytes = 52428800, 1048576

// fetchFrom fetches the partitions in offsets from one broker until each reaches its high
// watermark, and returns the records fetched.
func fetchFrom(ctx context.Context, broker *kgo.Broker, topic string, id [16]byte, offsets map[int32]int64) (int64, error) {
	var total int64
	for len(offsets) > 0 {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 0
		req.MinBytes = 1
		req.MaxBytes = int32(fetchMaxBytes)
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = topic, id
		for p, off := range offsets {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, off, int32(fetchPartitionBytes)
			fp.CurrentLeaderEpoch, fp.LastFetchedEpoch, fp.LogStartOffset = -1, -1, -1
			ft.Partitions = append(ft.Partitions, fp)
		}
		req.Topics = append(req.Topics, ft)
		kresp, err := broker.Request(ctx, req)
		if err != nil {
			return total, err
		}
		for _, t := range kresp.(*kmsg.FetchResponse).Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return total, fmt.Errorf("fetch partition %d: error %d", p.Partition, p.ErrorCode)
				}
				next := nextOffset(p.RecordBatches, offsets[p.Partition])
				total += next - offsets[p.Partition]
				if next >= p.HighWatermark {
					delete(offsets, p.Partition)
				} else {
					offsets[p.Partition] = next
				}
			}
		}
	}
	return total, nil
}

// nextOffset returns the offset after the last complete record batch in b.
func nextOffset(b []byte, from int64) int64 {
	next := from
	for len(b) >= 27 {
		base := int64(binary.BigEndian.Uint64(b))
		l := int(int32(binary.BigEndian.Uint32(b[8:])))
		if l < 15 || 12+l > len(b) {
			break
		}
		next = base + int64(int32(binary.BigEndian.Uint32(b[23:]))) + 1
		b = b[12+l:]
	}
	return next
}

// minorFaults is process pid's minor page faults; zero for no process (pid 0: the direct paths).
func minorFaults(pid int) int64 {
	if pid == 0 {
		return 0
	}
	minor, _ := procstat.Faults(pid)
	return minor
}

// perMiB is milliseconds of CPU per MiB.
func perMiB(cpu time.Duration, mib int) float64 { return cpu.Seconds() * 1000 / float64(mib) }

func median(rs []result) result {
	pick := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	return result{
		produce: pick(func(r result) float64 { return r.produce }), fetch: pick(func(r result) float64 { return r.fetch }),
		p50: pick(func(r result) float64 { return r.p50 }), p99: pick(func(r result) float64 { return r.p99 }),
		cpuPerMiB:    pick(func(r result) float64 { return r.cpuPerMiB }),
		hopCPUPerMiB: pick(func(r result) float64 { return r.hopCPUPerMiB }),
		produceCPU:   pick(func(r result) float64 { return r.produceCPU }),
		produceHop:   pick(func(r result) float64 { return r.produceHop }),
		fetchCPU:     pick(func(r result) float64 { return r.fetchCPU }),
		fetchHop:     pick(func(r result) float64 { return r.fetchHop }),

		produceFaults:    pick(func(r result) float64 { return r.produceFaults }),
		produceHopFaults: pick(func(r result) float64 { return r.produceHopFaults }),
		fetchFaults:      pick(func(r result) float64 { return r.fetchFaults }),
		fetchHopFaults:   pick(func(r result) float64 { return r.fetchHopFaults }),
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuSteal returns the machine's steal and total CPU ticks from /proc/stat (zeros elsewhere).
func cpuSteal() (steal, total uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	for i, f := range fields[1:] {
		v, _ := strconv.ParseUint(f, 10, 64)
		total += v
		if i == 7 {
			steal = v
		}
	}
	return steal, total
}

func runtimeProcs() string {
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		return v
	}
	b, _ := os.ReadFile("/proc/cpuinfo")
	return fmt.Sprint(strings.Count(string(b), "processor\t:"))
}

// consecutivePorts returns the first of n consecutive free loopback ports, for a plain
// listener's port per broker.
func consecutivePorts(n int) int {
	for range 100 {
		base := 20000 + mathrand.IntN(20000)
		var lns []net.Listener
		for i := range n {
			ln, err := net.Listen("tcp", loopback(base+i))
			if err != nil {
				break
			}
			lns = append(lns, ln)
		}
		for _, ln := range lns {
			ln.Close()
		}
		if len(lns) == n {
			return base
		}
	}
	panic("no consecutive free ports")
}

func freePorts(n int) []int {
	var out []int
	var lns []net.Listener
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

func newCA() (*x509.Certificate, *ecdsa.PrivateKey, *x509.CertPool, error) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return cert, key, pool, nil
}

func issue(ca *x509.Certificate, caKey *ecdsa.PrivateKey, dns []string, ips []net.IP) (*tls.Certificate, error) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "bench"}, DNSNames: dns, IPAddresses: ips,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func writePair(c *tls.Certificate, certFile, keyFile string) error {
	kb, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600)
}

// authzRules are the authorization path's 100 rules: the benchmark's subject (CN=bench) may do
// anything with the bench-* topics; deny rules for it on other topics, rules for 80 other
// subjects and a regex rule make the rules it is checked against realistic.
func authzRules() string {
	var b strings.Builder
	b.WriteString("from io.kroxylicious.filter.authorization import TopicResource as Topic, GroupResource as Group;\n")
	for i := range 10 {
		fmt.Fprintf(&b, "deny User with name = \"CN=bench\" to WRITE Topic with name like \"secret-%d-*\";\n", i)
	}
	for i := range 30 {
		fmt.Fprintf(&b, "deny User with name = \"CN=user-%d\" to * Topic with name like \"bench-*\";\n", i)
	}
	for i := range 50 {
		fmt.Fprintf(&b, "allow User with name = \"CN=team-%d\" to {READ, WRITE} Topic with name like \"team-%d-*\";\n", i, i)
	}
	for i := range 8 {
		fmt.Fprintf(&b, "allow User with name like \"CN=*\" to READ Group with name = \"group-%d\";\n", i)
	}
	b.WriteString("allow User with name like \"CN=*\" to DESCRIBE Topic with name matching /audit-[0-9]+/;\n")
	b.WriteString("allow User with name = \"CN=bench\" to * Topic with name like \"bench-*\";\n")
	b.WriteString("otherwise deny;\n")
	return b.String()
}
