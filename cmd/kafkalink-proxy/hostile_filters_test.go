package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/internal/freeport"
	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/proxytest"
)

// TestHostileFilteredClients runs the proxy binary (this test binary running main) in front of
// kfake with a filtered virtual cluster, p: RecordValidation (JSON syntax on topic "json") then
// RecordEncryption (KubernetesSecretKms, KEK_$(topicName), KEKs for topics "enc" and "enc-ids",
// the latter named by id in case 6 and by no other client); and a second
// one, v, whose RecordEncryption uses a Vault transit stand-in that counts its calls. Each attack
// runs against a fresh proxy process and kfake. After each, one line: bytes the attacker sent,
// the proxy's peak RSS (VmHWM) and CPU seconds over the attack, and what the attacker got. Then:
// peak RSS and CPU under bounds, goroutines back to their baseline, and a franz-go client still
// produces to "enc" and reads the record back in the clear (stored encrypted at the broker).
//
// KAFKALINK_HOSTILE_REPORT_ONLY=1 prints the figures without failing on them (for "before"
// figures of a proxy without the fixes); KAFKALINK_HOSTILE_TABLE=<file> also writes the table
// there. A watchdog kills a proxy above hfMemCap RSS or running a case longer than its limit,
// and reports it so, to keep the machine alive.
func TestHostileFilteredClients(t *testing.T) {
	reportOnly := os.Getenv("KAFKALINK_HOSTILE_REPORT_ONLY") == "1"
	var rows []*hfRow
	defer func() {
		table := hfTable(rows, reportOnly)
		t.Logf("\n%s", table)
		if path := os.Getenv("KAFKALINK_HOSTILE_TABLE"); path != "" {
			if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
				t.Errorf("writing the table: %v", err)
			}
		}
	}()
	for _, tc := range hfCases() {
		t.Run(tc.name, func(t *testing.T) {
			row := &hfRow{name: tc.name, reportOnly: reportOnly}
			rows = append(rows, row)
			runHostileFilteredCase(t, tc, row)
		})
	}
}

// Bounds checked after every case (unless report-only).
const (
	hfMaxRSS = 300 << 20 // peak RSS of the proxy during an attack
	hfMaxCPU = 5.0       // CPU seconds of the proxy during an attack
	// hfMemCap is where the watchdog kills the proxy: above it the attack has won anyway.
	hfMemCap = 3 << 30
	// hfMaxKMSCalls bounds the KMS calls one request can cause.
	hfMaxKMSCalls = 64
)

type hfCase struct {
	name string
	// limit is how long the attack may run before the watchdog kills the proxy.
	limit time.Duration
	run   func(t *testing.T, p *hfProxy, r *hfRow)
}

// hfRow is one line of the table.
type hfRow struct {
	name       string
	reportOnly bool
	sent       int64
	peakRSS    int64
	cpu        float64
	outcome    string
	stopped    string
	notes      []string
}

// expect records a failed security property: an error, or in report-only mode a note.
func (r *hfRow) expect(t *testing.T, ok bool, format string, args ...any) bool {
	t.Helper()
	if ok {
		return true
	}
	msg := fmt.Sprintf(format, args...)
	r.notes = append(r.notes, "FAIL: "+msg)
	if r.reportOnly {
		t.Logf("would fail: %s", msg)
	} else {
		t.Error(msg)
	}
	return false
}

func hfTable(rows []*hfRow, reportOnly bool) string {
	var b strings.Builder
	mode := "enforcing bounds"
	if reportOnly {
		mode = "report only"
	}
	fmt.Fprintf(&b, "TestHostileFilteredClients (%s; bounds: peak RSS < %d MiB, CPU < %.0f s, KMS calls per request <= %d)\n", mode, hfMaxRSS>>20, hfMaxCPU, hfMaxKMSCalls)
	fmt.Fprintf(&b, "%-34s | %12s | %14s | %7s | %s\n", "attack", "bytes sent", "peak RSS", "CPU s", "outcome")
	fmt.Fprintf(&b, "%s\n", strings.Repeat("-", 120))
	for _, r := range rows {
		rss := fmt.Sprintf("%.0f MiB", float64(r.peakRSS)/(1<<20))
		if r.stopped != "" {
			rss = "> " + rss
		}
		outcome := r.outcome
		if r.stopped != "" {
			outcome = r.stopped + "; " + outcome
		}
		fmt.Fprintf(&b, "%-34s | %12d | %14s | %7.2f | %s\n", r.name, r.sent, rss, r.cpu, outcome)
		for _, n := range r.notes {
			fmt.Fprintf(&b, "%-34s   %s\n", "", n)
		}
	}
	return b.String()
}

// runHostileFilteredCase starts a proxy, warms it up with the good client, runs the attack under
// the watchdog, measures, checks bounds, runs the good client again and waits for goroutines.
func runHostileFilteredCase(t *testing.T, tc hfCase, row *hfRow) {
	p := startHostileFilteredProxy(t, row.reportOnly)
	defer p.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.goodClient(ctx, "p"); err != nil {
		t.Fatalf("before the attack, a well-behaved client fails: %v\n%s", err, p.logTail())
	}
	time.Sleep(200 * time.Millisecond)
	baseG, err := metricValue(p.mgmt, "go_goroutines")
	if err != nil {
		t.Fatal(err)
	}
	p.forwarded.reset()
	p.watch.startCase(tc.limit)
	tc.run(t, p, row)
	peak, cpu, stopped := p.watch.endCase()
	row.peakRSS, row.cpu, row.stopped = peak, cpu, stopped
	t.Logf("%s: sent %d bytes, peak RSS %.0f MiB, CPU %.2f s, outcome: %s %s", tc.name, row.sent, float64(peak)/(1<<20), cpu, row.outcome, stopped)
	if stopped != "" {
		row.expect(t, false, "the proxy was stopped by the watchdog: %s", stopped)
		return
	}
	row.expect(t, peak < hfMaxRSS, "peak RSS %.0f MiB, want < %d MiB", float64(peak)/(1<<20), hfMaxRSS>>20)
	row.expect(t, cpu < hfMaxCPU, "%.2f s of CPU, want < %.0f s", cpu, hfMaxCPU)
	if !p.alive() {
		row.expect(t, false, "the proxy process died:\n%s", p.logTail())
		return
	}
	for _, vc := range p.goodClusters {
		if err := p.goodClient(ctx, vc); err != nil {
			row.expect(t, false, "after the attack, a well-behaved client of %s fails: %v", vc, err)
		}
	}
	var g float64
	back := false
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if g, err = metricValue(p.mgmt, "go_goroutines"); err == nil && g <= baseG+5 {
			back = true
			break
		}
	}
	row.expect(t, back, "goroutines at %v, baseline %v (not back within 20 s)", g, baseG)
	if n, _ := metricValue(p.mgmt, "kafkalink_proxy_connection_panics_total"); n != 0 {
		row.expect(t, false, "%v connection panics", n)
	}
	if t.Failed() {
		t.Logf("proxy log (tail):\n%s", p.logTail())
	}
}

