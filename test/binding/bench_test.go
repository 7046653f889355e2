package binding_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	"github.com/kafkalink/kafkalink/internal/procstat"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/test/framework"
)

// BenchmarkFiveThousandConnections measures the operator binary against the local control plane:
// how long 5,000 KafkaConnections (each with its own SCRAM KafkaUser and Secret, all on one Kafka)
// take to become Ready from an operator start, the operator's peak memory, how long a cluster CA
// renewal takes to reach all 5,000 binding Secrets, and the writes an idle operator makes in 60 s.
// It runs the operator at 1,000 and 2,000 connections too, on a fresh control plane each, and
// prints the three side by side, so growth with size can be read off. It prints figures; run it with
//
//	go test -run '^$' -bench FiveThousand -benchtime 1x -timeout 60m ./test/binding/
//
// BINDING_BENCH_CONNECTIONS changes the counts (comma-separated, ascending; "200" for a quick
// try), BINDING_BENCH_ARGS adds operator flags, BINDING_BENCH_IDLE the idle phase's seconds (60),
// BINDING_BENCH_OPERATOR_PROFILE=1 profiles the operator's CPU for its first 15 s and
// BINDING_BENCH_APISERVER_PROFILE=<seconds> kube-apiserver's (both off by default: a profiler's
// cost would be in the figures).
func BenchmarkFiveThousandConnections(b *testing.B) {
	sizes := []int{1000, 2000, 5000}
	if v := os.Getenv("BINDING_BENCH_CONNECTIONS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(f); err == nil && n > 0 {
				sizes = append(sizes, n)
			}
		}
	}
	var scale []benchFigures
	for _, n := range sizes {
		b.Run(fmt.Sprintf("operator-%d", n), func(b *testing.B) {
			for range b.N {
				scale = append(scale, benchConnections(b, n, "./cmd/kafkalink-operator"))
			}
		})
	}
	// The same operator with the binding controller alone, at the largest size: the gateway
	// controller caches every Secret of the cluster, which at this scale weighs on memory.
	b.Run(fmt.Sprintf("binding-only-%d", sizes[len(sizes)-1]), func(b *testing.B) {
		for range b.N {
			benchConnections(b, sizes[len(sizes)-1], "./test/binding/bindingonly")
		}
	})
	printScale(scale)
}

// printScale prints the operator's figures at each size, each per 1,000 connections, and the
// memory each row adds per added connection (growth that stays flat is linear).
func printScale(scale []benchFigures) {
	if len(scale) < 2 {
		return
	}
	fmt.Println("\nkafkalink-operator by size (default flags; per 1k = the figure per 1,000 connections; per added connection = growth from the row above):")
	fmt.Println("| connections | to Ready s | per 1k | CA renewal s | per 1k | peak RSS MiB | KiB per added connection | live heap at Ready MB | KiB per added connection | writes to Ready | per connection | kube-apiserver CPU ms per connection | idle writes |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for i, f := range scale {
		k := float64(f.n) / 1000
		addedRSS, addedLive := "-", "-"
		if i > 0 {
			added := float64(f.n - scale[i-1].n)
			addedRSS = fmt.Sprintf("%.1f", float64(f.hwm-scale[i-1].hwm)/added)
			addedLive = fmt.Sprintf("%.1f", float64(f.live-scale[i-1].live)/1024/added)
		}
		fmt.Printf("| %d | %.1f | %.2f | %.1f | %.2f | %.1f | %s | %.1f | %s | %d | %.2f | %.2f | %d |\n", f.n, f.toReady.Seconds(), f.toReady.Seconds()/k,
			f.toRenew.Seconds(), f.toRenew.Seconds()/k, float64(f.hwm)/1024, addedRSS, float64(f.live)/1e6, addedLive, len(f.ready),
			float64(len(f.ready))/float64(f.n), ms(f.readyCPU.apiserver)/float64(f.n), len(f.idle))
	}
}

