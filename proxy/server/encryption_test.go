package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalink/kafkalink/proxy/filter/encryption"
	"github.com/kafkalink/kafkalink/proxy/proxytest"
)

const needle = "the-plaintext-needle"

// TestRecordEncryptionThroughTheProxy: franz-go produces through the proxy with the
// RecordEncryption filter (Secret-backed KMS, KEK_$(topicName)), uncompressed and compressed, in
// a transaction too. The broker holds ciphertext: no record of the topic has the plaintext, every
// one carries the encryption header. Consuming through the proxy gives the original records. A
// topic without a KEK passes in the clear; a KMS that cannot answer fails produce with a
// retriable error and writes nothing.
func TestRecordEncryptionThroughTheProxy(t *testing.T) {
	dir := t.TempDir()
	keys := dir + "/keks"
	if err := os.MkdirAll(keys, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"KEK_secrets", "KEK_broken"} {
		k := make([]byte, 32)
		_, _ = rand.Read(k)
		writeAtomic(t, keys+"/"+id, []byte(base64.StdEncoding.EncodeToString(k)))
	}
	filters := fmt.Sprintf("  filters:\n  - name: encrypt\n    type: io.kroxylicious.filter.encryption.RecordEncryption\n    config: {kms: KubernetesSecretKms, kmsConfig: {keyDir: %s}, selector: TemplateKekSelector, selectorConfig: {template: \"KEK_$(topicName)\"}}\n", keys)
	f := startFilteredProxy(t, Options{}, filters)
	p, kc := f.p, f.kc
	direct := []kgo.Opt{kgo.SeedBrokers(kc.ListenAddrs()...)}
	opts, _ := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", f.pc.Port), f.pki.pool, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var want []string
	for name, codec := range map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "zstd": kgo.ZstdCompression(), "lz4": kgo.Lz4Compression(), "snappy": kgo.SnappyCompression()} {
		v := fmt.Sprintf("%s %s %s", needle, name, strings.Repeat("x", 200))
		produceWith(ctx, t, append(opts, kgo.ProducerBatchCompression(codec)), "secrets", v, false)
		want = append(want, v)
	}
	txnValue := needle + " in a transaction"
	produceWith(ctx, t, append(opts, kgo.TransactionalID("enc-txn")), "secrets", txnValue, true)
	want = append(want, txnValue)
	produceWith(ctx, t, opts, "public", needle+" in the clear", false)

	stored := proxytest.StoredRecords(ctx, t, direct, "secrets")
	if len(stored) != len(want) {
		t.Fatalf("the broker holds %d records of secrets, want %d", len(stored), len(want))
	}
	for _, r := range stored {
		if bytes.Contains(r.Value, []byte(needle)) {
			t.Errorf("the broker holds plaintext: %q", r.Value)
		}
		if len(r.Headers) == 0 || r.Headers[len(r.Headers)-1].Key != encryption.HeaderKey {
			t.Errorf("a stored record has no %s header", encryption.HeaderKey)
		}
	}
	if pub := proxytest.StoredRecords(ctx, t, direct, "public"); len(pub) != 1 || string(pub[0].Value) != needle+" in the clear" {
		t.Errorf("a topic without a KEK should pass in the clear: %v", pub)
	}
	got := consumeAll(ctx, t, opts, "secrets", len(want))
	for _, w := range want {
		if !got[w] {
			t.Errorf("through the proxy, %q is missing (got %d records)\n%s", w[:30], len(got), p.logs)
		}
	}

	// The KMS cannot read KEK_broken (a folder where a key file was): produce fails, retriable,
	// and nothing reaches the broker.
	if err := os.Remove(keys + "/KEK_broken"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(keys+"/KEK_broken", 0o700); err != nil {
		t.Fatal(err)
	}
	// A client retries a retriable error (an idempotent one until it knows the outcome), so the
	// answer itself is read from a raw Produce request.
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation())...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "broken"); err != nil {
		t.Fatal(err)
	}
	if code := rawProduce(ctx, t, cl, "broken", needle).ErrorCode; code != kerr.RequestTimedOut.Code || !kerr.IsRetriable(kerr.ErrorForCode(code)) {
		t.Errorf("produce with the KMS unavailable: %v, want the retriable %v", kerr.ErrorForCode(code), kerr.RequestTimedOut)
	}
	if n := len(proxytest.StoredRecords(ctx, t, direct, "broken")); n != 0 {
		t.Errorf("the broker holds %d records of broken, written while the KMS was unavailable", n)
	}

	// The KMS answers again: the same producer's next record is written, encrypted.
	if err := os.Remove(keys + "/KEK_broken"); err != nil {
		t.Fatal(err)
	}
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	writeAtomic(t, keys+"/KEK_broken", k)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "broken", Value: []byte(needle)}).FirstErr(); err != nil {
		t.Fatalf("produce after the KMS came back: %v", err)
	}
	if st := proxytest.StoredRecords(ctx, t, direct, "broken"); len(st) != 1 || bytes.Contains(st[0].Value, []byte(needle)) {
		t.Errorf("after the KMS came back the broker holds %d records of broken, want one, encrypted", len(st))
	}
}

func produceWith(ctx context.Context, t *testing.T, opts []kgo.Opt, topic, value string, txn bool) {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if txn {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatalf("produce %q: %v", value[:20], err)
	}
	if txn {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
}

func consumeAll(ctx context.Context, t *testing.T, opts []kgo.Opt, topic string, n int) map[string]bool {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]bool{}
	for len(got) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch error: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
	}
	return got
}