// hfProxy is the proxy binary with the filtered virtual clusters p and v, in front of kfake.
type hfProxy struct {
	port, mgmt int
	roots      *x509.CertPool
	kfake      *kfake.Cluster
	cmd        *exec.Cmd
	done       chan error
	logPath    string
	watch      *procWatch
	vault      *vaultStandIn
	forwarded  *forwardLog
	// goodClusters are the virtual clusters the good client checks after a case ("p", and "v"
	// after the KMS case).
	goodClusters []string
	reportOnly   bool
}

// forwardLog records what Produce requests reached kfake: record bytes per topic name (topic ids
// are resolved by the caller), and whether a marker appeared in any of them.
type forwardLog struct {
	mu      sync.Mutex
	bytes   map[string]int64
	byID    map[[16]byte]int64
	markers map[string]bool
	watch   []string
}

func (f *forwardLog) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bytes, f.byID, f.markers = map[string]int64{}, map[[16]byte]int64{}, map[string]bool{}
}

func (f *forwardLog) observe(req *kmsg.ProduceRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tp := range req.Topics {
		for _, pp := range tp.Partitions {
			if req.Version >= 13 {
				f.byID[tp.TopicID] += int64(len(pp.Records))
			} else {
				f.bytes[tp.Topic] += int64(len(pp.Records))
			}
			for _, m := range f.watch {
				if bytes.Contains(pp.Records, []byte(m)) {
					f.markers[m] = true
				}
			}
		}
	}
}

func (f *forwardLog) topicBytes(topic string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bytes[topic]
}

func (f *forwardLog) idBytes(id [16]byte) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byID[id]
}

func (f *forwardLog) sawMarker(m string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.markers[m]
}

// hfMarker is the plaintext of case 6: it must never reach the broker.
const hfMarker = "HOSTILE-PLAINTEXT-MARKER-7f3a9c"

// optionalLimits names the filter limits the proxy's configuration knows (they are being added;
// a proxy that does not know them refuses unknown fields), at their documented defaults.
func optionalLimits() string {
	want := map[string]int64{
		"maxFilteredFrameBytes": 16 << 20,
		"maxBatchBytes":         8 << 20,
		"decompressionRatio":    64,
		"filterMemoryBytes":     256 << 20,
	}
	known := map[string]bool{}
	rt := reflect.TypeOf(config.Limits{})
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		known[name] = true
	}
	var names []string
	for n := range want {
		if known[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "  %s: %d\n", n, want[n])
	}
	return b.String()
}

func startHostileFilteredProxy(t *testing.T, reportOnly bool) *hfProxy {
	t.Helper()
	dir := t.TempDir()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "enc", "json", "enc-ids"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	fw := &forwardLog{watch: []string{hfMarker}}
	fw.reset()
	kc.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		if pr, ok := req.(*kmsg.ProduceRequest); ok {
			fw.observe(pr)
		}
		return nil, nil, false
	})
	vault := newVaultStandIn(t)
	keys := filepath.Join(dir, "keks")
	if err := os.MkdirAll(keys, 0o700); err != nil {
		t.Fatal(err)
	}
	kek := make([]byte, 32)
	_, _ = rand.Read(kek)
	for _, id := range []string{"KEK_enc", "KEK_enc-ids"} {
		if err := os.WriteFile(filepath.Join(keys, id), []byte(base64.StdEncoding.EncodeToString(kek)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ports := freeport.Ports(2)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeSelfSigned(t, certFile, keyFile)
	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemBytes)
	target := kc.ListenAddrs()[0]
	cfg := fmt.Sprintf(`version: kafkalink.io/proxy-config/v1
listeners:
- name: tls
  port: %d
  keyPairs: [{certificateFile: %q, privateKeyFile: %q}]
virtualClusters:
- name: p
  listener: tls
  bootstrapHost: p-bootstrap.test
  brokerPattern: p-broker-$(nodeId).test
  targetBootstrap: %q
  filters:
  - name: validate
    type: RecordValidation
    config: {rules: [{topicNames: [json], valueRule: {syntacticallyCorrectJson: {}}}]}
  - name: encrypt
    type: RecordEncryption
    config: {kms: KubernetesSecretKms, kmsConfig: {keyDir: %q}, selector: TemplateKekSelector, selectorConfig: {template: "KEK_$(topicName)"}}
- name: v
  listener: tls
  bootstrapHost: v-bootstrap.test
  brokerPattern: v-broker-$(nodeId).test
  targetBootstrap: %q
  filters:
  - name: encrypt
    type: RecordEncryption
    config: {kms: VaultKmsService, kmsConfig: {vaultTransitEngineUrl: %q, vaultToken: {password: hostile-token}}, selector: TemplateKekSelector, selectorConfig: {template: "KEK_$(topicName)"}}
management: {port: %d, metrics: true}
limits:
  maxFrameBytes: 104857600
  maxConnections: 200
  maxConnectionsPerSource: 100
  handshakeTimeout: 5s
  firstRequestTimeout: 5s
  writeTimeout: 10s
  idleTimeout: 60s
  drainTimeout: 2s
%s`, ports[0], certFile, keyFile, target, keys, target, vault.srv.URL+"/v1/transit", ports[1], optionalLimits())
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "--config", path, "--bind-address", "127.0.0.1", "-v", "2")
	cmd.Env = append(os.Environ(), "KAFKALINK_PROXY_RUN_MAIN=1")
	if reportOnly {
		// Keeps the collector working near the watchdog's cap rather than letting garbage pile up.
		cmd.Env = append(cmd.Env, fmt.Sprintf("GOMEMLIMIT=%d", int64(hfMemCap)))
	}
	logFile, err := os.Create(filepath.Join(dir, "proxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &hfProxy{port: ports[0], mgmt: ports[1], roots: roots, kfake: kc, cmd: cmd, done: make(chan error, 1),
		logPath: logFile.Name(), vault: vault, forwarded: fw, goodClusters: []string{"p"}, reportOnly: reportOnly}
	go func() { p.done <- cmd.Wait() }()
	p.watch = newProcWatch(cmd.Process.Pid, func() { _ = cmd.Process.Kill() })
	t.Cleanup(p.watch.close)
	for i := 0; ; i++ {
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", p.mgmt)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("proxy exited: %v\n%s", err, p.logTail())
		case <-time.After(20 * time.Millisecond):
		}
		if i > 1000 {
			t.Fatalf("proxy never became ready\n%s", p.logTail())
		}
	}
	if n, err := metricValue(p.mgmt, `kafkalink_proxy_virtual_cluster_refused{virtual_cluster="p"}`); err != nil || n != 0 {
		t.Fatalf("virtual cluster p refused (%v, %v)\n%s", n, err, p.logTail())
	}
	return p
}

