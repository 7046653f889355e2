package encryption

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/time/rate"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// countingKMS counts the DEKs a KMS made and unwrapped, and can be made to fail: down, as a
// KMS that cannot answer; or with generateErr, what GenerateDEK answers.
type countingKMS struct {
	KMS
	exists, generated, decrypted int
	down                         bool
	generateErr                  error
}

func (c *countingKMS) Exists(ctx context.Context, id string) (bool, error) {
	c.exists++
	if c.down {
		return false, ErrKMSUnavailable
	}
	return c.KMS.Exists(ctx, id)
}

func (c *countingKMS) GenerateDEK(ctx context.Context, id string) ([]byte, []byte, error) {
	c.generated++
	if c.generateErr != nil {
		return nil, nil, c.generateErr
	}
	return c.KMS.GenerateDEK(ctx, id)
}

func (c *countingKMS) DecryptDEK(ctx context.Context, id string, edek []byte) ([]byte, error) {
	c.decrypted++
	if c.down {
		return nil, ErrKMSUnavailable
	}
	return c.KMS.DecryptDEK(ctx, id, edek)
}

// newTestFilter is the filter with a Secret KMS holding KEK_secrets, and the folder.
func newTestFilter(t testing.TB, extra string) (*encryptor, *countingKMS) {
	t.Helper()
	dir := t.TempDir()
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	if err := os.WriteFile(filepath.Join(dir, "KEK_secrets"), k, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := New(json.RawMessage(fmt.Sprintf(`{"kms":"KubernetesSecretKms","kmsConfig":{"keyDir":%q},"selector":"TemplateKekSelector","selectorConfig":{"template":"KEK_$(topicName)"}%s}`, dir, extra)))
	if err != nil {
		t.Fatal(err)
	}
	e := f.(*encryptor)
	c := &countingKMS{KMS: e.kms}
	e.kms = c
	return e, c
}

// batch encodes records into one batch with a codec and producer fields.
func batch(t testing.TB, codec int16, values ...[]byte) []byte {
	t.Helper()
	b := records.Batch{Header: kmsg.RecordBatch{Magic: 2, Attributes: codec, ProducerID: 42, ProducerEpoch: 3, FirstSequence: 17}}
	for i, v := range values {
		b.Records = append(b.Records, kmsg.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: v})
	}
	raw, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func produce(topic string, raw []byte) *filter.Exchange {
	req := kmsg.NewPtrProduceRequest()
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	return &filter.Exchange{Key: kmsg.Produce.Int16(), Request: req}
}

// fetched runs a Fetch response carrying raw through the filter and returns the partition.
func fetched(t testing.TB, e *encryptor, topic string, raw []byte) kmsg.FetchResponseTopicPartition {
	t.Helper()
	return fetchedWith(context.Background(), t, e, topic, raw)
}

// fetchedWith is fetched with a context (and its logger).
func fetchedWith(ctx context.Context, t testing.TB, e *encryptor, topic string, raw []byte) kmsg.FetchResponseTopicPartition {
	t.Helper()
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = bytes.Clone(raw) // each response is bytes of its own: the filter decrypts in place
	rt.Partitions = []kmsg.FetchResponseTopicPartition{rp}
	resp.Topics = []kmsg.FetchResponseTopic{rt}
	if err := e.OnResponse(ctx, &filter.Exchange{Key: kmsg.Fetch.Int16(), Request: kmsg.NewPtrFetchRequest(), Response: resp}); err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

func encrypted(t testing.TB, e *encryptor, topic string, raw []byte) []byte {
	t.Helper()
	x := produce(topic, raw)
	if err := e.OnRequest(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	if x.Get(e) != nil {
		t.Fatalf("the partition was refused: %v", x.Get(e))
	}
	return x.Request.(*kmsg.ProduceRequest).Topics[0].Partitions[0].Records
}

// TestEncryptKeepsTheBatch: every codec is kept, and so are the producer id, epoch, sequence
// and keys; values are ciphertext; Fetch gives the original values back, tombstones stay null.
func TestEncryptKeepsTheBatch(t *testing.T) {
	for _, codec := range []int16{0, 1, 2, 3, 4} {
		e, _ := newTestFilter(t, "")
		enc := encrypted(t, e, "secrets", batch(t, codec, []byte("alpha-plaintext"), nil, []byte("beta-plaintext")))
		b, err := records.Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		h := b.Header
		if int16(b.Codec()) != codec || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.FirstSequence != 17 || len(b.Records) != 3 {
			t.Errorf("codec %d: the batch changed: codec %d, producer %d/%d/%d, %d records", codec, b.Codec(), h.ProducerID, h.ProducerEpoch, h.FirstSequence, len(b.Records))
		}
		for _, r := range b.Records {
			if bytes.Contains(r.Value, []byte("plaintext")) || string(r.Key) != "k" {
				t.Errorf("codec %d: stored record %q / %q", codec, r.Key, r.Value)
			}
		}
		if b.Records[1].Value != nil || len(b.Records[1].Headers) != 0 {
			t.Errorf("codec %d: a tombstone should stay null and unmarked", codec)
		}
		p := fetched(t, e, "secrets", enc)
		d, err := records.Decode(p.RecordBatches)
		if p.ErrorCode != 0 || err != nil {
			t.Fatalf("codec %d: fetch error %d, %v", codec, p.ErrorCode, err)
		}
		if string(d.Records[0].Value) != "alpha-plaintext" || d.Records[1].Value != nil || string(d.Records[2].Value) != "beta-plaintext" || len(d.Records[0].Headers) != 0 {
			t.Errorf("codec %d: decrypted %q %q %q", codec, d.Records[0].Value, d.Records[1].Value, d.Records[2].Value)
		}
	}
}

// TestFetchMixedBatches: plain batches, batches mixing encrypted and plain records, and a
// trailing partial batch all come through.
func TestFetchMixedBatches(t *testing.T) {
	e, _ := newTestFilter(t, "")
	enc, err := records.Decode(encrypted(t, e, "secrets", batch(t, 0, []byte("sealed"))))
	if err != nil {
		t.Fatal(err)
	}
	enc.Records = append(enc.Records, kmsg.Record{OffsetDelta: 1, Value: []byte("plain")})
	mixed, _ := enc.Encode()
	plain := batch(t, 0, []byte("never encrypted"))
	raw := append(append(append([]byte{}, plain...), mixed...), plain[:20]...)
	p := fetched(t, e, "secrets", raw)
	bs, rest, err := records.Split(p.RecordBatches)
	if p.ErrorCode != 0 || err != nil || len(bs) != 2 || len(rest) != 20 {
		t.Fatalf("error %d, %v, %d batches, %d bytes after", p.ErrorCode, err, len(bs), len(rest))
	}
	if !bytes.Equal(bs[0], plain) {
		t.Error("a plain batch should pass unchanged")
	}
	d, _ := records.Decode(bs[1])
	if string(d.Records[0].Value) != "sealed" || string(d.Records[1].Value) != "plain" {
		t.Errorf("mixed batch: %q %q", d.Records[0].Value, d.Records[1].Value)
	}
}

// TestDEKReuseIsBounded: one DEK serves many requests, never one KMS call per record, and a
// new one is made once a DEK has served its records.
func TestDEKReuseIsBounded(t *testing.T) {
	e, kms := newTestFilter(t, "")
	for range 10 {
		encrypted(t, e, "secrets", batch(t, 0, []byte("a"), []byte("b"), []byte("c")))
	}
	if kms.generated != 1 {
		t.Errorf("30 records made %d DEKs, want 1", kms.generated)
	}
	e.deks["KEK_secrets"].uses = maxRecordsPerDEK - 1
	encrypted(t, e, "secrets", batch(t, 0, []byte("a"), []byte("b")))
	if kms.generated != 2 {
		t.Errorf("a DEK past its %d records was reused (%d DEKs made)", maxRecordsPerDEK, kms.generated)
	}
	e.deks["KEK_secrets"].created = e.deks["KEK_secrets"].created.Add(-maxDEKAge)
	encrypted(t, e, "secrets", batch(t, 0, []byte("a")))
	if kms.generated != 3 {
		t.Errorf("a DEK past %v was reused (%d DEKs made)", maxDEKAge, kms.generated)
	}
}

// TestKEKCacheIsBounded: a client producing to ever new topic names does not grow the filter's
// memory without bound.
func TestKEKCacheIsBounded(t *testing.T) {
	e, _ := newTestFilter(t, "")
	e.guard.limiter.SetLimit(rate.Inf)
	for i := range maxKEKCache + 10 {
		if _, err := e.kekExists(t.Context(), fmt.Sprintf("KEK_topic-%d", i), &lookups{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.kekSeen.len(); n > maxKEKCache {
		t.Errorf("%d KEKs remembered, at most %d wanted", n, maxKEKCache)
	}
}

// TestProduceRefusals: the errors a producer gets, by cause.
func TestProduceRefusals(t *testing.T) {
	v1 := batch(t, 0, []byte("x"))
	v1[16] = 1 // magic 1
	for name, tc := range map[string]struct {
		extra, topic string
		raw          []byte
		down         bool
		generateErr  error
		want         int16
	}{
		"KMS down":               {topic: "secrets", raw: batch(t, 0, []byte("x")), down: true, want: errRequestTimedOut},
		"the KMS refuses DEKs":   {topic: "secrets", raw: batch(t, 0, []byte("x")), generateErr: ErrKMSRefused, want: errKMSRefused},
		"KEK gone, REJECT":       {extra: `,"unresolvedKeyPolicy":"REJECT"`, topic: "secrets", raw: batch(t, 0, []byte("x")), generateErr: ErrKEKNotFound, want: errPolicyViolation},
		"KEK gone, passed on":    {topic: "secrets", raw: batch(t, 0, []byte("x")), generateErr: ErrKEKNotFound, want: -1},
		"no KEK, REJECT":         {extra: `,"unresolvedKeyPolicy":"REJECT"`, topic: "other", raw: batch(t, 0, []byte("x")), want: errPolicyViolation},
		"message format v1":      {topic: "secrets", raw: v1, want: errUnsupportedFmt},
		"a partial batch":        {topic: "secrets", raw: batch(t, 0, []byte("x"))[:30], want: errCorruptMessage},
		"no KEK, passed through": {topic: "other", raw: batch(t, 0, []byte("x")), want: -1},
	} {
		e, kms := newTestFilter(t, tc.extra)
		kms.down, kms.generateErr = tc.down, tc.generateErr
		x := produce(tc.topic, tc.raw)
		if err := e.OnRequest(context.Background(), x); err != nil {
			t.Fatal(err)
		}
		if tc.want < 0 {
			if x.Get(e) != nil || !bytes.Equal(x.Request.(*kmsg.ProduceRequest).Topics[0].Partitions[0].Records, tc.raw) {
				t.Errorf("%s: the records should be forwarded unchanged", name)
			}
			continue
		}
		// The only partition was refused: the filter answers, nothing is forwarded.
		if got := answeredError(x.Answered()); got != tc.want {
			t.Errorf("%s: error code %d, want %d (answer %v)", name, got, tc.want, x.Answered())
		}
	}
}

// TestFetchWithoutTheKey: a record whose DEK cannot be unwrapped now, or whose ciphertext does
// not open, fails its partition with a retriable error; no ciphertext is handed out as a value.
func TestFetchWithoutTheKey(t *testing.T) {
	e, _ := newTestFilter(t, "")
	enc := encrypted(t, e, "secrets", batch(t, 0, []byte("sealed")))

	other, kms := newTestFilter(t, "") // another proxy replica: nothing cached
	kms.KMS = e.kms.(*countingKMS).KMS
	kms.down = true
	if p := fetched(t, other, "secrets", enc); p.ErrorCode != errKafkaStorageErr || p.RecordBatches != nil {
		t.Errorf("KMS down: error %d, %d bytes of records", p.ErrorCode, len(p.RecordBatches))
	}
	kms.down = false
	if p := fetched(t, other, "secrets", enc); p.ErrorCode != 0 {
		t.Errorf("KMS back: error %d", p.ErrorCode)
	}

	b := mustDecode(t, bytes.Clone(enc))
	b.Records[0].Value[len(b.Records[0].Value)-1] ^= 1
	tampered, _ := b.Encode()
	if p := fetched(t, e, "secrets", tampered); p.ErrorCode != errKafkaStorageErr {
		t.Errorf("tampered ciphertext: error %d", p.ErrorCode)
	}
	// A topic without a KEK is passed on as stored, not decoded: the moved value stays sealed.
	if p := fetched(t, e, "elsewhere", enc); p.ErrorCode != 0 || !bytes.Equal(p.RecordBatches, enc) {
		t.Errorf("a record moved to another topic was changed (error %d)", p.ErrorCode)
	}
	if err := os.WriteFile(filepath.Join(e.kms.(*countingKMS).KMS.(SecretKMS).Dir, "KEK_elsewhere"), bytes.Repeat([]byte{7}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	e.kekSeen = newLRU[bool](maxKEKCache, kekCacheTTL) // as after the negative answer's TTL
	if p := fetched(t, e, "elsewhere", enc); p.ErrorCode != errKafkaStorageErr {
		t.Errorf("a record moved to another topic with a KEK decrypted (error %d)", p.ErrorCode)
	}
}

func TestConfigRefused(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"kms":"AwsKmsService","selector":"TemplateKekSelector","selectorConfig":{"template":"$(topicName)"}}`:                                                                                                                                                             `"AwsKmsService" is not a KMS`,
		`{"kms":"KubernetesSecretKms","kmsConfig":{},"selector":"TemplateKekSelector","selectorConfig":{"template":"$(topicName)"}}`:                                                                                                                                        "needs keyDir",
		`{"kms":"KubernetesSecretKms","kmsConfig":{"keyDir":"/k"},"selector":"Bar","selectorConfig":{"template":"$(topicName)"}}`:                                                                                                                                           `"Bar" is not supported`,
		`{"kms":"KubernetesSecretKms","kmsConfig":{"keyDir":"/k"},"selector":"TemplateKekSelector","selectorConfig":{"template":"KEK"}}`:                                                                                                                                    "has no $(topicName)",
		`{"kms":"KubernetesSecretKms","kmsConfig":{"keyDir":"/k"},"selector":"TemplateKekSelector","selectorConfig":{"template":"$(topicName)"},"unresolvedKeyPolicy":"DROP"}`:                                                                                              `"DROP" is not`,
		`{"kms":"KubernetesSecretKms","kmsConfig":{"keyDir":"/k"},"selector":"TemplateKekSelector","selectorConfig":{"template":"$(topicName)"},"typo":1}`:                                                                                                                  "unknown field",
		`{"kms":"KubernetesSecretKms","kmsConfig":{"keyDir":"/k"},"selector":"TemplateKekSelector","selectorConfig":{"template":"$(topicName)"},"experimental":{"maxEncryptionsPerDek":0}}`:                                                                                 "experimental.maxEncryptionsPerDek",
		`{"kms":"VaultKmsService","kmsConfig":{"vaultTransitEngineUrl":"vault:8200"},"selector":"TemplateKekSelector","selectorConfig":{"template":"$(topicName)"}}`:                                                                                                        "is not an http(s) URL",
		`{"kms":"VaultKmsService","kmsConfig":{"vaultTransitEngineUrl":"http://v/v1/transit","vaultToken":{"passwordFile":"/nonexistent"}},"selector":"TemplateKekSelector","selectorConfig":{"template":"$(topicName)"}}`:                                                  "no token",
		`{"kms":"VaultKmsService","kmsConfig":{"vaultTransitEngineUrl":"http://v/v1/transit","vaultToken":{"password":"t"},"tls":{"key":{"storeFile":"/k"}}},"selector":"TemplateKekSelector","selectorConfig":{"template":"$(topicName)"}}`:                                "client certificates",
		`{"kms":"VaultKmsService","kmsConfig":{"vaultTransitEngineUrl":"https://v/v1/transit","vaultToken":{"password":"t"},"tls":{"trust":{"storeFile":"/nonexistent","storeType":"PEM"}}},"selector":"TemplateKekSelector","selectorConfig":{"template":"$(topicName)"}}`: "tls.trust",
	} {
		if _, err := New(json.RawMessage(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", cfg, err, want)
		}
	}
}

// FuzzDecrypt: any bytes as an encrypted record's value (as a broker could return them) give a
// partition error, a value, or the record as stored (still marked: its KEK does not exist),
// never a panic.
func FuzzDecrypt(f *testing.F) {
	f.Add([]byte{FormatVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{FormatVersion, 11, 'K', 'E', 'K', '_', 's', 'e', 'c', 'r', 'e', 't', 's', 0x80})
	f.Add([]byte{FormatVersion, 0, 0})
	f.Add([]byte{2})
	f.Add([]byte{})
	e, _ := newTestFilter(f, "")
	f.Add(mustDecode(f, encrypted(f, e, "secrets", batch(f, 0, []byte("v")))).Records[0].Value)
	f.Fuzz(func(t *testing.T, value []byte) {
		b := records.Batch{Header: kmsg.RecordBatch{Magic: 2}, Records: []kmsg.Record{{Value: value, Headers: []kmsg.Header{{Key: HeaderKey, Value: []byte{FormatVersion}}}}}}
		raw, err := b.Encode()
		if err != nil {
			t.Fatal(err)
		}
		p := fetched(t, e, "secrets", raw)
		if p.ErrorCode != 0 {
			return
		}
		if got := mustDecode(t, p.RecordBatches).Records[0]; len(got.Headers) != 0 && !bytes.Equal(got.Value, value) {
			t.Fatal("a value that did not decrypt was handed out changed, still marked")
		}
	})
}

// answeredError is the error code of the filter's answer to a one-partition Produce, or -1.
func answeredError(resp kmsg.Response) int16 {
	r, ok := resp.(*kmsg.ProduceResponse)
	if !ok || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return -1
	}
	return r.Topics[0].Partitions[0].ErrorCode
}

func mustDecode(t testing.TB, raw []byte) *records.Batch {
	t.Helper()
	b, err := records.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckReadsTheOperatorsFiles: the operator's check reads the files a configuration names
// from what it is given (the referenced Secrets), not from its own disk, and opens no
// connection; it refuses what the proxy would refuse at start.
func TestCheckReadsTheOperatorsFiles(t *testing.T) {
	vault := `{"kms":"VaultKmsService","kmsConfig":{"vaultTransitEngineUrl":"https://vault.invalid:8200/v1/transit","vaultToken":{"passwordFile":"/opt/kroxylicious/secrets/filter/vault/token"}},"selector":"TemplateKekSelector","selectorConfig":{"template":"KEK_$(topicName)"}}`
	files := func(m map[string]string) filter.Env {
		return filter.Env{ReadFile: func(p string) ([]byte, error) {
			if v, ok := m[p]; ok {
				return []byte(v), nil
			}
			return nil, os.ErrNotExist
		}}
	}
	typ := "io.kroxylicious.filter.encryption.RecordEncryption"
	if err := filter.Check(typ, json.RawMessage(vault), files(map[string]string{"/opt/kroxylicious/secrets/filter/vault/token": "hvs.x"})); err != nil {
		t.Errorf("check with the token: %v", err)
	}
	for name, m := range map[string]map[string]string{"no token file": {}, "an empty token": {"/opt/kroxylicious/secrets/filter/vault/token": " \n"}} {
		if err := filter.Check(typ, json.RawMessage(vault), files(m)); err == nil || !strings.Contains(err.Error(), "vaultToken") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := filter.Check("RecordEncryption", json.RawMessage(`{"kms":"Foo","selector":"Bar"}`), files(nil)); err == nil || !strings.Contains(err.Error(), `"Foo" is not a KMS`) {
		t.Errorf("the seed's placeholder kms passed the check: %v", err)
	}
}

// FuzzEncryptRoundTrip: a batch built from the fuzzer's records and header fields, in any
// codec, once encrypted (as produced) and decrypted (as fetched), comes back with the same
// records, offsets, timestamps, headers and producer fields; its values never reach the broker
// in the clear.
func FuzzEncryptRoundTrip(f *testing.F) {
	f.Add([]byte("value"), []byte("key"), "header", int64(7), int16(3), int32(5), int64(1700000000000), uint8(0), true)
	f.Add([]byte{}, []byte(nil), "", int64(-1), int16(-1), int32(-1), int64(-1), uint8(4), false)
	f.Add(bytes.Repeat([]byte{0xff}, 5000), []byte{0}, "kafkalink.io/encryption", int64(1<<62), int16(32767), int32(1<<31-1), int64(1<<62), uint8(3), true)
	e, _ := newTestFilter(f, "")
	f.Fuzz(func(t *testing.T, value, key []byte, header string, producerID int64, epoch int16, seq int32, ts int64, codec uint8, txn bool) {
		attrs := int16(codec % 5)
		if txn {
			attrs |= 0x10
		}
		in := records.Batch{Header: kmsg.RecordBatch{Magic: 2, Attributes: attrs, FirstOffset: 100, ProducerID: producerID,
			ProducerEpoch: epoch, FirstSequence: seq, FirstTimestamp: ts, MaxTimestamp: ts + 2, LastOffsetDelta: 2, PartitionLeaderEpoch: 4}}
		in.Records = []kmsg.Record{
			{Key: key, Value: value, Headers: []kmsg.Header{{Key: header, Value: value}}},
			{OffsetDelta: 1, TimestampDelta64: 1, Key: key}, // a tombstone
			{OffsetDelta: 2, TimestampDelta64: 2, Value: append([]byte("second:"), value...)},
		}
		raw, err := in.Encode()
		if err != nil {
			t.Fatal(err)
		}
		want := mustDecode(t, raw) // as the broker would hand it back, lengths filled in
		x := produce("secrets", bytes.Clone(raw))
		if err := e.OnRequest(t.Context(), x); err != nil || x.Answered() != nil {
			t.Fatalf("produce refused: %v %v", err, x.Answered())
		}
		stored := x.Request.(*kmsg.ProduceRequest).Topics[0].Partitions[0].Records
		for _, r := range mustDecode(t, stored).Records {
			if len(value) >= 8 && bytes.Contains(r.Value, value) { // headers are not encrypted, values are
				t.Fatalf("the value reaches the broker in the clear")
			}
		}
		p := fetched(t, e, "secrets", stored)
		if p.ErrorCode != 0 {
			t.Fatalf("fetch error %d", p.ErrorCode)
		}
		got := mustDecode(t, p.RecordBatches)
		got.Header.CRC, want.Header.CRC = 0, 0
		got.Header.Length, want.Header.Length = 0, 0
		got.Header.Records, want.Header.Records = nil, nil
		if !reflect.DeepEqual(got.Header, want.Header) {
			t.Fatalf("header\n%+v\nwant\n%+v", got.Header, want.Header)
		}
		for i := range want.Records {
			if !reflect.DeepEqual(got.Records[i], want.Records[i]) {
				g, w := got.Records[i], want.Records[i]
				t.Fatalf("record %d: value %d bytes (want %d), equal %v; %d headers (want %d); key equal %v; deltas %d/%d (want %d/%d)", i,
					len(g.Value), len(w.Value), bytes.Equal(g.Value, w.Value), len(g.Headers), len(w.Headers), bytes.Equal(g.Key, w.Key),
					g.OffsetDelta, g.TimestampDelta64, w.OffsetDelta, w.TimestampDelta64)
			}
		}
	})
}

// TestPartitionsInParallel: a Produce and a Fetch large enough to be worked on several cores
// keep every partition in its place, refuse only the one whose KMS answer is missing, and come
// back whole.
func TestPartitionsInParallel(t *testing.T) {
	e, _ := newTestFilter(t, `,"unresolvedKeyPolicy":"REJECT"`)
	big := bytes.Repeat([]byte("v"), 100<<10)
	req := kmsg.NewPtrProduceRequest()
	for _, topic := range []string{"secrets", "other", "secrets"} {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		for p := range int32(3) {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, batch(t, 0, append([]byte(fmt.Sprint(topic, p)), big...))
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	x := &filter.Exchange{Request: req}
	if err := e.OnRequest(t.Context(), x); err != nil || x.Answered() != nil {
		t.Fatalf("%v %v", err, x.Answered())
	}
	if bad, _ := x.Get(e).(filter.Refusals); len(bad["other"]) != 3 || len(bad) != 1 {
		t.Errorf("refused %v, want the three partitions of other (REJECT)", bad)
	}
	if len(req.Topics) != 2 {
		t.Fatalf("%d topics forwarded, want 2", len(req.Topics))
	}
	resp := kmsg.NewPtrFetchResponse()
	for _, rt := range req.Topics {
		ft := kmsg.NewFetchResponseTopic()
		ft.Topic = rt.Topic
		for i, rp := range rt.Partitions {
			if rp.Partition != int32(i) {
				t.Errorf("partition %d forwarded in place %d", rp.Partition, i)
			}
			fp := kmsg.NewFetchResponseTopicPartition()
			fp.Partition, fp.RecordBatches = rp.Partition, bytes.Clone(rp.Records)
			ft.Partitions = append(ft.Partitions, fp)
		}
		resp.Topics = append(resp.Topics, ft)
	}
	if err := e.OnResponse(t.Context(), &filter.Exchange{Request: kmsg.NewPtrFetchRequest(), Response: resp}); err != nil {
		t.Fatal(err)
	}
	for _, ft := range resp.Topics {
		for _, fp := range ft.Partitions {
			v := mustDecode(t, fp.RecordBatches).Records[0].Value
			if fp.ErrorCode != 0 || !bytes.HasPrefix(v, []byte(fmt.Sprint(ft.Topic, fp.Partition))) || len(v) != len(big)+len(fmt.Sprint(ft.Topic, fp.Partition)) {
				t.Errorf("%s-%d: error %d, %d bytes", ft.Topic, fp.Partition, fp.ErrorCode, len(v))
			}
		}
	}
}

// TestFetchDecryptsInPlace: a partition of many batches, encrypted and not, in every codec, with
// keys, headers, empty values and tombstones, decrypts to the original records batch by batch
// although the filter writes its output over the response's own bytes: no batch overwrites one
// still to be read, and the trailing partial batch stays as it was.
func TestFetchDecryptsInPlace(t *testing.T) {
	e, _ := newTestFilter(t, "")
	var raw []byte
	var want [][]string
	add := func(b []byte, values ...string) {
		raw = append(raw, b...)
		want = append(want, values)
	}
	vals := func(vs ...string) [][]byte {
		out := make([][]byte, len(vs))
		for i, v := range vs {
			out[i] = []byte(v)
		}
		return out
	}
	long := strings.Repeat("a long value that compresses well ", 300)
	add(batch(t, 0, vals("never encrypted")...), "never encrypted")
	for codec := int16(0); codec <= 4; codec++ {
		vs := []string{"first", "", long, "last of codec " + strconv.Itoa(int(codec))}
		add(encrypted(t, e, "secrets", batch(t, codec, vals(vs...)...)), vs...)
		add(batch(t, codec, vals("plain between")...), "plain between")
	}
	tomb, _ := records.Decode(encrypted(t, e, "secrets", batch(t, 0, vals("before a tombstone")...)))
	tomb.Records = append(tomb.Records, kmsg.Record{OffsetDelta: 1, Key: []byte("gone")})
	withTomb, _ := tomb.Encode()
	add(withTomb, "before a tombstone", "<nil>")
	tail := batch(t, 0, vals("cut short")...)[:30]
	raw = append(raw, tail...)

	p := fetched(t, e, "secrets", raw)
	bs, rest, err := records.Split(p.RecordBatches)
	if p.ErrorCode != 0 || err != nil || len(bs) != len(want) || !bytes.Equal(rest, tail) {
		t.Fatalf("error %d, %v, %d batches (want %d), trailing bytes kept %v", p.ErrorCode, err, len(bs), len(want), bytes.Equal(rest, tail))
	}
	for i, b := range bs {
		d := mustDecode(t, b)
		if len(d.Records) != len(want[i]) {
			t.Fatalf("batch %d: %d records, want %d", i, len(d.Records), len(want[i]))
		}
		for j, r := range d.Records {
			got := string(r.Value)
			if r.Value == nil {
				got = "<nil>"
			}
			if got != want[i][j] || encryptedHeader(r) >= 0 {
				t.Fatalf("batch %d record %d: %.40q, want %.40q (marker left: %v)", i, j, got, want[i][j], encryptedHeader(r) >= 0)
			}
		}
	}
}

// TestFetchInPlaceMovesOutWhenABatchGrows: a batch that a producer compressed better than the
// proxy does (zstd at its best level; the proxy re-compresses at the default) grows when the
// filter re-encodes it. It is then written to a new buffer, never over the batch after it.
func TestFetchInPlaceMovesOutWhenABatchGrows(t *testing.T) {
	e, _ := newTestFilter(t, "")
	mixed, err := records.Decode(encrypted(t, e, "secrets", batch(t, 0, []byte("sealed"))))
	if err != nil {
		t.Fatal(err)
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	words := make([]string, 500)
	for i := range words {
		words[i] = strconv.FormatUint(rng.Uint64(), 36)
	}
	for i := 1; i <= 3000; i++ {
		var v strings.Builder
		for range 12 {
			v.WriteString(words[rng.IntN(len(words))] + " ")
		}
		mixed.Records = append(mixed.Records, kmsg.Record{OffsetDelta: int32(i), Value: []byte(v.String())})
	}
	plain, _ := mixed.Encode()
	best := zstdBatch(t, plain)
	next := batch(t, 0, bytes.Repeat([]byte("the batch after "), 1<<16)) // longer than the records uncompressed
	raw := append(bytes.Clone(best), next...)

	out, _, err := e.decryptPartition(t.Context(), "secrets", raw, nil, e.lookupsFor(&filter.Exchange{}))
	if err != nil {
		t.Fatal(err)
	}
	if inPlace(out, raw) {
		t.Fatalf("the re-encoded batch fit in place (%d bytes for %d): the test no longer makes one grow", len(out)-len(next), len(best))
	}
	bs, _, err := records.Split(out)
	if err != nil || len(bs) != 2 || !bytes.Equal(bs[1], next) {
		t.Fatalf("%v, %d batches; the batch after intact: %v", err, len(bs), len(bs) == 2 && bytes.Equal(bs[1], next))
	}
	if d := mustDecode(t, bs[0]); len(d.Records) != 3001 || string(d.Records[0].Value) != "sealed" || string(d.Records[3000].Value) != string(mixed.Records[3000].Value) {
		t.Fatalf("the grown batch: %d records", len(d.Records))
	}
}

// zstdBatch is an uncompressed batch's records compressed with zstd at its best level, as a
// producer may send them.
func zstdBatch(t *testing.T, plain []byte) []byte {
	t.Helper()
	const headerLen, attrs, crcAt = 61, 21, 17
	w, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	b := append(bytes.Clone(plain[:headerLen]), w.EncodeAll(plain[headerLen:], nil)...)
	b[attrs+1] |= byte(records.CodecZstd)
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[crcAt:crcAt+4], crc32.Checksum(b[attrs:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}
