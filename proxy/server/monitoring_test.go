package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kafkalink/kafkalink/internal/monitoringpack"
)

// TestProxyExposesEveryMetricOfTheMonitoringPack scrapes a proxy that relayed real traffic, some
// of it through the RecordEncryption filter, and refused one TLS handshake, and finds there every
// proxy metric that manifests/monitoring's rules and dashboards name (read from those files), and
// the per-request and encryption metrics with sensible values.
func TestProxyExposesEveryMetricOfTheMonitoringPack(t *testing.T) {
	proxyNames := packProxyMetrics(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf,
		Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}, encryptingCluster(t, dir, "e", kc.ListenAddrs()[0])}}
	p := startProxy(t, writeConfig(t, dir, pc))
	opts, _ := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", pc.Port), pki.pool, "", nil)
	produceConsume(t, ctx, opts, "metrics", 50)
	encrypted, _ := clientOpts(fmt.Sprintf("e-bootstrap.kafka.test:%d", pc.Port), pki.pool, "", nil)
	produceConsume(t, ctx, encrypted, "sealed", 5)
	if c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", pc.Port), &tls.Config{ServerName: "nope.kafka.test", InsecureSkipVerify: true}); err == nil {
		c.Close()
		t.Fatal("unknown SNI accepted")
	}

	url := "http://" + p.srv.ManagementAddr().String() + "/metrics"
	var exposition string
	var missing []string
	// The handshake failure is counted once the proxy's side of the handshake ends, which can be
	// after the client saw it: wait, bounded.
	for range 250 {
		exposition = httpGet(t, url)
		if missing = monitoringpack.Missing(exposition, proxyNames); len(missing) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(missing) > 0 {
		t.Fatalf("the proxy does not expose %v, which the monitoring pack uses:\n%s", missing, exposition)
	}

	for _, want := range []string{
		`kafkalink_proxy_requests_total{api="Produce",direction="in",virtual_cluster="a"}`,
		`kafkalink_proxy_requests_total{api="Produce",direction="out",virtual_cluster="a"}`,
		`kafkalink_proxy_requests_total{api="Metadata",direction="in",virtual_cluster="a"}`,
		`kafkalink_proxy_request_duration_seconds_count{api="Produce",virtual_cluster="a"}`,
		`kafkalink_proxy_node_connections_active{node_id="bootstrap",virtual_cluster="a"}`,
		`kafkalink_proxy_node_connections_active{node_id="0",virtual_cluster="a"}`,
		`kafkalink_proxy_upstream_errors_total{reason="unknown_broker",virtual_cluster="a"} 0`,
	} {
		if !strings.Contains(exposition, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	checkEncryptionMetrics(t, exposition)
	// Every response answers one request, and each was timed.
	in, out := sample(t, exposition, `kafkalink_proxy_requests_total{api="Produce",direction="in",virtual_cluster="a"}`),
		sample(t, exposition, `kafkalink_proxy_requests_total{api="Produce",direction="out",virtual_cluster="a"}`)
	timed := sample(t, exposition, `kafkalink_proxy_request_duration_seconds_count{api="Produce",virtual_cluster="a"}`)
	if in == 0 || out != in || timed != out {
		t.Errorf("Produce requests in %v, responses out %v, timed %v: want equal and non-zero (acks=all)", in, out, timed)
	}
}

// packProxyMetrics are the proxy metrics the monitoring pack's rules and dashboards name.
func packProxyMetrics(t *testing.T) []string {
	t.Helper()
	packDir, err := monitoringpack.Dir()
	if err != nil {
		t.Fatal(err)
	}
	names, err := monitoringpack.Metrics(packDir)
	if err != nil {
		t.Fatal(err)
	}
	var proxyNames []string
	for _, n := range names {
		if strings.HasPrefix(n, monitoringpack.ProxyPrefix) {
			proxyNames = append(proxyNames, n)
		}
	}
	if len(proxyNames) == 0 {
		t.Fatal("the pack names no proxy metric")
	}
	return proxyNames
}

// encryptingCluster is a virtual cluster with the RecordEncryption filter and a Secret KMS (in
// dir) that holds the KEK of topic sealed.
func encryptingCluster(t *testing.T, dir, name, target string) testCluster {
	t.Helper()
	keys := dir + "/keks"
	if err := os.MkdirAll(keys, 0o700); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, keys+"/KEK_sealed", bytes.Repeat([]byte{7}, 32))
	encrypt := fmt.Sprintf("  filters:\n  - name: encrypt\n    type: RecordEncryption\n    config: {kms: KubernetesSecretKms, kmsConfig: {keyDir: %s}, selector: TemplateKekSelector, selectorConfig: {template: \"KEK_$(topicName)\"}}\n", keys)
	return testCluster{Name: name, Prefix: name, Target: target, FiltersYAML: encrypt}
}

// checkEncryptionMetrics: the 5 records produced to sealed through virtual cluster e were
// encrypted under one DEK and came back decrypted (a retried batch or a refetch counts again),
// and the KMS's failure series are there at 0.
func checkEncryptionMetrics(t *testing.T, exposition string) {
	t.Helper()
	for _, series := range []string{`kafkalink_proxy_encryption_records_encrypted_total{topic="sealed",virtual_cluster="e"}`,
		`kafkalink_proxy_encryption_records_decrypted_total{topic="sealed",virtual_cluster="e"}`} {
		if n := sample(t, exposition, series); n < 5 {
			t.Errorf("%s = %v, want at least the 5 records produced", series, n)
		}
	}
	for series, want := range map[string]float64{
		`kafkalink_proxy_encryption_deks_created_total{virtual_cluster="e"}`:                                                 1,
		`kafkalink_proxy_encryption_kms_operations_total{operation="generate_dek",outcome="ok",virtual_cluster="e"}`:         1,
		`kafkalink_proxy_encryption_kms_operations_total{operation="decrypt_dek",outcome="unavailable",virtual_cluster="e"}`: 0,
	} {
		if got := sample(t, exposition, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}

func sample(t *testing.T, exposition, series string) float64 {
	t.Helper()
	for _, l := range strings.Split(exposition, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no sample %s", series)
	return 0
}

// BenchmarkFrameStats is the metrics cost of one relayed request and its response.
func BenchmarkFrameStats(b *testing.B) {
	m := NewMetrics()
	v := m.virtualCluster("a")
	b.ReportAllocs()
	for b.Loop() {
		v.Requested(0)
		v.Responded(0, time.Millisecond)
	}
}

// TestProfilingOnlyWhenAsked: Go's profiles are on the management port with Options.Profiling
// (--profiling) and nowhere without it.
func TestProfilingOnlyWhenAsked(t *testing.T) {
	for name, profiling := range map[string]bool{"off by default": false, "on when asked": true} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			pki := newPKI(t)
			cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
			pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf,
				Clusters: []testCluster{{Name: "a", Prefix: "a", Target: "127.0.0.1:1"}}}
			p := startProxyWith(t, Options{ConfigPath: writeConfig(t, dir, pc), Profiling: profiling})
			resp, err := http.Get("http://" + p.srv.ManagementAddr().String() + "/debug/pprof/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if served := resp.StatusCode == http.StatusOK; served != profiling {
				t.Errorf("/debug/pprof/ answered %d with Profiling %v", resp.StatusCode, profiling)
			}
		})
	}
}