func (p *hfProxy) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	return tail(string(b), 4000)
}

func (p *hfProxy) alive() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return false
	default:
		return true
	}
}

// stop ends the proxy: SIGTERM (SIGKILL in report-only mode, where an attack may still be
// burning CPU), then SIGKILL after 10 s.
func (p *hfProxy) stop(t *testing.T) {
	if !p.alive() {
		return
	}
	if p.reportOnly {
		_ = p.cmd.Process.Kill()
	} else {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Logf("the proxy did not exit within 10 s of SIGTERM: killed")
		<-p.done
	}
}

// procWatch samples a process's memory and CPU from /proc every 20 ms, and kills it above
// hfMemCap or past a case's time limit.
type procWatch struct {
	pid  int
	kill func()
	quit chan struct{}
	once sync.Once

	mu       sync.Mutex
	hwm      int64   // VmHWM since the case started
	cpuStart float64 // utime+stime at the start of the case
	cpuLast  float64
	deadline time.Time
	stopped  string
}

func newProcWatch(pid int, kill func()) *procWatch {
	w := &procWatch{pid: pid, kill: kill, quit: make(chan struct{})}
	go w.loop()
	return w
}

func (w *procWatch) close() { w.once.Do(func() { close(w.quit) }) }

func (w *procWatch) loop() {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-tick.C:
		}
		w.sample()
	}
}

// sample reads the process's figures; false once the process is gone.
func (w *procWatch) sample() bool {
	hwm, rss, err := procMem(w.pid)
	if err != nil {
		return false
	}
	cpu, err := procCPU(w.pid)
	if err != nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hwm = max(w.hwm, hwm)
	w.cpuLast = cpu
	if w.stopped == "" && !w.deadline.IsZero() {
		switch {
		case rss > hfMemCap:
			w.stopped = fmt.Sprintf("killed at %.1f GiB RSS", float64(rss)/(1<<30))
			w.kill()
		case time.Now().After(w.deadline):
			w.stopped = "still running at the case's time limit, killed"
			w.kill()
		}
	}
	return true
}

// startCase resets the peak RSS (clear_refs 5 resets VmHWM) and the CPU count.
func (w *procWatch) startCase(limit time.Duration) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", w.pid), []byte("5"), 0)
	hwm, _, _ := procMem(w.pid)
	cpu, _ := procCPU(w.pid)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hwm, w.cpuStart, w.cpuLast, w.stopped = hwm, cpu, cpu, ""
	if limit == 0 {
		limit = 30 * time.Second
	}
	w.deadline = time.Now().Add(limit)
}

// endCase returns the peak RSS and CPU seconds since startCase, and why the watchdog stopped
// the proxy, if it did.
func (w *procWatch) endCase() (int64, float64, string) {
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deadline = time.Time{}
	return w.hwm, w.cpuLast - w.cpuStart, w.stopped
}

func (w *procWatch) cpuNow() float64 {
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cpuLast
}

// procMem returns VmHWM and VmRSS in bytes.
func procMem(pid int) (hwm, rss int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmHWM:":
			hwm = kb << 10
		case "VmRSS:":
			rss = kb << 10
		}
	}
	if hwm == 0 && rss == 0 {
		return 0, 0, errors.New("no VmHWM/VmRSS (a zombie?)")
	}
	return hwm, rss, nil
}

// procCPU returns utime+stime in seconds (clock ticks of 1/100 s, Linux's USER_HZ).
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100, nil
}

// metricValue reads one metric line (name and labels) from the management port.
func metricValue(mgmt int, name string) (float64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", mgmt))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, nil
}

// goodClient produces one record to "enc" through virtual cluster vc with franz-go and reads it
// back from its offset: it must come back as produced, and kfake must hold it encrypted.
func (p *hfProxy) goodClient(ctx context.Context, vc string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := &tls.Dialer{Config: &tls.Config{ServerName: host, RootCAs: p.roots}}
		return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", p.port))
	}
	opts := []kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("%s-bootstrap.test:%d", vc, p.port)), kgo.Dialer(dial), kgo.RequestRetries(20)}
	cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic("enc"))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	value := fmt.Sprintf("good-client-%s-%d", vc, time.Now().UnixNano())
	rec, err := cl.ProduceSync(ctx, kgo.StringRecord(value)).First()
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	at := map[string]map[int32]kgo.Offset{"enc": {rec.Partition: kgo.NewOffset().At(rec.Offset)}}
	for _, through := range []string{"proxy", "broker"} {
		o := append(slices.Clone(opts), kgo.ConsumePartitions(at))
		if through == "broker" {
			o = []kgo.Opt{kgo.SeedBrokers(p.kfake.ListenAddrs()...), kgo.ConsumePartitions(at)}
		}
		cons, err := kgo.NewClient(o...)
		if err != nil {
			return err
		}
		var got *kgo.Record
		for got == nil && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				if got == nil && r.Offset == rec.Offset {
					got = r
				}
			})
		}
		cons.Close()
		switch {
		case got == nil:
			return fmt.Errorf("the record never came back through the %s", through)
		case through == "proxy" && string(got.Value) != value:
			return fmt.Errorf("through the proxy, the record came back as %q, want %q", got.Value, value)
		case through == "broker" && bytes.Contains(got.Value, []byte(value)):
			return fmt.Errorf("the broker holds the record in the clear")
		}
	}
	return nil
}

