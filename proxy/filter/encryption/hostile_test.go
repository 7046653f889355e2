package encryption

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// manyTopics is a Produce request of one small batch to each topic.
func manyTopics(t *testing.T, topics []string) *filter.Exchange {
	x := produce(topics[0], batch(t, 0, []byte("v")))
	req := x.Request.(*kmsg.ProduceRequest)
	for _, name := range topics[1:] {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = name
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch(t, 0, []byte("v"))
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
		req.Topics = append(req.Topics, rt)
	}
	return x
}

// codes are the error codes the filter gave a Produce's topics, answered or to be added to the
// broker's response; topics forwarded are not in it.
func codes(e *encryptor, x *filter.Exchange) map[string]int16 {
	resp := kmsg.NewPtrProduceResponse()
	if a, ok := x.Answered().(*kmsg.ProduceResponse); ok {
		resp = a
	}
	if bad, ok := x.Get(e).(filter.Refusals); ok {
		bad.AddTo(resp)
	}
	out := map[string]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[t.Topic] = p.ErrorCode
		}
	}
	return out
}

// TestIllegalTopicNamesCostNoKMSCall: an empty name (Produce v13's topic ids leave it empty)
// and names that are no legal topic name are refused with INVALID_TOPIC_EXCEPTION, and never
// become a KEK id, a file name or a Vault path.
func TestIllegalTopicNamesCostNoKMSCall(t *testing.T) {
	e, kms := newTestFilter(t, "")
	illegal := []string{"", "../x/0?y#z", "..", "a b", strings.Repeat("t", 250), "é"}
	x := manyTopics(t, illegal)
	if err := e.OnRequest(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	for name, code := range codes(e, x) {
		if code != errInvalidTopic {
			t.Errorf("topic %q: error %d, want INVALID_TOPIC_EXCEPTION", name, code)
		}
	}
	if kms.exists+kms.generated != 0 {
		t.Errorf("illegal names made %d KMS calls", kms.exists+kms.generated)
	}
}

// TestKMSLookupsAreCapped: a request naming thousands of topics makes at most
// maxLookupsPerRequest KMS calls; the rest are refused with a retriable error; a connection's
// look-ups per minute are capped too; answers, negative ones included, are cached.
func TestKMSLookupsAreCapped(t *testing.T) {
	e, kms := newTestFilter(t, "")
	var topics []string
	for i := range 5000 {
		topics = append(topics, fmt.Sprintf("t-%d", i))
	}
	x := manyTopics(t, topics)
	conn := (&filter.Chain{}).ForConnection()
	x.Conn = conn
	if err := e.OnRequest(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	if kms.exists > maxLookupsPerRequest {
		t.Errorf("one request made %d KMS look-ups, at most %d wanted", kms.exists, maxLookupsPerRequest)
	}
	got := codes(e, x)
	if _, refused := got["t-0"]; refused || got["t-4999"] != errRequestTimedOut {
		t.Errorf("the first topic got %d (passed: 0), the last %d (retriable: %d)", got["t-0"], got["t-4999"], errRequestTimedOut)
	}
	// Cached, the negative answer too: the same topics again cost no call.
	before := kms.exists
	x = manyTopics(t, topics[:maxLookupsPerRequest])
	x.Conn = conn
	if err := e.OnRequest(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	if kms.exists != before {
		t.Errorf("cached answers cost %d more calls", kms.exists-before)
	}
	// The connection's minute: at most maxLookupsPerConnMinute in all.
	for i := 0; i < len(topics); i += 100 {
		x = manyTopics(t, topics[i:i+100])
		x.Conn = conn
		_ = e.OnRequest(context.Background(), x)
	}
	if kms.exists > maxLookupsPerConnMinute {
		t.Errorf("one connection made %d look-ups in a minute, at most %d wanted", kms.exists, maxLookupsPerConnMinute)
	}
}

// TestKMSRateLimited: requests on many connections together make at most the virtual
// cluster's burst of KMS calls at once.
func TestKMSRateLimited(t *testing.T) {
	e, kms := newTestFilter(t, "")
	for c := range 40 {
		var topics []string
		for i := range maxLookupsPerRequest {
			topics = append(topics, fmt.Sprintf("c%d-t%d", c, i))
		}
		_ = e.OnRequest(context.Background(), manyTopics(t, topics))
	}
	if kms.exists > kmsBurst+kmsCallsPerSecond { // the test may take up to a second
		t.Errorf("%d KMS calls, at most about %d wanted", kms.exists, kmsBurst)
	}
}

// TestKMSErrorsAreNotQuoted: the KMS's own words (a Vault body) are not sent to clients.
func TestKMSErrorsAreNotQuoted(t *testing.T) {
	e, kms := newTestFilter(t, "")
	kms.KMS = failingKMS{}
	x := produce("secrets", batch(t, 0, []byte("v")))
	if err := e.OnRequest(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	msg := *x.Answered().(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorMessage
	if strings.Contains(msg, "sys/policy") {
		t.Errorf("the client was told %q", msg)
	}
}

type failingKMS struct{ KMS }

func (failingKMS) Exists(context.Context, string) (bool, error) {
	return false, fmt.Errorf("%w: 403: permission denied on sys/policy/admin", ErrKMSUnavailable)
}

// TestDEKCacheKeyedByKEK: a record naming another KEK with a wrapped DEK the cache holds is
// unwrapped under that KEK, not served the cached DEK of the first; that KEK does not exist, so
// the record comes back as stored, sealed and marked.
func TestDEKCacheKeyedByKEK(t *testing.T) {
	e, kms := newTestFilter(t, "")
	enc := encrypted(t, e, "secrets", batch(t, 0, []byte("sealed")))
	if p := fetched(t, e, "secrets", enc); p.ErrorCode != 0 {
		t.Fatalf("error %d", p.ErrorCode)
	}
	b := mustDecode(t, bytes.Clone(enc))
	// Same wrapped DEK, KEK id KEK_secrets → KEK_secretz (same length, so the framing holds).
	b.Records[0].Value = bytes.Replace(b.Records[0].Value, []byte("KEK_secrets"), []byte("KEK_secretz"), 1)
	moved, _ := b.Encode()
	before := kms.decrypted
	p := fetched(t, e, "secrets", moved)
	if p.ErrorCode != 0 {
		t.Fatalf("error %d", p.ErrorCode)
	}
	if got := mustDecode(t, p.RecordBatches).Records[0]; !bytes.Equal(got.Value, b.Records[0].Value) || encryptedHeader(got) < 0 {
		t.Errorf("a record naming another KEK decrypted with the cached DEK: %q", got.Value)
	}
	if kms.decrypted != before+1 {
		t.Errorf("the other KEK was not asked (%d unwraps)", kms.decrypted-before)
	}
}

// TestDEKCacheIsLRU: a full cache drops its least recently used DEK, not all of them.
func TestDEKCacheIsLRU(t *testing.T) {
	c := newLRU[int](3, 0)
	for i, k := range []string{"a", "b", "c"} {
		c.put(k, i)
	}
	c.get("a")
	c.put("d", 3)
	if _, ok := c.get("b"); ok {
		t.Error("b, the least recently used, was kept")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := c.get(k); !ok {
			t.Errorf("%s was dropped", k)
		}
	}
}

// TestControlBatchesRefused: a client's batch with the control bit set would pass unencrypted;
// only brokers write control batches.
func TestControlBatchesRefused(t *testing.T) {
	e, _ := newTestFilter(t, "")
	raw := batch(t, 0x20, []byte("plaintext"))
	x := produce("secrets", raw)
	if err := e.OnRequest(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	if got := answeredError(x.Answered()); got != errInvalidRecord {
		t.Errorf("error %d, want INVALID_RECORD", got)
	}
}

// zeroBomb is a batch of n records of size zero bytes each, compressed with codec.
func zeroBomb(t *testing.T, codec int16, n, size int) []byte {
	values := make([][]byte, n)
	zeros := make([]byte, size)
	for i := range values {
		values[i] = zeros
	}
	return batch(t, codec, values...)
}

// TestCompressionBombs: a small batch that decompresses to far more than its share is refused
// with MESSAGE_TOO_LARGE before the filter allocates it; memory allocated stays near the cap.
func TestCompressionBombs(t *testing.T) {
	for name, codec := range map[string]int16{"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4} {
		e, _ := newTestFilter(t, "")
		raw := zeroBomb(t, codec, 63, 1<<20)
		lim := filter.DefaultLimits()
		got, alloc := produceWithDefaultLimits(t, e, raw)
		if got != errMessageTooLarge {
			t.Errorf("%s: %d compressed bytes of 63 MiB: error %d, want MESSAGE_TOO_LARGE", name, len(raw), got)
		}
		// The decompression buffer grows by doubling up to the batch's limit: at most twice it,
		// and the codec's own buffers (lz4's blocks take 4 MiB).
		limit := min(lim.MaxBatch, filter.NewAllowance(context.Background(), lim, len(raw)).Left())
		if alloc > uint64(2*limit+6<<20) {
			t.Errorf("%s: the refusal allocated %d MiB (limit %d MiB)", name, alloc>>20, limit>>20)
		}
	}
}

// TestFetchOfTopicWithoutKEKNotDecoded: a stored bomb in a topic without a KEK is passed on as
// the broker sent it, never decompressed.
func TestFetchOfTopicWithoutKEKNotDecoded(t *testing.T) {
	e, _ := newTestFilter(t, "")
	raw := zeroBomb(t, 4, 63, 1<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p := fetched(t, e, "plain", raw)
	runtime.ReadMemStats(&after)
	if p.ErrorCode != 0 || !bytes.Equal(p.RecordBatches, raw) {
		t.Errorf("error %d; records changed: %v", p.ErrorCode, !bytes.Equal(p.RecordBatches, raw))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("passing it on allocated %d KiB", alloc>>10)
	}
	// With a KEK, a batch over the limits alone: MESSAGE_TOO_LARGE, never the batch unread.
	lim := filter.DefaultLimits()
	x := &filter.Exchange{Key: kmsg.Fetch.Int16(), Request: kmsg.NewPtrFetchRequest(), Allowance: filter.NewAllowance(context.Background(), lim, len(raw))}
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "secrets"
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = raw
	rt.Partitions = []kmsg.FetchResponseTopicPartition{rp}
	resp.Topics = []kmsg.FetchResponseTopic{rt}
	x.Response = resp
	if err := e.OnResponse(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0].Partitions[0]; got.ErrorCode != errMessageTooLarge || got.RecordBatches != nil {
		t.Errorf("a bomb in an encrypted topic: error %d, %d bytes passed", got.ErrorCode, len(got.RecordBatches))
	}
}

// TestFetchShareSpentByOthers: a partition that finds the response's share spent by the
// partitions decrypted before it goes out without records and without an error, as when a
// broker's response is full: the consumer fetches it again, and it is never handed out unread.
func TestFetchShareSpentByOthers(t *testing.T) {
	e, _ := newTestFilter(t, "")
	first := encrypted(t, e, "secrets", batch(t, 0, bytes.Repeat([]byte("v"), 100<<10)))
	bomb := encrypted(t, e, "secrets", zeroBomb(t, int16(records.CodecZstd), 2, 1<<20))
	lim := filter.Limits{MaxFrame: 16 << 20, MaxShare: 100 << 20, MaxBatch: 8 << 20, Ratio: 1}
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "secrets"
	for i, raw := range [][]byte{first, bomb} {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.RecordBatches = int32(i), bytes.Clone(raw)
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = []kmsg.FetchResponseTopic{rt}
	// A share of 1 MiB (the floor): the first partition fits, the second's 2 MiB do not.
	x := &filter.Exchange{Key: kmsg.Fetch.Int16(), Request: kmsg.NewPtrFetchRequest(), Response: resp, Allowance: filter.NewAllowance(context.Background(), lim, 0)}
	if err := e.OnResponse(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
	if p0.ErrorCode != 0 || len(p0.RecordBatches) == 0 {
		t.Errorf("the first partition: error %d, %d bytes", p0.ErrorCode, len(p0.RecordBatches))
	}
	if p1.ErrorCode != 0 || p1.RecordBatches != nil {
		t.Errorf("the partition over the spent share: error %d, %d bytes (want none, no error)", p1.ErrorCode, len(p1.RecordBatches))
	}
}

// TestTinyRecordsAmplifyUpstreamBounded: encryption adds some 130 bytes to every record, so a
// small compressed batch of many empty values would grow thousands of times on its way to the
// broker. What the filter sends is bounded by the request's share; over it, MESSAGE_TOO_LARGE.
func TestTinyRecordsAmplifyUpstreamBounded(t *testing.T) {
	e, _ := newTestFilter(t, "")
	// 8,000 identical records (offset delta 0: the proxy does not check it, the broker does),
	// an empty value each: 56 KB that zstd makes a few hundred bytes.
	b := records.Batch{Header: kmsg.RecordBatch{Magic: 2, Attributes: int16(records.CodecZstd)}}
	for range 8000 {
		b.Records = append(b.Records, kmsg.Record{Value: []byte{}})
	}
	raw, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	x := produce("secrets", raw)
	x.Allowance = filter.NewAllowance(context.Background(), filter.DefaultLimits(), len(raw))
	if err := e.OnRequest(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	if got := answeredError(x.Answered()); got != errMessageTooLarge {
		sent := len(x.Request.(*kmsg.ProduceRequest).Topics[0].Partitions[0].Records)
		t.Errorf("%d compressed bytes of 8,000 empty values: error %d, %d bytes for the broker", len(raw), got, sent)
	}
}

// TestTinyRecordsReservedBeforeAllocated: the direct codec sizes a partition's buffer for all its
// batches once sealed, each tiny record growing by its wrapped DEK, nonce, tag and marker. A
// small first batch must not let that buffer be allocated unreserved: a partition that would
// outgrow a request's room is refused before the buffer is made.
func TestTinyRecordsReservedBeforeAllocated(t *testing.T) {
	e, _ := newTestFilter(t, "")
	first := batchOfRecords(t, kmsg.Record{Value: []byte("v")})
	raw := slices.Concat(first, tinyRecords(first, 2<<20))
	refusedWithLittleAllocated(t, e, raw)
}

// TestTinyRecordsViewReservedBeforeAllocated: the direct codec's view of a batch holds a
// recordView per record, about eleven times a 7-byte record; one batch of such records, its CRC
// right so that the direct codec takes it, is refused before its view is made.
func TestTinyRecordsViewReservedBeforeAllocated(t *testing.T) {
	e, _ := newTestFilter(t, "")
	first := batchOfRecords(t, kmsg.Record{Value: []byte("v")})
	tiny := tinyRecords(first, 2<<20)
	binary.BigEndian.PutUint32(tiny[17:21], crc32.Checksum(tiny[21:], castagnoli))
	if viewOf(tiny) == nil {
		t.Fatal("the direct codec does not take the batch")
	}
	refusedWithLittleAllocated(t, e, tiny)
}

// tinyRecords is a batch with header's of n records of 7 bytes (no key, no value, no headers).
func tinyRecords(header []byte, n int) []byte {
	tiny := append([]byte(nil), header[:batchHeaderLen]...)
	for range n {
		tiny = append(tiny, 0x0c, 0, 0, 0, 0x01, 0x01, 0) // length 6, attributes and deltas 0, null key and value, no headers
	}
	binary.BigEndian.PutUint32(tiny[8:12], uint32(len(tiny)-12))
	binary.BigEndian.PutUint32(tiny[57:61], uint32(n))
	return tiny
}

// refusedWithLittleAllocated produces raw through e with the default limits: refused with
// MESSAGE_TOO_LARGE, having allocated at most 16 MiB.
func refusedWithLittleAllocated(t *testing.T, e *encryptor, raw []byte) {
	t.Helper()
	got, alloc := produceWithDefaultLimits(t, e, raw)
	if got != errMessageTooLarge {
		t.Errorf("about %d records of 7 bytes: error %d, want MESSAGE_TOO_LARGE", len(raw)/7, got)
	}
	if alloc > 16<<20 {
		t.Errorf("the refusal allocated %d MiB", alloc>>20)
	}
}

// produceWithDefaultLimits produces raw to a topic with a KEK through e under the default
// limits, and returns the error it answered with (0 when forwarded) and the bytes it allocated.
func produceWithDefaultLimits(t *testing.T, e *encryptor, raw []byte) (errCode int16, allocated uint64) {
	t.Helper()
	x := produce("secrets", raw)
	x.Allowance = filter.NewAllowance(context.Background(), filter.DefaultLimits(), len(raw))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := e.OnRequest(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	return answeredError(x.Answered()), after.TotalAlloc - before.TotalAlloc
}
