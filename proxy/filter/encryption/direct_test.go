package encryption

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// The direct codec (direct.go) must write what the decoding path writes, byte for byte, for
// every batch it takes, and leave every other batch to that path: these tests and
// FuzzDirectCodec run both on the same bytes, with the same DEK and nonce counters.

// batchOfRecords encodes records into an uncompressed batch as a client would.
func batchOfRecords(t testing.TB, recs ...kmsg.Record) []byte {
	t.Helper()
	b := records.Batch{Header: kmsg.RecordBatch{Magic: 2, FirstOffset: 9, ProducerID: 42, ProducerEpoch: 3, FirstSequence: 17,
		FirstTimestamp: 1700000000000, MaxTimestamp: 1700000000005, LastOffsetDelta: int32(len(recs) - 1)}}
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
		b.Records = append(b.Records, recs[i])
	}
	raw, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// sealedBothWays is batch raw encrypted under one DEK from the nonce counter first, by the
// direct codec and by decoding (nil, nil when the direct codec does not take the batch).
func sealedBothWays(t testing.TB, e *encryptor, d *dekState, raw []byte, first uint64) (direct, decoded []byte) {
	t.Helper()
	v := viewOf(raw)
	if v == nil {
		return nil, nil
	}
	defer v.release()
	direct = e.directSealer("KEK_secrets", "secrets", d, first).appendBatch(nil, raw, v)
	batch, err := records.Decode(raw)
	if err != nil {
		t.Fatalf("the direct codec took a batch the decoder refuses: %v", err)
	}
	defer batch.Release()
	rw, _ := e.rewriter(batch, "KEK_secrets", "secrets", d, first)
	if decoded, err = batch.AppendRewritten(nil, rw); err != nil {
		t.Fatal(err)
	}
	return direct, decoded
}

// opened is a batch decrypted: its bytes, how many records were decrypted, the error.
type opened struct {
	out []byte
	n   int
	err error
}

// openedBothWays is a batch decrypted by the direct codec, in place (taken: the codec took it),
// and by decoding, each on a copy of its own.
func openedBothWays(t testing.TB, e *encryptor, raw []byte) (direct, decoded opened, taken bool) {
	t.Helper()
	ctx := context.Background()
	a := bytes.Clone(raw)
	if v := viewOf(a); v != nil {
		var last openedDEK
		taken = true
		direct.out, direct.n, _, direct.err = e.decryptDirect(ctx, a[:0], a, v, "secrets", nil, &lookups{}, &last)
	}
	var last openedDEK
	decoded.out, decoded.n, _, decoded.err = e.decryptDecoded(ctx, nil, bytes.Clone(raw), "secrets", nil, &lookups{}, &last)
	return direct, decoded, taken
}

// same reports whether both ways decrypted a batch alike: the same bytes and count, or both
// failed.
func same(direct, decoded opened) bool {
	if direct.err != nil || decoded.err != nil {
		return direct.err != nil && decoded.err != nil
	}
	return bytes.Equal(direct.out, decoded.out) && direct.n == decoded.n
}

func TestDirectCodecWritesWhatTheDecoderWrites(t *testing.T) {
	long := bytes.Repeat([]byte("long value "), 2000) // lengths of three varint bytes
	for name, recs := range map[string][]kmsg.Record{
		"values, a tombstone and an empty value": {{Key: []byte("k"), Value: []byte("v")}, {Key: []byte("t")}, {Value: []byte{}}},
		"headers, a null header value and the markers' keys already there": {{Value: []byte("v"), Headers: []kmsg.Header{
			{Key: "h", Value: []byte("1")}, {Key: "n"}, {Key: HeaderKey, Value: []byte{9}}, {Key: KroxyliciousHeaderKey, Value: []byte{2}}}}},
		"a long value and negative timestamp deltas": {{Value: long, TimestampDelta64: -5}, {Value: long[:300], TimestampDelta64: 1 << 40}},
		"no records":         {},
		"tombstones only":    {{Key: []byte("a")}, {Key: []byte("b")}},
		"a thousand records": thousandRecords(),
	} {
		t.Run(name, func(t *testing.T) {
			for _, krox := range []bool{false, true} {
				e, _ := newTestFilter(t, "")
				e.kroxylicious = krox
				d, first, err := e.dek(t.Context(), "KEK_secrets", len(recs))
				if err != nil {
					t.Fatal(err)
				}
				raw := batchOfRecords(t, recs...)
				direct, decoded := sealedBothWays(t, e, d, raw, first+3)
				if direct == nil {
					t.Fatal("the direct codec refused a batch a client writes")
				}
				if !bytes.Equal(direct, decoded) {
					t.Fatalf("kroxylicious %v: the direct codec wrote %d bytes, the decoder %d, and they differ", krox, len(direct), len(decoded))
				}
				if krox {
					continue // Kroxylicious' format is read by decoding
				}
				o, od, taken := openedBothWays(t, e, direct)
				if !taken || o.err != nil || !same(o, od) {
					t.Fatalf("decrypted: taken %v; direct %d records, %v; decoded %d records, %v", taken, o.n, o.err, od.n, od.err)
				}
				if !bytes.Equal(o.out, raw) {
					t.Fatal("the batch does not decrypt to the batch produced")
				}
			}
		})
	}
}