// rawConn is a raw TLS connection to the proxy, writing frames built with kmsg.
type rawConn struct {
	c    *tls.Conn
	br   *bufio.Reader
	f    *kmsg.RequestFormatter
	corr int32
	sent *int64
}

func (p *hfProxy) dialRawTLS(vc string, sent *int64) (*rawConn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", fmt.Sprintf("127.0.0.1:%d", p.port), &tls.Config{ServerName: vc + "-bootstrap.test", RootCAs: p.roots})
	if err != nil {
		return nil, err
	}
	return &rawConn{c: c, br: bufio.NewReader(c), f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile")), sent: sent}, nil
}

func (r *rawConn) Close() error { return r.c.Close() }

func (r *rawConn) write(b []byte) error {
	_ = r.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
	n, err := r.c.Write(b)
	atomic.AddInt64(r.sent, int64(n))
	return err
}

func (r *rawConn) frame(req kmsg.Request) []byte {
	r.corr++
	return r.f.AppendRequest(nil, req, r.corr)
}

// roundTrip sends req and reads its response within d.
func (r *rawConn) roundTrip(req kmsg.Request, d time.Duration) (kmsg.Response, error) {
	if err := r.write(r.frame(req)); err != nil {
		return nil, err
	}
	return r.read(req, d)
}

// read reads the response to req (the last request sent).
func (r *rawConn) read(req kmsg.Request, d time.Duration) (kmsg.Response, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(d))
	var size [4]byte
	if _, err := io.ReadFull(r.br, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 512<<20 {
		return nil, fmt.Errorf("response of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.br, body); err != nil {
		return nil, err
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != r.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", corr, r.corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		count, k := binary.Uvarint(body)
		if k <= 0 || count != 0 {
			return nil, fmt.Errorf("response header tags: %d", count)
		}
		body = body[k:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decoding the %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

func apiVersionsRequest() *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "hostile", "1"
	return req
}

// hello sends a good first request, ApiVersions v3.
func (r *rawConn) hello() error {
	resp, err := r.roundTrip(apiVersionsRequest(), 10*time.Second)
	if err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	if code := resp.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
		return fmt.Errorf("ApiVersions: %w", kerr.ErrorForCode(code))
	}
	return nil
}

// describeErr says what a client saw when a request got no response.
func describeErr(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection closed"
	case errors.As(err, &ne) && ne.Timeout():
		return "no answer (timeout)"
	default:
		return err.Error()
	}
}

func codeName(code int16) string {
	if code == 0 {
		return "OK"
	}
	if err := kerr.ErrorForCode(code); err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return fmt.Sprintf("%s(%d)", ke.Message, code)
		}
	}
	return fmt.Sprintf("code %d", code)
}

// produceCodes is "CODE×n, …" over a Produce response's partitions.
func produceCodes(resp *kmsg.ProduceResponse) (string, map[int16]int) {
	counts := map[int16]int{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			counts[p.ErrorCode]++
		}
	}
	return summarizeCodes(counts), counts
}

func summarizeCodes(counts map[int16]int) string {
	var codes []int
	for c := range counts {
		codes = append(codes, int(c))
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%s×%d", codeName(int16(c)), counts[int16(c)]))
	}
	return strings.Join(parts, ", ")
}

// Record batches built by hand.

const (
	codecNone   int8 = 0
	codecGzip   int8 = 1
	codecSnappy int8 = 2
	codecLZ4    int8 = 3
	codecZstd   int8 = 4
)

var codecNames = map[int8]string{codecNone: "none", codecGzip: "gzip", codecSnappy: "snappy", codecLZ4: "lz4", codecZstd: "zstd"}

// appendRecordBytes appends one v2 record (no key, no headers) with the value.
// emptyRecords is n records with empty values, 7 bytes each, as a batch's records section.
func emptyRecords(n int) []byte {
	raw := make([]byte, 0, 7*n)
	for range n {
		raw = appendRecordBytes(raw, 0, []byte{})
	}
	return raw
}

func appendRecordBytes(dst []byte, offsetDelta int, value []byte) []byte {
	var head []byte
	head = append(head, 0)                               // attributes
	head = binary.AppendVarint(head, 0)                  // timestamp delta
	head = binary.AppendVarint(head, int64(offsetDelta)) // offset delta
	head = binary.AppendVarint(head, -1)                 // null key
	head = binary.AppendVarint(head, int64(len(value)))  // value length
	tailLen := len(binary.AppendVarint(nil, 0))          // header count
	dst = binary.AppendVarint(dst, int64(len(head)+len(value)+tailLen))
	dst = append(dst, head...)
	dst = append(dst, value...)
	return binary.AppendVarint(dst, 0)
}

func compressFor(codec int8, raw []byte) []byte {
	var buf bytes.Buffer
	switch codec {
	case codecNone:
		return raw
	case codecGzip:
		w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = w.Write(raw)
		_ = w.Close()
	case codecSnappy:
		return s2.EncodeSnappy(nil, raw)
	case codecLZ4:
		w := lz4.NewWriter(&buf)
		_ = w.Apply(lz4.CompressionLevelOption(lz4.Level9))
		_, _ = w.Write(raw)
		_ = w.Close()
	case codecZstd:
		enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
		defer enc.Close()
		return enc.EncodeAll(raw, nil)
	}
	return buf.Bytes()
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// makeBatch wraps n records (their bytes, uncompressed, in raw) into a v2 batch with the codec.
func makeBatch(codec int8, n int, raw []byte) []byte {
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec), LastOffsetDelta: int32(n - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(n),
		Records: compressFor(codec, raw)}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32c))
	return out
}

// smallBatch is an uncompressed batch of one record with value v.
func smallBatch(v string) []byte {
	return makeBatch(codecNone, 1, appendRecordBytes(nil, 0, []byte(v)))
}

// Bombs: batches of bombRecords records of 1 MiB of zeros each, just under the proxy's current
// 64 MiB bound on one decompressed batch.
const bombRecords = 63

var (
	bombOnce    sync.Once
	bombBatches map[int8][]byte
)

func bombBatch(codec int8) []byte {
	bombOnce.Do(func() {
		zeros := make([]byte, 1<<20)
		var raw []byte
		for i := range bombRecords {
			raw = appendRecordBytes(raw, i, zeros)
		}
		bombBatches = map[int8][]byte{}
		for _, c := range []int8{codecGzip, codecSnappy, codecLZ4, codecZstd} {
			bombBatches[c] = makeBatch(c, bombRecords, raw)
		}
	})
	return bombBatches[codec]
}