func benchConnections(b *testing.B, n int, pkg string) benchFigures {
	ctx := context.Background()
	cp, err := framework.Start(ctx, framework.Options{StrimziVersion: "1.2.0", WithoutControllerManager: true})
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Stop()
	kubeconfig, _, err := cp.InstallOperatorRBAC(ctx)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	binary, err := framework.BuildBinary(pkg, dir)
	if err != nil {
		b.Fatal(err)
	}
	h := &harness{ctx: ctx, cp: cp, kube: cp.Client, version: "v1", dir: dir}
	if h.kl, err = kafkalinkclient.NewForConfig(cp.Config); err != nil {
		b.Fatal(err)
	}
	if h.dyn, err = dynamic.NewForConfig(cp.Config); err != nil {
		b.Fatal(err)
	}
	floor := writeFloor(b, cp, 10000)
	fmt.Printf("floor: a plain client (16 workers, no client-side limit) created 10,000 small Secrets at %.0f writes/s\n", floor)
	caOld := bindingtest.NewCA(b, "cluster-ca v0", time.Now().Add(-time.Hour))
	caNew := bindingtest.NewCA(b, "cluster-ca v1", time.Now().Add(-time.Minute))

	const ns = "bench"
	must(b, h.createNamespace(ns))
	must(b, h.createKafka(ns, "big", scram))
	must(b, h.createSecret(ns, "big-cluster-ca-cert", "big", map[string][]byte{"ca.crt": caOld.CertPEM}))

	setup := time.Now()
	parallel(b, n, 16, func(i int) error {
		user := fmt.Sprintf("user-%05d", i)
		if err := h.createReadyUser(ns, user, "big"); err != nil {
			return err
		}
		if err := h.createSecret(ns, user, "big", scramSecret("password-"+strconv.Itoa(i))); err != nil {
			return err
		}
		_, err := h.kl.KafkaV1beta2().KafkaConnections(ns).Create(ctx, connection(ns, fmt.Sprintf("app-%05d", i), "big", user, "", ""), metav1.CreateOptions{})
		return err
	})
	b.Logf("setup: %d KafkaUsers, user Secrets and KafkaConnections created in %s", n, time.Since(setup).Round(time.Millisecond))

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watched := h.watchProgress(watchCtx, ns)

	health, metrics := framework.FreeAddress(), framework.FreeAddress()
	start := time.Now()
	args := []string{"--kubeconfig=" + kubeconfig,
		// Default flags: what a user gets (issue 17); --profiling only serves heap profiles.
		"--health-address=" + health, "--metrics-address=" + metrics, "--leader-elect=false", "--v=1", "--profiling"}
	// BINDING_BENCH_ARGS adds operator flags, to try a setting (such as --workers=16).
	args = append(args, strings.Fields(os.Getenv("BINDING_BENCH_ARGS"))...)
	op, err := framework.StartProcess(dir, "operator", binary, args...)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = op.Stop(15 * time.Second) }()
	pid := framework.FindProcess(b, binary)
	cpu0 := cpuByProcess(cp, pid)
	watched.pollReady(watchCtx, metrics)
	peak := watchRSS(b, pid)
	printCPU := cpuTop(b, metrics, binary, 15*time.Second)
	printAPICPU := apiserverCPUTop(b, cp, 10*time.Second)
	waitCount(b, op, watched.ready, int64(n), "Ready connections", 30*time.Minute)
	toReady := time.Since(start)
	readyCPU := cpuByProcess(cp, pid).since(cpu0)
	readyWrites, readyReads := operatorWrites(b, cp), operatorReads(b, cp)
	h.verifyReady(b, ns, n)
	printCPU()
	printAPICPU()
	live := heapTop(b, metrics, binary, "at-ready") // after a forced collection: what is live

	must(b, h.updateSecret(ns, "big-cluster-ca-cert", map[string][]byte{
		"ca.crt": caNew.CertPEM, "ca-2025-01-01T00-00-00Z.crt": caOld.CertPEM}))
	renewal, renewCPU0 := time.Now(), cpuByProcess(cp, pid)
	watched.renewing.Store(true)
	waitCount(b, op, watched.renewed, int64(n), "binding Secrets updated", 30*time.Minute)
	renewCPU := cpuByProcess(cp, pid).since(renewCPU0)
	h.verifyRenewed(b, ns, n)
	toRenew := time.Since(renewal)
	h.metrics = "http://" + metrics + "/metrics"
	h.waitQueueDrained()
	renewalWrites := operatorWrites(b, cp)

	// Idle: nothing changes for 60 s after the queue drained (BINDING_BENCH_IDLE seconds, for
	// quicker tries).
	idle := 60 * time.Second
	if secs, err := strconv.Atoi(os.Getenv("BINDING_BENCH_IDLE")); err == nil && secs > 0 {
		idle = time.Duration(secs) * time.Second
	}
	idleCPU0 := cpuByProcess(cp, pid)
	time.Sleep(idle)
	idleCPU := cpuByProcess(cp, pid).since(idleCPU0)
	idleWrites := operatorWrites(b, cp)
	hwm, rss := framework.ProcessMemory(b, pid)
	at := peak()
	fmt.Printf("  operator RSS rose to its peak %.1fs after start (all Ready at %.1fs, CA renewal from %.1fs)\n",
		at.Seconds(), toReady.Seconds(), renewal.Sub(start).Seconds())
	f := benchFigures{pkg: pkg, n: n, floor: floor, toReady: toReady, toRenew: toRenew, hwm: hwm, rss: rss, live: live, readyCPU: readyCPU, renewCPU: renewCPU, idleCPU: idleCPU,
		idleFor: idle, readyReads: readyReads, ready: readyWrites, renewal: renewalWrites[len(readyWrites):], idle: idleWrites[len(renewalWrites):]}
	report(b, f)
	return f
}

