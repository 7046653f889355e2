package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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

// TestRecordEncryptionStreamsLargeFetches: fetch responses far larger than the size up to which
// a filtered Fetch is read whole (kafka.FetchBufferLimit) are decrypted partition by partition as
// they stream; every record comes back in the clear and whole, compressed or not, next to a topic
// without a KEK whose batches pass untouched in the same responses.
func TestRecordEncryptionStreamsLargeFetches(t *testing.T) {
	dir := t.TempDir()
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	writeAtomic(t, dir+"/KEK_big", []byte(base64.StdEncoding.EncodeToString(k)))
	filters := fmt.Sprintf("  filters:\n  - {name: encrypt, type: RecordEncryption, config: {kms: KubernetesSecretKms, kmsConfig: {keyDir: %s}, selector: TemplateKekSelector, selectorConfig: {template: \"KEK_$(topicName)\"}}}\n", dir)
	f := startFilteredProxy(t, Options{}, filters)
	opts, _ := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", f.pc.Port), f.pki.pool, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const perTopic = 300 // of 16 KiB: about 4.7 MiB a topic
	want := map[string]bool{}
	for _, topic := range []string{"big", "plain"} {
		for i, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.ZstdCompression()} {
			values := largeValues(fmt.Sprintf("%s-%d", topic, i), perTopic/2)
			produceAll(ctx, t, append(opts, kgo.ProducerBatchCompression(codec)), topic, values)
			for _, v := range values {
				want[topic+"/"+v[:24]] = true
			}
		}
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics("big", "plain"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for len(want) > 0 && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) { t.Errorf("fetch error: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if !validLargeValue(string(r.Value)) {
				t.Fatalf("%s: a record came back altered: %.40q (%d bytes)", r.Topic, r.Value, len(r.Value))
			}
			delete(want, r.Topic+"/"+string(r.Value[:24]))
		})
	}
	if len(want) > 0 {
		t.Fatalf("%d records never came back through the proxy\n%s", len(want), f.p.logs)
	}
}

// largeValues are n values of 16 KiB: a unique 24-byte prefix, then the SHA-256 sum of the
// random rest, so that any change to one is seen (validLargeValue).
func largeValues(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		rest := make([]byte, (16<<10-24-64)/2)
		_, _ = rand.Read(rest)
		body := hex.EncodeToString(rest)
		sum := sha256.Sum256([]byte(body))
		out[i] = fmt.Sprintf("%-24s", fmt.Sprintf("%s-%d", prefix, i)) + hex.EncodeToString(sum[:]) + body
	}
	return out
}

func validLargeValue(v string) bool {
	if len(v) < 24+64 {
		return false
	}
	sum := sha256.Sum256([]byte(v[24+64:]))
	return v[24:24+64] == hex.EncodeToString(sum[:])
}

// produceAll produces values to topic in one go and waits for all of them.
func produceAll(ctx context.Context, t *testing.T, opts []kgo.Opt, topic string, values []string) {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rs := make([]*kgo.Record, len(values))
	for i, v := range values {
		rs[i] = &kgo.Record{Value: []byte(v)}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}