// produceRequest is a Produce v9 (acks=all) of one partition per topic, each with records.
func produceRequest(version int16, topics map[string][]byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks, req.TimeoutMillis = -1, 10000
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := kmsg.NewProduceRequestTopic()
		t.Topic = n
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition, pp.Records = 0, topics[n]
		t.Partitions = []kmsg.ProduceRequestTopicPartition{pp}
		req.Topics = append(req.Topics, t)
	}
	return req
}

// fetchRequest is a Fetch v12 of partition 0 of topic from offset 0.
func fetchRequest(topic string, maxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 100, 1, maxBytes
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	pp := kmsg.NewFetchRequestTopicPartition()
	pp.Partition, pp.FetchOffset, pp.PartitionMaxBytes = 0, 0, maxBytes
	pp.CurrentLeaderEpoch, pp.LastFetchedEpoch, pp.LogStartOffset = -1, -1, -1
	t.Partitions = []kmsg.FetchRequestTopicPartition{pp}
	req.Topics = []kmsg.FetchRequestTopic{t}
	return req
}

// sendProduce sends req on a new connection to vc after ApiVersions and describes the answer;
// resp is nil when there was none.
func (p *hfProxy) sendProduce(vc string, req *kmsg.ProduceRequest, r *hfRow, wait time.Duration) (*kmsg.ProduceResponse, string) {
	c, err := p.dialRawTLS(vc, &r.sent)
	if err != nil {
		return nil, "dial: " + err.Error()
	}
	defer c.Close()
	if err := c.hello(); err != nil {
		return nil, err.Error()
	}
	resp, err := c.roundTrip(req, wait)
	if err != nil {
		return nil, describeErr(err)
	}
	pr := resp.(*kmsg.ProduceResponse)
	s, _ := produceCodes(pr)
	return pr, s
}

// bombRefused checks a Produce answer to a bomb: refused (any error code) or the connection
// closed, and nothing of it at the broker.
func (p *hfProxy) bombRefused(t *testing.T, r *hfRow, resp *kmsg.ProduceResponse, topic string) {
	t.Helper()
	if resp != nil {
		_, counts := produceCodes(resp)
		r.expect(t, counts[0] == 0, "a bomb partition was accepted (%s)", r.outcome)
	}
	fw := p.forwarded.topicBytes(topic)
	if fw > 0 {
		r.outcome += fmt.Sprintf("; %d bytes forwarded to the broker", fw)
	}
	r.expect(t, fw == 0, "%d bytes of the bomb's partition were forwarded to the broker", fw)
}

