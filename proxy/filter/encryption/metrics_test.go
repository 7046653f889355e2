package encryption

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafkalink/kafkalink/proxy/filter"
)

// scrape is every series of the filter's metrics of virtual cluster vc, as a proxy's /metrics
// has them, by name and labels ("name{label=value,...}", labels sorted, virtual_cluster left
// out).
func scrape(t *testing.T, vc string) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(filter.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			ours := false
			for _, l := range m.GetLabel() {
				if l.GetName() == "virtual_cluster" {
					ours = l.GetValue() == vc
					continue
				}
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			if ours {
				out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// newFilterIn is the filter of virtual cluster vc with a Secret KMS holding KEK_secrets.
func newFilterIn(t *testing.T, vc, extra string) *encryptor {
	t.Helper()
	dir := t.TempDir()
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	if err := os.WriteFile(filepath.Join(dir, "KEK_secrets"), k, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := filter.New("RecordEncryption", json.RawMessage(fmt.Sprintf(`{"kms":"KubernetesSecretKms","kmsConfig":{"keyDir":%q},"selector":"TemplateKekSelector","selectorConfig":{"template":"KEK_$(topicName)"}%s}`, dir, extra)),
		filter.Env{ReadFile: os.ReadFile, VirtualCluster: vc})
	if err != nil {
		t.Fatal(err)
	}
	return f.(*encryptor)
}

// TestMetricsCountWhatTheFilterDid: produced records are counted as encrypted by topic, those of
// topics without a KEK as unencrypted in the one series topic="" (tombstones of a topic with a
// KEK under its name), fetched ones as decrypted; KMS calls by operation and outcome, DEKs made,
// and cache look-ups by result. The fixed series are there at 0 from the build on.
func TestMetricsCountWhatTheFilterDid(t *testing.T) {
	e := newFilterIn(t, "orders-vc", "")
	defer e.Close()
	start := scrape(t, "orders-vc")
	for _, series := range []string{
		"kafkalink_proxy_encryption_kms_operations_total{operation=decrypt_dek,outcome=refused}",
		"kafkalink_proxy_encryption_kms_operations_total{operation=exists,outcome=throttled}",
		"kafkalink_proxy_encryption_deks_created_total{}",
		"kafkalink_proxy_encryption_cache_lookups_total{cache=decrypted_dek,result=hit}",
		"kafkalink_proxy_encryption_records_unencrypted_total{topic=}",
	} {
		if v, ok := start[series]; !ok || v != 0 {
			t.Errorf("right after the build, %s is %v (present %v), want 0", series, v, ok)
		}
	}

	enc := encrypted(t, e, "secrets", batch(t, 0, []byte("a"), nil, []byte("b"), []byte("c")))
	encrypted(t, e, "secrets", batch(t, 0, []byte("d")))
	for _, topic := range []string{"public", "other"} {
		encrypted(t, e, topic, batch(t, 0, []byte("x"), []byte("y")))
	}
	reader := newFilterIn(t, "orders-vc", "") // another replica's filter in the same virtual cluster
	defer reader.Close()
	reader.kms = e.kms
	for range 2 {
		if p := fetched(t, reader, "secrets", enc); p.ErrorCode != 0 {
			t.Fatalf("fetch error %d", p.ErrorCode)
		}
	}
	got := scrape(t, "orders-vc")
	for series, want := range map[string]float64{
		"kafkalink_proxy_encryption_records_encrypted_total{topic=secrets}":                   4,
		"kafkalink_proxy_encryption_records_unencrypted_total{topic=secrets}":                 1,
		"kafkalink_proxy_encryption_records_unencrypted_total{topic=}":                        4,
		"kafkalink_proxy_encryption_records_decrypted_total{topic=secrets}":                   6,
		"kafkalink_proxy_encryption_kms_operations_total{operation=exists,outcome=ok}":        2, // one per filter
		"kafkalink_proxy_encryption_kms_operations_total{operation=exists,outcome=not_found}": 2,
		"kafkalink_proxy_encryption_kms_operations_total{operation=generate_dek,outcome=ok}":  1,
		"kafkalink_proxy_encryption_kms_operations_total{operation=decrypt_dek,outcome=ok}":   1,
		"kafkalink_proxy_encryption_deks_created_total{}":                                     1,
		"kafkalink_proxy_encryption_cache_lookups_total{cache=kek_exists,result=miss}":        4,
		"kafkalink_proxy_encryption_cache_lookups_total{cache=kek_exists,result=hit}":         2,
		"kafkalink_proxy_encryption_cache_lookups_total{cache=decrypted_dek,result=miss}":     1,
		"kafkalink_proxy_encryption_cache_lookups_total{cache=decrypted_dek,result=hit}":      1,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
	for series := range got {
		if strings.Contains(series, "topic=public") || strings.Contains(series, "topic=other") {
			t.Errorf("a topic without a KEK has a series of its own: %s", series)
		}
	}
}

// TestMetricsOutcomesOfFailures: a KMS that cannot answer, a KEK the KMS says is gone, and a
// KMS that refuses are each counted under their outcome.
func TestMetricsOutcomesOfFailures(t *testing.T) {
	e := newFilterIn(t, "failures-vc", "")
	defer e.Close()
	c := &countingKMS{KMS: e.kms}
	e.kms = c
	c.down = true
	produceOnce(t, e, "secrets")
	c.down = false
	for _, err := range []error{ErrKMSRefused, ErrKEKNotFound} {
		c.generateErr = err
		e.rememberKEK("KEK_secrets", true) // as seen before the KMS changed its answer
		produceOnce(t, e, "secrets")
	}
	e.guard.limiter.SetBurst(0)
	produceOnce(t, e, "unseen")
	got := scrape(t, "failures-vc")
	for series, want := range map[string]float64{
		"kafkalink_proxy_encryption_kms_operations_total{operation=exists,outcome=unavailable}":       1,
		"kafkalink_proxy_encryption_kms_operations_total{operation=generate_dek,outcome=refused}":     1,
		"kafkalink_proxy_encryption_kms_operations_total{operation=generate_dek,outcome=not_found}":   1,
		"kafkalink_proxy_encryption_kms_operations_total{operation=exists,outcome=throttled}":         1,
		"kafkalink_proxy_encryption_kms_operations_total{operation=generate_dek,outcome=unavailable}": 0,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
}

func produceOnce(t *testing.T, e *encryptor, topic string) {
	t.Helper()
	if err := e.OnRequest(context.Background(), produce(topic, batch(t, 0, []byte("v")))); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsLeaveWithTheirVirtualCluster: a reload builds a virtual cluster's new chain before
// it closes the old one, so closing the old filter keeps the series the new one counts in; once
// the last filter of the virtual cluster is closed (the virtual cluster was dropped), its series
// are gone, and other virtual clusters' stay.
func TestMetricsLeaveWithTheirVirtualCluster(t *testing.T) {
	old := newFilterIn(t, "reloaded-vc", "")
	other := newFilterIn(t, "other-vc", "")
	defer other.Close()
	encrypted(t, old, "secrets", batch(t, 0, []byte("v")))
	replacement := newFilterIn(t, "reloaded-vc", "")
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil { // closed twice (an aborted plan, then a retired chain): counted once
		t.Fatal(err)
	}
	encrypted(t, replacement, "secrets", batch(t, 0, []byte("w")))
	if got := scrape(t, "reloaded-vc")["kafkalink_proxy_encryption_records_encrypted_total{topic=secrets}"]; got != 2 {
		t.Errorf("after the old chain closed, records encrypted = %v, want 2", got)
	}
	if err := replacement.Close(); err != nil {
		t.Fatal(err)
	}
	if got := scrape(t, "reloaded-vc"); len(got) != 0 {
		t.Errorf("the dropped virtual cluster still has %d series: %v", len(got), got)
	}
	if len(scrape(t, "other-vc")) == 0 {
		t.Error("another virtual cluster's series went too")
	}
}