// benchFigures are one run's results: times, memory in KiB, and the writes of each phase.
type benchFigures struct {
	pkg                  string
	n                    int
	floor                float64
	toReady, toRenew     time.Duration
	hwm, rss             int64
	live                 int64 // bytes of Go heap in use at Ready, just after a collection
	readyCPU, renewCPU   processCPU
	idleCPU              processCPU // in the idle phase
	idleFor              time.Duration
	readyReads           []framework.AuditEvent // the operator's reads from start to all Ready
	ready, renewal, idle []framework.AuditEvent
}

// watchRSS samples the resident memory of process pid every 100 ms; the returned function
// stops sampling and says when, after the call to watchRSS, it was highest.
func watchRSS(b *testing.B, pid int) (stop func() time.Duration) {
	start, done := time.Now(), make(chan time.Duration)
	quit := make(chan struct{})
	go func() {
		var most int64
		var at time.Duration
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				done <- at
				return
			case <-tick.C:
				if _, rss := framework.ProcessMemory(b, pid); rss > most {
					most, at = rss, time.Since(start)
				}
			}
		}
	}()
	return func() time.Duration { close(quit); return <-done }
}

// processCPU is the CPU time of the operator, kube-apiserver and etcd.
type processCPU struct{ operator, apiserver, etcd time.Duration }

func cpuByProcess(cp *framework.ControlPlane, operator int) processCPU {
	return processCPU{procstat.CPU(operator), procstat.CPU(cp.PID("kube-apiserver")), procstat.CPU(cp.PID("etcd"))}
}

func (c processCPU) since(before processCPU) processCPU {
	return processCPU{c.operator - before.operator, c.apiserver - before.apiserver, c.etcd - before.etcd}
}