func hfCases() []hfCase {
	var cases []hfCase
	// 1. Compression bombs on Produce, to the encryption path ("enc") and the validation path
	// ("json"). Snappy's ratio is about 21:1 at best, so its batches are megabytes.
	for _, codec := range []int8{codecZstd, codecGzip, codecLZ4, codecSnappy} {
		for _, topic := range []string{"enc", "json"} {
			n := 8
			if codec == codecSnappy {
				n = 3 // 5 MiB a batch: 15 MiB, under the 16 MiB filtered-frame limit being added
			}
			cases = append(cases, hfCase{name: fmt.Sprintf("1 %s bomb produce %s", codecNames[codec], topic), limit: 40 * time.Second,
				run: func(t *testing.T, p *hfProxy, r *hfRow) {
					batch := bombBatch(codec)
					records := bytes.Repeat(batch, n)
					req := produceRequest(9, map[string][]byte{topic: records})
					resp, outcome := p.sendProduce("p", req, r, 35*time.Second)
					r.outcome = fmt.Sprintf("%s (%d batches × %d MiB decompressed, %d KiB compressed each)", outcome, n, bombRecords, len(batch)>>10)
					p.bombRefused(t, r, resp, topic)
				}})
		}
	}
	// 2. A JSON-array bomb: one record, a ~60 MiB array of zeros, zstd.
	cases = append(cases, hfCase{name: "2 JSON-array bomb produce json", limit: 40 * time.Second,
		run: func(t *testing.T, p *hfProxy, r *hfRow) {
			const elems = 30 << 20
			v := make([]byte, 0, 2*elems+1)
			v = append(v, '[')
			for i := range elems {
				if i > 0 {
					v = append(v, ',')
				}
				v = append(v, '0')
			}
			v = append(v, ']')
			batch := makeBatch(codecZstd, 1, appendRecordBytes(nil, 0, v))
			resp, outcome := p.sendProduce("p", produceRequest(9, map[string][]byte{"json": batch}), r, 35*time.Second)
			r.outcome = fmt.Sprintf("%s (%d MiB array, %d KiB zstd)", outcome, len(v)>>20, len(batch)>>10)
			p.bombRefused(t, r, resp, "json")
		}})
	// 3. Bombs stored at the broker, fetched through the proxy.
	cases = append(cases, hfCase{name: "3 stored bombs fetched", limit: 40 * time.Second,
		run: func(t *testing.T, p *hfProxy, r *hfRow) {
			direct, err := kgo.NewClient(kgo.SeedBrokers(p.kfake.ListenAddrs()...))
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			topics, err := kadm.NewClient(direct).ListTopics(ctx, "enc")
			if err != nil || topics["enc"].Err != nil {
				t.Fatalf("the id of enc: %v %v", err, topics["enc"].Err)
			}
			stored := 0
			for _, codec := range []int8{codecZstd, codecZstd, codecZstd, codecZstd, codecGzip, codecGzip, codecLZ4, codecLZ4} {
				req := produceRequest(9, map[string][]byte{"enc": bombBatch(codec)})
				req.Topics[0].TopicID = topics["enc"].ID // kgo sends the highest version kfake takes, v13
				resp, err := req.RequestWith(ctx, direct)
				if err != nil {
					t.Fatalf("storing a bomb at kfake: %v", err)
				}
				if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
					t.Fatalf("storing a %s bomb at kfake: %v", codecNames[codec], kerr.ErrorForCode(code))
				}
				stored++
			}
			var outcomes []string
			for range 3 {
				c, err := p.dialRawTLS("p", &r.sent)
				if err != nil {
					outcomes = append(outcomes, "dial: "+err.Error())
					break
				}
				if err := c.hello(); err != nil {
					outcomes = append(outcomes, err.Error())
					c.Close()
					break
				}
				resp, err := c.roundTrip(fetchRequest("enc", 64<<20), 30*time.Second)
				c.Close()
				if err != nil {
					outcomes = append(outcomes, describeErr(err))
					continue
				}
				fr := resp.(*kmsg.FetchResponse)
				var desc []string
				if fr.ErrorCode != 0 {
					desc = append(desc, "fetch "+codeName(fr.ErrorCode))
				}
				for _, tp := range fr.Topics {
					for _, pp := range tp.Partitions {
						desc = append(desc, fmt.Sprintf("%s[%d] %s, %d KiB of records", tp.Topic, pp.Partition, codeName(pp.ErrorCode), len(pp.RecordBatches)>>10))
					}
				}
				outcomes = append(outcomes, strings.Join(desc, "; "))
			}
			r.outcome = fmt.Sprintf("%d bombs stored (zstd, gzip, lz4; %d MiB each decompressed); 3 fetches: %s", stored, bombRecords, strings.Join(outcomes, " | "))
		}})
	// 4. A tagged-field count of 2^32-1 in ApiVersions v3, Produce v9 and Fetch v12.
	apiVersionsBomb, _ := hex.DecodeString("0000001500120003000000010001780002610231ffffffff0f")
	for _, kind := range []string{"ApiVersions v3", "Produce v9", "Fetch v12", "Fetch v12 nested"} {
		cases = append(cases, hfCase{name: "4 tag count 2^32-1 " + kind, limit: 40 * time.Second,
			run: func(t *testing.T, p *hfProxy, r *hfRow) { p.taggedFieldBomb(t, r, kind, apiVersionsBomb) }})
	}
	// 5. Announced-size flood.
	// 5. Announced-size floods: ~100 MiB (under maxFrameBytes), and ~15 MiB (under the filtered
	// frame limit, 40 of them over the filter memory budget).
	for _, f := range []struct{ mib, conns int }{{100, 20}, {15, 40}} {
		cases = append(cases, hfCase{name: fmt.Sprintf("5 announced %d MiB x%d held", f.mib, f.conns), limit: 40 * time.Second,
			run: func(t *testing.T, p *hfProxy, r *hfRow) { p.announcedFlood(t, r, f.mib, f.conns) }})
	}
	// 6. Produce v13 (topic ids only) with a plaintext marker, to "enc-ids": by an id no metadata
	// through the proxy named, and by one a Metadata request on the same connection named.
	for _, learned := range []bool{false, true} {
		name := "6 produce v13 by unlearned id"
		if learned {
			name = "6 produce v13 by learned id"
		}
		cases = append(cases, hfCase{name: name, limit: 40 * time.Second,
			run: func(t *testing.T, p *hfProxy, r *hfRow) { p.produceByTopicID(t, r, learned) }})
	}
	// 7. Thousands of topics in one request against a counting Vault.
	cases = append(cases, hfCase{name: "7 5000 topics vs Vault KMS", limit: 60 * time.Second,
		run: func(t *testing.T, p *hfProxy, r *hfRow) { p.manyTopics(t, r) }})
	// 8. Upstream amplification: 8,000 identical records with empty values, zstd (a few hundred
	// bytes); encryption adds some 30 bytes of nonce, tag and framing that do not compress to
	// each, thousands of times what was sent.
	cases = append(cases, hfCase{name: "8 tiny records amplified enc", limit: 40 * time.Second,
		run: func(t *testing.T, p *hfProxy, r *hfRow) {
			batch := makeBatch(codecZstd, 8000, emptyRecords(8000))
			resp, outcome := p.sendProduce("p", produceRequest(9, map[string][]byte{"enc": batch}), r, 35*time.Second)
			r.outcome = fmt.Sprintf("%s (8,000 empty values, %d bytes compressed)", outcome, len(batch))
			p.bombRefused(t, r, resp, "enc")
		}})
	// 9. The same growth uncompressed, behind a one-record batch: the direct codec sizes the
	// partition's buffer for every batch once sealed, and must reserve it before it is made.
	cases = append(cases, hfCase{name: "9 tiny uncompressed records after a small batch enc", limit: 40 * time.Second,
		run: func(t *testing.T, p *hfProxy, r *hfRow) {
			const n = 1_800_000
			records := append(smallBatch("v"), makeBatch(codecNone, n, emptyRecords(n))...)
			resp, outcome := p.sendProduce("p", produceRequest(9, map[string][]byte{"enc": records}), r, 35*time.Second)
			r.outcome = fmt.Sprintf("%s (%d empty values behind one record, %d bytes)", outcome, n, len(records))
			p.bombRefused(t, r, resp, "enc")
		}})
	// 10. The same records as one batch: the direct codec's view of it holds a record's offsets
	// per record, about eleven times a 7-byte record, and is reserved before it is made.
	cases = append(cases, hfCase{name: "10 tiny uncompressed records in one batch enc", limit: 40 * time.Second,
		run: func(t *testing.T, p *hfProxy, r *hfRow) {
			const n = 1_800_000
			records := makeBatch(codecNone, n, emptyRecords(n))
			resp, outcome := p.sendProduce("p", produceRequest(9, map[string][]byte{"enc": records}), r, 35*time.Second)
			r.outcome = fmt.Sprintf("%s (%d empty values, %d bytes)", outcome, n, len(records))
			p.bombRefused(t, r, resp, "enc")
		}})
	return cases
}

