package binding_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kafkalink/kafkalink/test/framework"
)

// writeFloor is what this API server takes from a plain client: n small Secrets created by 16
// workers with no client-side rate limit. It is the floor for the operator, which makes about
// two writes per connection (its Secret and its status); the bench compares the two.
func writeFloor(b *testing.B, cp *framework.ControlPlane, n int) (perSecond float64) {
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS = -1 // no client-side limiter: the server's Priority and Fairness alone
	client, err := kubernetes.NewForConfig(cfg)
	must(b, err)
	ctx := context.Background()
	const ns = "floor"
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must(b, err)
	start := time.Now()
	parallel(b, n, 16, func(i int) error {
		_, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("floor-%05d", i)},
			Data:       map[string][]byte{"password": []byte("0123456789abcdef")},
		}, metav1.CreateOptions{})
		return err
	})
	took := time.Since(start)
	// Gone again, so the operator's run is measured on the same store size as before.
	must(b, client.CoreV1().Secrets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	return float64(n) / took.Seconds()
}

// phaseWrites are the operator's writes between two counts of the audit log.
type phaseWrites struct {
	name   string
	events []framework.AuditEvent
}

// printWrites prints, per phase, the operator's writes by kind and per connection; the writes the
// API server refused (a conflict from a stale cache costs as much as a write) are counted apart,
// by status code.
func printWrites(phases []phaseWrites, n int) {
	fmt.Printf("  operator writes by phase (audit log), per connection of %d:\n", n)
	fmt.Printf("    %-22s %-38s %8s %8s\n", "phase", "write", "count", "per conn")
	for _, p := range phases {
		kinds := framework.WritesByKind(p.events)
		for _, e := range p.events {
			if e.ResponseStatus.Code >= 300 {
				kinds[fmt.Sprintf("%s (%d)", writeKind(e), e.ResponseStatus.Code)]++
			}
		}
		names := make([]string, 0, len(kinds))
		for k := range kinds {
			names = append(names, k)
		}
		sort.Strings(names)
		if len(names) == 0 {
			fmt.Printf("    %-22s %-38s %8d %8.2f\n", p.name, "(none)", 0, 0.0)
		}
		for _, k := range names {
			fmt.Printf("    %-22s %-38s %8d %8.2f\n", p.name, k, kinds[k], float64(kinds[k])/float64(n))
		}
	}
}

// writeKind is the kind WritesByKind counts e under.
func writeKind(e framework.AuditEvent) string {
	for k := range framework.WritesByKind([]framework.AuditEvent{e}) {
		return k
	}
	return "?"
}

// printReads prints the operator's reads by verb, resource and query (values of resourceVersion,
// resourceVersionMatch, limit and sendInitialEvents kept, others dropped), to show how it lists:
// from the watch cache or etcd, paged or not, and whether it reads objects one by one. A watch
// counts once (at the end of its response, or its start while it is still open).
func printReads(events []framework.AuditEvent, n int) {
	counts := map[string]int{}
	for _, e := range events {
		if e.Verb == "watch" && e.Stage == "ResponseComplete" {
			continue
		}
		counts[readKind(e)]++
	}
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Printf("  operator reads from start to all Ready (audit log), per connection of %d:\n", n)
	for _, k := range names {
		fmt.Printf("    %-100s %6d %8.3f\n", k, counts[k], float64(counts[k])/float64(n))
	}
}

func readKind(e framework.AuditEvent) string {
	kind := writeKind(e)
	if strings.HasSuffix(kind, " ?") { // not namespaced: the whole path
		path, _, _ := strings.Cut(e.RequestURI, "?")
		kind = e.Verb + " " + path
	}
	_, query, _ := strings.Cut(e.RequestURI, "?")
	values, err := url.ParseQuery(query)
	if err != nil {
		return kind
	}
	var kept []string
	for _, key := range []string{"resourceVersion", "resourceVersionMatch", "limit", "sendInitialEvents", "watch"} {
		if v, ok := values[key]; ok {
			kept = append(kept, key+"="+strings.Join(v, ","))
		}
	}
	return kind + " " + strings.Join(kept, "&")
}

// heapTop saves the operator's heap profile (served with --profiling on metrics), taken after a
// forced collection so in-use space is what is live, and prints `go tool pprof -top` of it by
// in-use and by allocated space. It returns go_memstats_heap_alloc_bytes read right after the
// collection, before printing (which takes seconds while the operator goes on allocating).
func heapTop(b *testing.B, metrics, binary, label string) (live int64) {
	file, err := saveProfile(metrics, "heap?gc=1", "heap-"+label)
	if err != nil {
		b.Logf("heap profile: %v", err)
		return 0
	}
	live = heapAlloc(b, metrics)
	for _, index := range []string{"inuse_space", "alloc_space"} {
		printTop(b, binary, file, fmt.Sprintf("heap %s, %s", label, index), "-sample_index="+index)
	}
	return live
}