func thousandRecords() []kmsg.Record {
	recs := make([]kmsg.Record, 1000)
	for i := range recs {
		recs[i] = kmsg.Record{Key: []byte{byte(i)}, Value: bytes.Repeat([]byte{byte(i)}, i%300), TimestampDelta64: int64(i)}
	}
	return recs
}

// withCRC sets a batch's length and CRC to match its bytes, so that a changed batch gets past
// those checks to its records.
func withCRC(b []byte) []byte {
	if len(b) >= batchHeaderLen {
		binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12))
		binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], castagnoli))
	}
	return b
}

// TestDirectCodecLeavesOtherSpellings: a batch the direct codec does not take goes by the
// decoder: compressed, control, a varint longer than it needs to be, a length below -1, bytes
// after the records.
func TestDirectCodecLeavesOtherSpellings(t *testing.T) {
	plain := batchOfRecords(t, kmsg.Record{Key: []byte("k"), Value: []byte("v")})
	lenAt := batchHeaderLen // the record's length varint
	for name, raw := range map[string][]byte{
		"lz4":                     batch(t, 3, []byte("v")),
		"a control batch":         withCRC(setAttr(bytes.Clone(plain), 0x20)),
		"a padded record length":  withCRC(append(append(bytes.Clone(plain[:lenAt]), plain[lenAt]|0x80, 0x00), plain[lenAt+1:]...)),
		"a key length of -2":      withCRC(replaceAt(plain, lenAt+4, 0x03)), // length, attributes, timestamp, offset, key
		"bytes after the records": withCRC(append(bytes.Clone(plain), 0)),
		"a wrong CRC":             append(bytes.Clone(plain[:20]), append([]byte{plain[20] ^ 1}, plain[21:]...)...),
	} {
		t.Run(name, func(t *testing.T) {
			if v := viewOf(raw); v != nil {
				v.release()
				t.Fatal("the direct codec took it")
			}
		})
	}
}

func setAttr(b []byte, bit byte) []byte { b[22] |= bit; return b }

func replaceAt(b []byte, i int, c byte) []byte {
	b = bytes.Clone(b)
	b[i] = c
	return b
}

// FuzzDirectCodec: for any bytes (length and CRC set to match, so that they reach the records),
// the direct codec takes the batch or leaves it, never panics, and when it takes it writes
// what the decoder writes, encrypting, and decrypting what either wrote or the bytes as given.
func FuzzDirectCodec(f *testing.F) {
	e, _ := newTestFilter(f, "")
	f.Add(batchOfRecords(f, kmsg.Record{Key: []byte("k"), Value: []byte("v"), Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}}}), false)
	f.Add(batchOfRecords(f, thousandRecords()[:20]...), true)
	f.Add(encrypted(f, e, "secrets", batchOfRecords(f, kmsg.Record{Value: []byte("v")}, kmsg.Record{Key: []byte("t")})), false)
	f.Add(batch(f, 0, []byte("v"), nil), false)
	f.Fuzz(func(t *testing.T, raw []byte, krox bool) {
		raw = withCRC(bytes.Clone(raw))
		e.kroxylicious = krox
		d, first, err := e.dek(t.Context(), "KEK_secrets", 1)
		if err != nil {
			t.Fatal(err)
		}
		direct, decoded := sealedBothWays(t, e, d, raw, first)
		if !bytes.Equal(direct, decoded) {
			t.Fatalf("sealed: the direct codec wrote %d bytes, the decoder %d, and they differ", len(direct), len(decoded))
		}
		for _, in := range [][]byte{raw, direct} {
			if o, od, taken := openedBothWays(t, e, in); taken && !same(o, od) {
				t.Fatalf("decrypted: direct %d records, %v; decoded %d records, %v", o.n, o.err, od.n, od.err)
			}
		}
	})
}

// viewOf is viewBatch without a limit.
func viewOf(b []byte) *batchView {
	v, _ := viewBatch(b, nil)
	return v
}