// taggedFieldBomb sends a frame whose body ends in a tagged-field count of 2^32-1 (the first
// request for ApiVersions, after a good ApiVersions otherwise), expects the connection closed
// within 3 s and no CPU burning over the 3 s after.
func (p *hfProxy) taggedFieldBomb(t *testing.T, r *hfRow, kind string, apiVersionsBomb []byte) {
	c, err := p.dialRawTLS("p", &r.sent)
	if err != nil {
		r.outcome = "dial: " + err.Error()
		return
	}
	defer c.Close()
	var frame []byte
	switch kind {
	case "ApiVersions v3":
		frame = apiVersionsBomb
	default:
		if err := c.hello(); err != nil {
			r.outcome = err.Error()
			return
		}
		var req kmsg.Request
		switch kind {
		case "Produce v9":
			req = produceRequest(9, map[string][]byte{"enc": smallBatch("x")})
		case "Fetch v12":
			req = fetchRequest("enc", 1<<20)
		default:
			// kmsg gives up at once on a bad top-level Fetch tag section (it knows tags there),
			// not on a struct's without known tags: a forgotten topic's.
			fr := fetchRequest("enc", 1<<20)
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic = hfForgotten
			fr.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{ft}
			req = fr
		}
		frame = c.frame(req)
		cut := len(frame) - 1 // the request's own (body) tag section
		if kind == "Fetch v12 nested" {
			// The forgotten topic: its name, an empty partition array (1), its tags (0); then
			// the rack (1) and the request's tags (0).
			cut = bytes.LastIndex(frame, []byte(hfForgotten)) + len(hfForgotten) + 1
			if !bytes.Equal(frame[cut-1:], []byte{1, 0, 1, 0}) {
				t.Fatalf("unexpected Fetch v12 ending % x", frame[cut-1:])
			}
		}
		if frame[cut] != 0 {
			t.Fatalf("%s: no empty tag section at %d", kind, cut)
		}
		// A count of 2^32-1, and nothing after it.
		frame = append(frame[:cut], 0xff, 0xff, 0xff, 0xff, 0x0f)
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	}
	start := time.Now()
	if err := c.write(frame); err != nil {
		r.outcome = "write: " + err.Error()
		return
	}
	const wait = 10 * time.Second
	_ = c.c.SetReadDeadline(start.Add(wait))
	var closedAfter time.Duration
	answer := ""
	buf := make([]byte, 4096)
	for closedAfter == 0 {
		n, err := c.c.Read(buf)
		if n > 0 && answer == "" {
			answer = fmt.Sprintf("an answer of %d bytes, ", n)
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				break
			}
			closedAfter = time.Since(start)
		}
	}
	cpu0 := p.watch.cpuNow()
	time.Sleep(3 * time.Second)
	burn := p.watch.cpuNow() - cpu0
	if closedAfter > 0 {
		r.outcome = fmt.Sprintf("%sconnection closed after %.1f s; %.2f s CPU in the 3 s after", answer, closedAfter.Seconds(), burn)
	} else {
		r.outcome = fmt.Sprintf("%sstill open after %.0f s; %.2f s CPU in the 3 s after (still burning)", answer, wait.Seconds(), burn)
	}
	r.expect(t, closedAfter > 0 && closedAfter <= 3*time.Second, "the connection was not closed within 3 s (%s)", r.outcome)
	r.expect(t, burn < 0.5, "the proxy burned %.2f s of CPU in the 3 s after", burn)
}

// announcedFlood: n connections each send a good ApiVersions, then the first 26 bytes of a
// Fetch v12 request announcing about mib MiB, and hold. The proxy's RSS and heap in use are
// measured while they are held.
func (p *hfProxy) announcedFlood(t *testing.T, r *hfRow, mib, n int) {
	var conns []*rawConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	closedEarly := 0
	for i := range n {
		c, err := p.dialRawTLS("p", &r.sent)
		if err != nil {
			r.outcome = fmt.Sprintf("dial %d: %v", i, err)
			return
		}
		conns = append(conns, c)
		if err := c.hello(); err != nil {
			r.outcome = fmt.Sprintf("connection %d: %v", i, err)
			return
		}
		frame := c.frame(fetchRequest("enc", 1<<20))
		binary.BigEndian.PutUint32(frame, uint32(mib<<20-64))
		if err := c.write(frame[:26]); err != nil {
			closedEarly++
		}
	}
	time.Sleep(2 * time.Second)
	_, rss, _ := procMem(p.cmd.Process.Pid)
	heap, _ := metricValue(p.mgmt, "go_memstats_heap_inuse_bytes")
	// Which connections has the proxy closed meanwhile?
	for _, c := range conns {
		_ = c.c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.c.Read(make([]byte, 1)); err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				closedEarly++
			}
		}
	}
	r.outcome = fmt.Sprintf("held 2 s: RSS %.0f MiB, heap in use %.0f MiB; %d of %d connections closed by the proxy", float64(rss)/(1<<20), heap/(1<<20), closedEarly, n)
	r.expect(t, heap < hfMaxRSS, "heap in use %.0f MiB while %d announced frames are held, want < %d MiB", heap/(1<<20), n, hfMaxRSS>>20)
}

// produceByTopicID sends a Produce v13 naming "enc-ids" by its id only, its record a plaintext
// marker. Unless learned, no metadata through the proxy named the id: the proxy answers
// UNKNOWN_TOPIC_ID and forwards nothing. When learned, a Metadata request on the same connection
// named it first: the record is written, encrypted. Either way the marker never reaches the
// broker.
func (p *hfProxy) produceByTopicID(t *testing.T, r *hfRow, learned bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	direct := []kgo.Opt{kgo.SeedBrokers(p.kfake.ListenAddrs()...)}
	cl, err := kgo.NewClient(direct...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, "enc-ids")
	if err != nil || topics["enc-ids"].Err != nil {
		t.Fatalf("the id of enc-ids: %v %v", err, topics["enc-ids"].Err)
	}
	id := topics["enc-ids"].ID
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(13)
	req.Acks, req.TimeoutMillis = -1, 10000
	tp := kmsg.NewProduceRequestTopic()
	tp.TopicID = id
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = 0, smallBatch(hfMarker)
	tp.Partitions = []kmsg.ProduceRequestTopicPartition{pp}
	req.Topics = []kmsg.ProduceRequestTopic{tp}
	resp, outcome := p.produceAfterMetadata(req, learned, r)
	inLog := false
	for _, rec := range proxytest.StoredRecords(ctx, t, direct, "enc-ids") {
		if bytes.Contains(rec.Value, []byte(hfMarker)) {
			inLog = true
		}
	}
	r.outcome = fmt.Sprintf("%s; marker in the broker's log: %v; forwarded bytes for the id: %d", outcome, inLog, p.forwarded.idBytes(id))
	r.expect(t, !inLog && !p.forwarded.sawMarker(hfMarker), "the plaintext reached the broker")
	want := kerr.UnknownTopicID.Code
	if learned {
		want = 0
	}
	ok := resp != nil && len(resp.Topics) == 1 && resp.Topics[0].TopicID == id && resp.Topics[0].Partitions[0].ErrorCode == want
	r.expect(t, ok, "the Produce v13 by id got %s, want %s for the id", outcome, codeName(want))
	r.expect(t, (p.forwarded.idBytes(id) > 0) == learned, "%d bytes forwarded for the id (learned: %v)", p.forwarded.idBytes(id), learned)
}

