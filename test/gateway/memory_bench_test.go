package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kafkalink/kafkalink/test/framework"
)

// BenchmarkOperatorMemory20kSecrets measures the operator binary's memory in a cluster holding
// 20,000 Secrets of 4 KiB that no kafkalink object names, beside one small gateway: heap in use
// and resident set after the caches synced and the gateway was programmed, read from the
// operator's /metrics. The unrelated Secrets hold 80 MiB of data; an operator that caches only
// what it uses stays far below that.
//
//	go test -count=1 -run '^$' -bench BenchmarkOperatorMemory20kSecrets -benchtime=1x ./test/gateway/
func BenchmarkOperatorMemory20kSecrets(b *testing.B) {
	const secrets, size = 20000, 4096
	ctx := context.Background()
	ns := "bench-memory"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// The shared operator would cache the Secrets too and compete for the CPU.
	if err := op.p.Stop(15 * time.Second); err != nil {
		b.Fatal(err)
	}
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	fast, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	payload := []byte(strings.Repeat("x", size))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < secrets; i += 16 {
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%05d", i)}, Data: map[string][]byte{"data": payload}}
				if _, err := fast.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	apply(b, fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata: {name: cert, namespace: %[1]s}
stringData: {tls.crt: CERT, tls.key: KEY}
---
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGateway
metadata: {name: gw, namespace: %[1]s}
spec:
  listeners:
  - name: one
    port: 9092
    protocol: kroxylicious.io/kafka-tls
    tls:
      certificateRefs: [{name: cert}]
`, ns))

	b.ResetTimer()
	health, metrics := framework.FreeAddress(), framework.FreeAddress()
	p, err := framework.StartProcess(workDir, "operator-memory", binary,
		"--kubeconfig="+kubeconfig, "--health-address="+health, "--metrics-address="+metrics, "--leader-elect=false")
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = p.Stop(10 * time.Second)
		if op, err = startOperator("operator"); err != nil {
			b.Error(err)
		}
	}()
	if err := framework.WaitHTTP200(ctx, "http://"+health+"/readyz", 5*time.Minute); err != nil {
		b.Fatalf("%v\n%s", err, p.Log())
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		gw, err := kl.KroxyliciousV1alpha1().KafkaGateways(ns).Get(ctx, "gw", metav1.GetOptions{})
		if err == nil && len(gw.Status.Listeners) == 1 && len(gw.Status.Conditions) > 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the gateway has no status after 5 minutes\n%s", p.Log())
		}
		time.Sleep(500 * time.Millisecond)
	}
	b.StopTimer()
	// Let the garbage collector catch up with the initial lists, then take the last of a few samples.
	var heap, rss float64
	for range 10 {
		time.Sleep(time.Second)
		m, err := scrape("http://" + metrics + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		heap, rss = m["go_memstats_heap_inuse_bytes"], m["process_resident_memory_bytes"]
	}
	b.ReportMetric(heap/(1<<20), "MiB-heap-inuse")
	b.ReportMetric(rss/(1<<20), "MiB-rss")
	b.Logf("%d unrelated Secrets of %d bytes: operator heap in use %.1f MiB, resident %.1f MiB", secrets, size, heap/(1<<20), rss/(1<<20))
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		b.Error(err)
	}
}

// scrape reads the untyped samples of a Prometheus text page, by metric name without labels.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}