func report(b *testing.B, f benchFigures) {
	b.ReportMetric(f.toReady.Seconds(), "s-to-ready")
	b.ReportMetric(f.toRenew.Seconds(), "s-ca-renewal")
	b.ReportMetric(float64(f.hwm)/1024, "MiB-peak-rss")
	b.ReportMetric(float64(len(f.idle)), "idle-writes")
	fmt.Printf("%s, %d KafkaConnections (one SCRAM KafkaUser each, one Kafka, PEM+PKCS12, default flags):\n", f.pkg, f.n)
	fmt.Printf("  operator start -> all Ready:        %s\n", f.toReady.Round(time.Millisecond))
	fmt.Printf("  CA renewal -> all Secrets updated:  %s\n", f.toRenew.Round(time.Millisecond))
	fmt.Printf("  operator peak RSS (VmHWM):          %.1f MiB (VmRSS now %.1f MiB)\n", float64(f.hwm)/1024, float64(f.rss)/1024)
	fmt.Printf("  operator live heap at Ready:        %.1f MB (%.2f KiB per connection)\n", float64(f.live)/1e6, float64(f.live)/1024/float64(f.n))
	fmt.Printf("  writes by the idle operator in %s: %d\n", f.idleFor, len(f.idle))
	writeRate := float64(len(f.ready)) / f.toReady.Seconds()
	fmt.Printf("  operator write rate to Ready:       %.0f writes/s (%.0f%% of the plain client's floor)\n", writeRate, 100*writeRate/f.floor)
	cores := func(d time.Duration) float64 { return d.Seconds() / f.toReady.Seconds() }
	fmt.Printf("  CPU from start to all Ready:        operator %.1f s (%.2f cores), kube-apiserver %.1f s (%.2f), etcd %.1f s (%.2f), of %d cores\n",
		f.readyCPU.operator.Seconds(), cores(f.readyCPU.operator), f.readyCPU.apiserver.Seconds(), cores(f.readyCPU.apiserver),
		f.readyCPU.etcd.Seconds(), cores(f.readyCPU.etcd), runtime.NumCPU())
	fmt.Printf("  kube-apiserver CPU per connection:  %.2f ms to Ready, %.2f ms in the CA renewal\n",
		ms(f.readyCPU.apiserver)/float64(f.n), ms(f.renewCPU.apiserver)/float64(f.n))
	// kube-apiserver spends CPU when nothing is asked of it (its own controllers, bookmarks); on a
	// busy host that stretches the phase, that part grows with the phase's length, not with the
	// connections, so it is printed apart and taken off.
	idleRate := f.idleCPU.apiserver.Seconds() / f.idleFor.Seconds()
	fmt.Printf("  kube-apiserver CPU idle:            %.2f cores; less that rate, per connection: %.2f ms to Ready, %.2f ms in the CA renewal\n",
		idleRate, (ms(f.readyCPU.apiserver)-1000*idleRate*f.toReady.Seconds())/float64(f.n),
		(ms(f.renewCPU.apiserver)-1000*idleRate*f.toRenew.Seconds())/float64(f.n))
	printWrites([]phaseWrites{{"start -> all Ready", f.ready}, {"CA renewal", f.renewal}, {"idle", f.idle}}, f.n)
	printReads(f.readyReads, f.n)
}

