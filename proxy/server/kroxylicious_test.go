package server

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/proxytest"
)

// TestKroxyliciousFormatThroughTheProxy: one kfake topic, one Vault (the transit stand-in over
// plain HTTP), two virtual clusters with the same RecordEncryption filter: a writes kafkalink's
// format (the default), b Kroxylicious' (experimental recordFormat KROXYLICIOUS_V2). Records
// Kroxylicious wrote (proxytest's writer, a DEK from the stand-in's datakey endpoint, produced
// straight to kfake), records a wrote and records b wrote are all consumed in the clear through
// either cluster, with their own headers; what b stored reads as Kroxylicious' format with
// proxytest's reader, its DEK unwrapped by the stand-in's decrypt endpoint.
func TestKroxyliciousFormatThroughTheProxy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	vault := startVault(t, "hvs.k")
	token := dir + "/token"
	writeAtomic(t, token, []byte("hvs.k\n"))
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, Clusters: []testCluster{
		{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0], FiltersYAML: encryptWith(vault, token, "")},
		{Name: "b", Prefix: "b", Target: kc.ListenAddrs()[0], FiltersYAML: encryptWith(vault, token, ", experimental: {recordFormat: KROXYLICIOUS_V2}")},
	}}
	p := startProxy(t, writeConfig(t, dir, pc))
	direct := []kgo.Opt{kgo.SeedBrokers(kc.ListenAddrs()...)}
	through := func(vc string) []kgo.Opt {
		opts, _ := clientOpts(fmt.Sprintf("%s-bootstrap.kafka.test:%d", vc, pc.Port), pki.pool, "", nil)
		return opts
	}
	own := []kgo.RecordHeader{{Key: "trace", Value: []byte("t-1")}}

	produceKroxylicious(ctx, t, vault.Transit, direct, own, needle+" by Kroxylicious", needle+" by Kroxylicious, headers parcelled")
	produceRecord(ctx, t, through("a"), &kgo.Record{Value: []byte(needle + " by a"), Headers: own})
	produceRecord(ctx, t, through("b"), &kgo.Record{Value: []byte(needle + " by b"), Headers: own})

	for _, r := range proxytest.StoredRecords(ctx, t, direct, "secrets") {
		if bytes.Contains(r.Value, []byte(needle)) {
			t.Errorf("kfake holds plaintext: %q", r.Value)
		}
		if len(r.Headers) == 0 || r.Headers[0].Key != proxytest.KroxyliciousMarker {
			continue // kafkalink's format, a's
		}
		got, err := proxytest.OpenKroxylicious(r.Headers, r.Value, vault.Decrypt)
		if err != nil || !strings.HasPrefix(string(got.Value), needle) || len(got.Headers) != 1 || got.Headers[0].Key != "trace" {
			t.Errorf("a record in Kroxylicious' format in kfake reads as %q, headers %v: %v", got.Value, got.Headers, err)
		}
	}
	want := []string{needle + " by Kroxylicious", needle + " by Kroxylicious, headers parcelled", needle + " by a", needle + " by b"}
	for _, vc := range []string{"a", "b"} {
		got := consumeRecords(ctx, t, through(vc), "secrets", len(want))
		for _, w := range want {
			if h, ok := got[w]; !ok || len(h) != 1 || h[0].Key != "trace" || string(h[0].Value) != "t-1" {
				t.Errorf("through %s: %q came as %v (found %v), want it with its own header only\n%s", vc, w[len(needle):], h, ok, p.logs)
			}
		}
	}
	if n := kroxyliciousStored(ctx, t, direct); n != 3 {
		t.Errorf("kfake holds %d records in Kroxylicious' format, want 3 (two Kroxylicious wrote, one b wrote)", n)
	}
}

// produceKroxylicious writes records as Kroxylicious does straight to kfake: the first with its
// headers left in the record (Kroxylicious' default), the others with them parcelled.
func produceKroxylicious(ctx context.Context, t *testing.T, vault *proxytest.Transit, direct []kgo.Opt, own []kgo.RecordHeader, values ...string) {
	t.Helper()
	dek, wrapped, err := vault.DataKey("KEK_secrets")
	if err != nil {
		t.Fatal(err)
	}
	w := proxytest.KroxyliciousWriter{DEK: dek, KEKName: "KEK_secrets", VaultCiphertext: wrapped}
	for i, v := range values {
		w.ParcelHeaders = i > 0
		var hs []kmsg.Header
		for _, h := range own {
			hs = append(hs, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		stored, value, err := w.Seal([]byte(v), hs)
		if err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Value: value}
		for _, h := range stored {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		produceRecord(ctx, t, direct, r)
	}
}

func produceRecord(ctx context.Context, t *testing.T, opts []kgo.Opt, r *kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("secrets"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consumeRecords reads n records of topic from the start: each value with its headers.
func consumeRecords(ctx context.Context, t *testing.T, opts []kgo.Opt, topic string, n int) map[string][]kgo.RecordHeader {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string][]kgo.RecordHeader{}
	for len(got) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch error: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = r.Headers })
	}
	return got
}

// kroxyliciousStored counts the records kfake holds with Kroxylicious' marker first.
func kroxyliciousStored(ctx context.Context, t *testing.T, direct []kgo.Opt) int {
	n := 0
	for _, r := range proxytest.StoredRecords(ctx, t, direct, "secrets") {
		if len(r.Headers) > 0 && r.Headers[0].Key == proxytest.KroxyliciousMarker {
			n++
		}
	}
	return n
}