// cpuTop profiles the operator's CPU for the given time from now, in the background, when
// BINDING_BENCH_OPERATOR_PROFILE is set; the returned function waits for the profile and prints
// its top functions. Off by default: the profiler's cost would be in the operator's CPU figures.
func cpuTop(b *testing.B, metrics, binary string, d time.Duration) (print func()) {
	if os.Getenv("BINDING_BENCH_OPERATOR_PROFILE") == "" {
		return func() {}
	}
	done := make(chan string, 1)
	go func() {
		for range 100 { // the operator's metrics listener opens shortly after it starts
			if resp, err := metricsClient.Get("http://" + metrics + "/metrics"); err == nil {
				resp.Body.Close()
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		file, err := saveProfile(metrics, fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), "cpu")
		if err != nil {
			b.Logf("CPU profile: %v", err)
		}
		done <- file
	}()
	return func() {
		if file := <-done; file != "" {
			printTop(b, binary, file, fmt.Sprintf("CPU, first %s after start", d))
		}
	}
}

// saveProfile saves the operator's pprof endpoint path to a file in the temporary directory.
func saveProfile(metrics, path, label string) (string, error) {
	resp, err := http.Get("http://" + metrics + "/debug/pprof/" + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	file := filepath.Join(os.TempDir(), fmt.Sprintf("kafkalink-operator-%s-%d.pb.gz", label, time.Now().Unix()))
	out, err := os.Create(file)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(out, resp.Body)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return file, err
}

// printTop prints `go tool pprof -top` of a saved profile.
func printTop(b *testing.B, binary, file, title string, args ...string) {
	cmd := exec.Command("go", append(append([]string{"tool", "pprof", "-top", "-nodecount=15"}, args...), binary, file)...)
	top, err := cmd.CombinedOutput()
	if err != nil {
		b.Logf("pprof: %v\n%s", err, top)
		return
	}
	fmt.Printf("  %s (profile %s):\n%s", title, file, indent(string(top)))
}

func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

// heapAlloc is the operator's go_memstats_heap_alloc_bytes: right after heapTop's forced
// collection, about its live heap (with what it allocated during the collection's concurrent
// mark, which counts as live for that cycle). Zero when the metric cannot be read.
func heapAlloc(b *testing.B, metrics string) int64 {
	resp, err := metricsClient.Get("http://" + metrics + "/metrics")
	if err != nil {
		b.Logf("metrics: %v", err)
		return 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_alloc_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int64(f)
			}
		}
	}
	return 0
}

// apiserverCPUTop profiles kube-apiserver's CPU (its /debug/pprof, on by default) for d from now,
// in the background, when BINDING_BENCH_APISERVER_PROFILE is set (to the seconds; it overrides d); the returned function waits
// for the profile and prints its top functions, flat and cumulative. Off by default: the
// profiler's own cost would be in the CPU figures.
func apiserverCPUTop(b *testing.B, cp *framework.ControlPlane, d time.Duration) (print func()) {
	secs, err := strconv.Atoi(os.Getenv("BINDING_BENCH_APISERVER_PROFILE"))
	if err != nil || secs <= 0 {
		return func() {}
	}
	d = time.Duration(secs) * time.Second
	done := make(chan string, 1)
	go func() {
		file, err := saveAPIServerProfile(cp, d)
		if err != nil {
			b.Logf("kube-apiserver CPU profile: %v", err)
		}
		done <- file
	}()
	return func() {
		if file := <-done; file != "" {
			binary := filepath.Join(os.Getenv("KAFKALINK_CONTROLPLANE_BIN"), "kube-apiserver")
			printTop(b, binary, file, fmt.Sprintf("kube-apiserver CPU, first %s after the operator's start", d), "-nodecount=40")
			printTop(b, binary, file, fmt.Sprintf("kube-apiserver CPU, first %s after the operator's start, cumulative", d), "-cum")
		}
	}
}

// saveAPIServerProfile profiles kube-apiserver's CPU for d and saves the profile to a file.
func saveAPIServerProfile(cp *framework.ControlPlane, d time.Duration) (string, error) {
	raw, err := cp.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(int(d.Seconds()))).Timeout(d + time.Minute).DoRaw(context.Background())
	if err != nil {
		return "", err
	}
	file := filepath.Join(os.TempDir(), fmt.Sprintf("kube-apiserver-cpu-%d.pb.gz", time.Now().UnixNano()))
	return file, os.WriteFile(file, raw, 0o600)
}

// printAPIServerTop prints a kube-apiserver CPU profile's top functions, flat and cumulative.
func printAPIServerTop(b *testing.B, file, when string) {
	binary := filepath.Join(os.Getenv("KAFKALINK_CONTROLPLANE_BIN"), "kube-apiserver")
	printTop(b, binary, file, "kube-apiserver CPU, "+when, "-nodecount=40")
	printTop(b, binary, file, "kube-apiserver CPU, "+when+", cumulative", "-cum", "-nodecount=60")
}