// operatorReads are the operator's reads so far (gets, lists, watches), from the audit log.
func operatorReads(b *testing.B, cp *framework.ControlPlane) []framework.AuditEvent {
	b.Helper()
	r, err := cp.Reads(framework.OperatorUser)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// operatorWrites are the operator's writes so far, from the API server's audit log.
func operatorWrites(b *testing.B, cp *framework.ControlPlane) []framework.AuditEvent {
	b.Helper()
	w, err := cp.Writes(framework.OperatorUser)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// waitQueueDrained waits until the operator's work queues are empty and every item is done.
func (h *harness) waitQueueDrained() {
	for range 3000 {
		adds, done, depth, err := h.queueMetrics()
		if err == nil && depth == 0 && done >= adds {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// parallel runs f(0..n-1) on workers goroutines and fails on the first error.
func parallel(b *testing.B, n, workers int, f func(i int) error) {
	b.Helper()
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || firstErr.Load() != nil {
					return
				}
				if err := f(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		b.Fatal(err)
	}
}

func waitCount(b *testing.B, op *framework.Process, counter *atomic.Int64, want int64, what string, limit time.Duration) {
	b.Helper()
	deadline := time.Now().Add(limit)
	last := time.Now()
	for counter.Load() < want {
		select {
		case <-op.Done():
			b.Fatalf("operator exited: %v\n%s", op.Err(), tail(op.Log()))
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: %d of %d after %s\n%s", what, counter.Load(), want, limit, tail(op.Log()))
		}
		if time.Since(last) > 10*time.Second {
			b.Logf("%s: %d of %d", what, counter.Load(), want)
			last = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

// progress is what the benchmark learns while the operator works: the connections Ready, and
// the binding Secrets written since the CA renewal started.
type progress struct {
	ready, renewed *atomic.Int64
	// renewing marks the start of the renewal: Secret updates before it are not counted.
	renewing atomic.Bool
}

// watchProgress counts, until ctx ends, the binding Secrets updated after the renewal starts,
// from a watch of their metadata only: the API server sends each watcher its own copy of every
// event, and a second watch of whole 5 KiB Secrets, in JSON where the operator reads protobuf,
// weighed on the figures it measures. The Ready connections are counted by pollReady. The counts
// say when to look; verifyReady and verifyRenewed check the objects themselves.
func (h *harness) watchProgress(ctx context.Context, ns string) *progress {
	p := &progress{ready: &atomic.Int64{}, renewed: &atomic.Int64{}}
	renewedSet := &sync.Map{}
	meta, err := metadata.NewForConfig(h.cp.Config)
	if err != nil {
		panic(err) // a valid rest.Config always makes a client
	}
	mf := metadatainformer.NewFilteredSharedInformerFactory(meta, 0, ns,
		func(o *metav1.ListOptions) { o.LabelSelector = "kafkalink.io/binding" })
	_, _ = mf.ForResource(corev1.SchemeGroupVersion.WithResource("secrets")).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(o, n any) {
			old, okOld := o.(*metav1.PartialObjectMetadata)
			s, okNew := n.(*metav1.PartialObjectMetadata)
			if !okOld || !okNew || !p.renewing.Load() || old.ResourceVersion == s.ResourceVersion {
				return
			}
			if _, loaded := renewedSet.LoadOrStore(s.Name, true); !loaded {
				p.renewed.Add(1)
			}
		},
	})
	mf.Start(ctx.Done())
	return p
}

// pollReady sets p.ready, every 250 ms until ctx ends, to the operator's count of Ready
// connections: kafkalink_object_conditions, which it computes from its informer cache, so from
// the statuses the API server has stored and sent it. A watch of every KafkaConnection by the
// benchmark would double the API server's watch fan-out of the status writes it measures;
// verifyReady checks the count with one paged LIST.
func (p *progress) pollReady(ctx context.Context, metrics string) {
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if n, err := readyConnections(metrics); err == nil {
					p.ready.Store(n)
				}
			}
		}
	}()
}

// metricsClient reads the operator's metrics uncompressed: Go's default client asks for gzip,
// and compressing a scrape four times a second would count in the operator's CPU figures.
var metricsClient = &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 10 * time.Second}

// readyConnections sums kafkalink_object_conditions of Ready=True KafkaConnections.
func readyConnections(metrics string) (int64, error) {
	resp, err := metricsClient.Get("http://" + metrics + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var n int64
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, "kafkalink_object_conditions{") || !strings.Contains(line, `kind="KafkaConnection"`) ||
			!strings.Contains(line, `condition="Ready"`) || !strings.Contains(line, `status="True"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, err
		}
		n += int64(v)
	}
	return n, s.Err()
}

func connectionReady(c *kafkav1beta2.KafkaConnection) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == "Ready" && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == c.Generation {
			return true
		}
	}
	return false
}

// verifyReady checks, with one paged LIST, that all n connections are Ready.
func (h *harness) verifyReady(b *testing.B, ns string, n int) {
	b.Helper()
	ready, opts := 0, metav1.ListOptions{Limit: 500}
	for {
		list, err := h.kl.KafkaV1beta2().KafkaConnections(ns).List(h.ctx, opts)
		must(b, err)
		for i := range list.Items {
			if connectionReady(&list.Items[i]) {
				ready++
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	if ready != n {
		b.Fatalf("the watch saw %d connections Ready, a LIST %d", n, ready)
	}
}

// verifyRenewed waits until a paged LIST shows every binding Secret trusting both CAs: the watch
// saw each updated once, which a renewal in two writes would also give. Bounded: 120 LISTs.
func (h *harness) verifyRenewed(b *testing.B, ns string, n int) {
	b.Helper()
	for range 120 {
		renewed, opts := 0, metav1.ListOptions{Limit: 500, LabelSelector: "kafkalink.io/binding"}
		for {
			list, err := h.kube.CoreV1().Secrets(ns).List(h.ctx, opts)
			must(b, err)
			for _, s := range list.Items {
				if len(bindingtest.PEMCertificates(s.Data["ssl.truststore.crt"])) == 2 {
					renewed++
				}
			}
			if opts.Continue = list.Continue; opts.Continue == "" {
				break
			}
		}
		if renewed == n {
			return
		}
		b.Logf("renewal: the watch saw %d Secrets updated, a LIST %d trusting both CAs", n, renewed)
		time.Sleep(500 * time.Millisecond)
	}
	b.Fatalf("renewal: not all %d Secrets trust both CAs", n)
}

// The helpers below return errors instead of failing, so they can run on many goroutines.

func (h *harness) createNamespace(name string) error {
	_, err := h.kube.CoreV1().Namespaces().Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

func (h *harness) createKafka(ns, name string, ls ...listener) error {
	var specLs, statusLs []any
	for _, l := range ls {
		specLs = append(specLs, l.spec())
		statusLs = append(statusLs, l.status(ns, name))
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kafka.strimzi.io/" + h.version, "kind": "Kafka",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"kafka": map[string]any{"listeners": specLs}},
	}}
	client := h.dyn.Resource(h.gvr("kafkas")).Namespace(ns)
	created, err := client.Create(h.ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Object["status"] = map[string]any{"observedGeneration": created.GetGeneration(), "listeners": statusLs}
	_, err = client.UpdateStatus(h.ctx, created, metav1.UpdateOptions{})
	return err
}

func (h *harness) createReadyUser(ns, name, cluster string) error {
	client := h.dyn.Resource(h.gvr("kafkausers")).Namespace(ns)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kafka.strimzi.io/" + h.version, "kind": "KafkaUser",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"strimzi.io/cluster": cluster}},
		"spec":     map[string]any{"authentication": map[string]any{"type": "scram-sha-512"}},
	}}
	created, err := client.Create(h.ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Object["status"] = map[string]any{
		"observedGeneration": created.GetGeneration(), "username": name, "secret": name,
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}},
	}
	_, err = client.UpdateStatus(h.ctx, created, metav1.UpdateOptions{})
	return err
}

func (h *harness) createSecret(ns, name, cluster string, data map[string][]byte) error {
	_, err := h.kube.CoreV1().Secrets(ns).Create(h.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"strimzi.io/cluster": cluster}},
		Data:       data,
	}, metav1.CreateOptions{})
	return err
}

func (h *harness) updateSecret(ns, name string, data map[string][]byte) error {
	s, err := h.kube.CoreV1().Secrets(ns).Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	s.Data = data
	_, err = h.kube.CoreV1().Secrets(ns).Update(h.ctx, s, metav1.UpdateOptions{})
	return err
}