// produceAfterMetadata sends req on a new connection to p after ApiVersions and, when
// metadata, a Metadata v12 request for "enc-ids"; it describes the answer, nil when there was
// none.
func (p *hfProxy) produceAfterMetadata(req *kmsg.ProduceRequest, metadata bool, r *hfRow) (*kmsg.ProduceResponse, string) {
	c, err := p.dialRawTLS("p", &r.sent)
	if err != nil {
		return nil, "dial: " + err.Error()
	}
	defer c.Close()
	if err := c.hello(); err != nil {
		return nil, err.Error()
	}
	if metadata {
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(12)
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("enc-ids")
		md.Topics = []kmsg.MetadataRequestTopic{mt}
		if _, err := c.roundTrip(md, 10*time.Second); err != nil {
			return nil, "Metadata: " + describeErr(err)
		}
	}
	resp, err := c.roundTrip(req, 15*time.Second)
	if err != nil {
		return nil, describeErr(err)
	}
	pr := resp.(*kmsg.ProduceResponse)
	s, _ := produceCodes(pr)
	return pr, s
}

// manyTopics sends one Produce naming 5,000 random legal topics and 50 illegal names to the
// Vault-backed virtual cluster v, and counts the Vault calls it causes.
func (p *hfProxy) manyTopics(t *testing.T, r *hfRow) {
	p.goodClusters = []string{"p", "v"}
	topics := map[string][]byte{}
	batch := smallBatch("v")
	for range 5000 {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		topics["t-"+hex.EncodeToString(b)] = batch
	}
	illegal := []string{"../x/0?y#z", "..", ".", "a/b", "x#y", "q?r", "with space", strings.Repeat("a", 300), "tab\tname", "%2e%2e", "ünïcode"}
	for i := len(illegal); i < 50; i++ {
		illegal = append(illegal, fmt.Sprintf("../x/%d?y#z", i))
	}
	for _, n := range illegal {
		topics[n] = batch
	}
	before := p.vault.snapshot()
	resp, outcome := p.sendProduce("v", produceRequest(9, topics), r, 50*time.Second)
	after := p.vault.snapshot()
	calls, illegalCalls := after.calls-before.calls, after.illegal-before.illegal
	r.outcome = fmt.Sprintf("%s; %d KMS calls (%d for illegal names)", outcome, calls, illegalCalls)
	r.expect(t, calls <= hfMaxKMSCalls, "one request caused %d KMS calls, want <= %d", calls, hfMaxKMSCalls)
	r.expect(t, illegalCalls == 0, "%d KMS calls for illegal topic names", illegalCalls)
	if resp != nil {
		for _, tp := range resp.Topics {
			if isLegalTopic(tp.Topic) {
				continue
			}
			for _, pp := range tp.Partitions {
				if pp.ErrorCode == 0 {
					r.expect(t, false, "illegal topic %q was accepted", tp.Topic)
				}
			}
		}
	}
}

var legalTopicChars = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// isLegalTopic is Kafka's rule for topic names.
func isLegalTopic(s string) bool { return s != "." && s != ".." && legalTopicChars.MatchString(s) }

// hfForgotten names the forgotten topic whose tag section the nested Fetch bomb corrupts.
const hfForgotten = "forgotten-topic"

// vaultStandIn answers the three transit endpoints the filter calls, from Vault's API
// documentation, and counts every call. KEK_enc exists; no other key does.
type vaultStandIn struct {
	srv     *httptest.Server
	calls   atomic.Int64
	illegal atomic.Int64
	mu      sync.Mutex
	deks    map[string][]byte
}

type vaultCounts struct{ calls, illegal int64 }

func (v *vaultStandIn) snapshot() vaultCounts {
	return vaultCounts{v.calls.Load(), v.illegal.Load()}
}

func newVaultStandIn(t *testing.T) *vaultStandIn {
	v := &vaultStandIn{deks: map[string][]byte{}}
	v.srv = httptest.NewServer(http.HandlerFunc(v.serve))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *vaultStandIn) serve(w http.ResponseWriter, req *http.Request) {
	v.calls.Add(1)
	if req.Header.Get("X-Vault-Token") != "hostile-token" {
		http.Error(w, `{"errors":["permission denied"]}`, http.StatusForbidden)
		return
	}
	path := req.URL.EscapedPath()
	rest, ok := strings.CutPrefix(path, "/v1/transit/")
	if !ok {
		http.NotFound(w, req)
		return
	}
	op, escName, _ := strings.Cut(rest, "/")
	if op == "datakey" {
		escName, _ = strings.CutPrefix(escName, "plaintext/")
	}
	name, err := url.PathUnescape(escName)
	if err != nil {
		name = escName
	}
	if !isLegalTopic(strings.TrimPrefix(name, "KEK_")) {
		v.illegal.Add(1)
	}
	if name != "KEK_enc" {
		http.Error(w, `{"errors":[]}`, http.StatusNotFound)
		return
	}
	reply := func(data map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
	}
	switch {
	case op == "keys" && req.Method == http.MethodGet:
		reply(map[string]any{"name": name, "type": "aes256-gcm96"})
	case op == "datakey" && req.Method == http.MethodPost:
		dek := make([]byte, 32)
		_, _ = rand.Read(dek)
		id := make([]byte, 12)
		_, _ = rand.Read(id)
		ct := "vault:v1:" + base64.StdEncoding.EncodeToString(id)
		v.mu.Lock()
		v.deks[ct] = dek
		v.mu.Unlock()
		reply(map[string]any{"plaintext": base64.StdEncoding.EncodeToString(dek), "ciphertext": ct})
	case op == "decrypt" && req.Method == http.MethodPost:
		var body struct {
			Ciphertext string `json:"ciphertext"`
		}
		_ = json.NewDecoder(req.Body).Decode(&body)
		v.mu.Lock()
		dek, ok := v.deks[body.Ciphertext]
		v.mu.Unlock()
		if !ok {
			http.Error(w, `{"errors":["invalid ciphertext"]}`, http.StatusBadRequest)
			return
		}
		reply(map[string]any{"plaintext": base64.StdEncoding.EncodeToString(dek)})
	default:
		http.NotFound(w, req)
	}
}
