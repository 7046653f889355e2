package encryption

// The direct record codec: uncompressed batches, by far the common case, are encrypted and
// decrypted by walking their records where they lie, without decoding them into kmsg.Records and
// encoding them back. On produce each batch is written once, record by record, into the
// partition's pooled output buffer, each value sealed straight into it; on fetch each record is
// decrypted in place and the batch compacted over the broker's bytes.
//
// Only batches written as Kafka's clients and the old path (records.Batch.AppendRewritten) write
// them take this path: every varint in its shortest form, no negative length but -1 (null), each
// record's fields filling its length exactly. The direct path then writes what the old one would,
// byte for byte (FuzzDirectCodec holds them to it), and copies the fields it does not change as
// they are. Anything else (compressed or control batches, other spellings, Kroxylicious' format
// on fetch, malformed bytes) takes the old path, whose answers stand.

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

const (
	batchHeaderLen = 61 // a v2 batch header up to and including the record count
	gcmTagLen      = 16
	nonceLen       = 12
	// minRecordLen is the smallest record: length, attributes, timestamp and offset deltas, null
	// key and value, no headers.
	minRecordLen = 7
)

// castagnoli is message format v2's CRC-32C; crc32 uses the CPU's instruction for it.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordView is one record of an uncompressed batch as it lies in the batch: offsets into it.
type recordView struct {
	body    int    // where the attributes start, after the record's length
	keyEnd  int    // the attributes, timestamp and offset deltas and key end here
	value   []byte // nil: a null value
	headers int    // where the headers start, after their count
	end     int    // where the record ends
	count   int    // the header count
	// mark is the kafkalink marker header's bytes (the last header with its key); -1: none.
	markStart, markEnd int
}

// batchView is an uncompressed batch read in place; krox says a record carries Kroxylicious'
// marker key, marked that one carries kafkalink's.
type batchView struct {
	records []recordView
	krox    bool
	marked  bool
}

var viewPool = sync.Pool{New: func() any { return new(batchView) }}

// pooledViewRecords is the most records a pooled view keeps room for: a view of a larger batch
// is left to the collector rather than held by the pool.
const pooledViewRecords = 4096

func (v *batchView) release() {
	if cap(v.records) > pooledViewRecords {
		v.records = nil
	}
	v.records = v.records[:0]
	viewPool.Put(v)
}

// recordViewSize is what a view holds per record.
const recordViewSize = int(unsafe.Sizeof(recordView{}))

// viewBatch reads an uncompressed batch in place, or returns nil when the batch must take the
// old path: not message format v2 or compressed, a control batch, a wrong length or CRC, or
// records not written in their shortest form. The view takes a recordView per record, about
// eleven times a 7-byte record: it is reserved from a (nil: no limit) before it is made, and
// an error says a had no room. Release the view once used.
func viewBatch(b []byte, a records.Allowance) (*batchView, error) {
	if len(b) < batchHeaderLen || int8(b[16]) != 2 || b[22]&0x27 != 0 { // codec bits, control bit
		return nil, nil
	}
	if int64(int32(binary.BigEndian.Uint32(b[8:12])))+12 != int64(len(b)) ||
		crc32.Checksum(b[21:], castagnoli) != binary.BigEndian.Uint32(b[17:21]) {
		return nil, nil
	}
	n := int64(int32(binary.BigEndian.Uint32(b[57:61])))
	if n < 0 || n > int64((len(b)-batchHeaderLen)/minRecordLen) {
		return nil, nil
	}
	if a != nil {
		if err := a.Reserve(int(n) * recordViewSize); err != nil {
			return nil, err
		}
	}
	v := viewPool.Get().(*batchView)
	v.krox, v.marked = false, false
	off := batchHeaderLen
	for range n {
		r, ok := v.readRecord(b, off)
		if !ok {
			v.release()
			return nil, nil
		}
		v.records = append(v.records, r)
		off = r.end
	}
	if off != len(b) {
		v.release()
		return nil, nil
	}
	return v, nil
}

// readRecord reads the record at off, noting the markers it carries.
func (v *batchView) readRecord(b []byte, off int) (recordView, bool) {
	var r recordView
	length, off, ok := readVarint(b, off, math.MaxInt32)
	if !ok || length < 0 || length > int64(len(b)-off) {
		return r, false
	}
	b, r.body, r.end = b[:off+int(length)], off, off+int(length)
	if off++; off > len(b) { // attributes
		return r, false
	}
	if _, off, ok = readVarint(b, off, math.MaxInt64); !ok { // timestamp delta
		return r, false
	}
	if _, off, ok = readVarint(b, off, math.MaxInt32); !ok { // offset delta
		return r, false
	}
	if _, off, ok = readBytes(b, off); !ok { // key
		return r, false
	}
	r.keyEnd = off
	if r.value, off, ok = readBytes(b, off); !ok {
		return r, false
	}
	count, off, ok := readVarint(b, off, math.MaxInt32)
	if !ok || count < 0 || count > int64(len(b)-off)/2 {
		return r, false
	}
	r.count, r.headers, r.markStart, r.markEnd = int(count), off, -1, -1
	for range count {
		start := off
		var key []byte
		if key, off, ok = readBytes(b, off); !ok || key == nil {
			return r, false
		}
		if _, off, ok = readBytes(b, off); !ok {
			return r, false
		}
		switch string(key) {
		case HeaderKey:
			r.markStart, r.markEnd, v.marked = start, off, true
		case KroxyliciousHeaderKey:
			v.krox = true
		}
	}
	return r, off == r.end
}

// readVarint reads a zigzag varint in its shortest form, whose value is within ±limit.
func readVarint(b []byte, off int, limit int64) (int64, int, bool) {
	x, n := binary.Varint(b[off:])
	if n <= 0 || n != varintLen(x) || x > limit || x < -limit-1 {
		return 0, 0, false
	}
	return x, off + n, true
}

// readBytes reads Kafka's varint-length bytes: nil for the null length -1.
func readBytes(b []byte, off int) ([]byte, int, bool) {
	n, off, ok := readVarint(b, off, math.MaxInt32)
	switch {
	case !ok || n < -1 || n > int64(len(b)-off):
		return nil, 0, false
	case n == -1:
		return nil, off, true
	}
	return b[off : off+int(n) : off+int(n)], off + int(n), true
}

// varintLen is the size of x as a zigzag varint.
func varintLen(x int64) int {
	u := uint64(x<<1) ^ uint64(x>>63)
	return (bits.Len64(u|1) + 6) / 7
}

// appendMarker appends a header of one byte's value: a format's marker.
func appendMarker(dst []byte, key string, version byte) []byte {
	dst = binary.AppendVarint(dst, int64(len(key)))
	dst = append(dst, key...)
	return append(binary.AppendVarint(dst, 1), version)
}

var (
	kafkalinkMarker    = appendMarker(nil, HeaderKey, FormatVersion)
	kroxyliciousMarker = appendMarker(nil, KroxyliciousHeaderKey, KroxyliciousV2)
)

// finishBatch sets the length and CRC of the batch written from start to the end of out.
func finishBatch(out []byte, start int) {
	batch := out[start:]
	binary.BigEndian.PutUint32(batch[8:12], uint32(len(batch)-12))
	binary.BigEndian.PutUint32(batch[17:21], crc32.Checksum(batch[21:], castagnoli))
}

// directSealer encrypts the values of uncompressed batches under one DEK in the format the
// filter writes, record by record into the output.
type directSealer struct {
	d      *dekState
	first  uint64 // the counter of the batch's first record: the DEK's nonces (dekState.nonce)
	prefix []byte // what comes before the nonce, the same for every value under d
	aad    []byte // kafkalink's format: the topic's
	marker []byte
	krox   bool
	nonce  [nonceLen]byte // the current record's, here so that the AEAD's calls need no copy
}

func (e *encryptor) directSealer(kekID, topic string, d *dekState, first uint64) *directSealer {
	if e.kroxylicious {
		return &directSealer{d: d, first: first, prefix: appendWrapperV2Prefix(nil, kekID, d.edek), marker: kroxyliciousMarker, krox: true}
	}
	prefix := []byte{FormatVersion}
	prefix = binary.AppendUvarint(prefix, uint64(len(kekID)))
	prefix = append(prefix, kekID...)
	prefix = binary.AppendUvarint(prefix, uint64(len(d.edek)))
	prefix = append(prefix, d.edek...)
	return &directSealer{d: d, first: first, prefix: prefix, aad: aad(topic), marker: kafkalinkMarker}
}

// growth is the most an encrypted record is larger than the record it was: the sealed value's
// additions, the marker, and longer varints for the record's length, value length and header
// count.
func (s *directSealer) growth() int {
	return len(s.prefix) + nonceLen + gcmTagLen + len(s.marker) + 3*binary.MaxVarintLen32
}

// valueLen is the length of a value once sealed.
func (s *directSealer) valueLen(v []byte) int {
	n := len(v)
	if s.krox {
		n = parcelV1Len(v)
	}
	return len(s.prefix) + nonceLen + n + gcmTagLen
}

// appendBatch appends batch b, whose view is v, with every value sealed; each record's nonce
// counts from s.first.
func (s *directSealer) appendBatch(out, b []byte, v *batchView) []byte {
	start := len(out)
	out = append(out, b[:batchHeaderLen]...)
	for i := range v.records {
		out = s.appendRecord(out, b, &v.records[i], s.first+uint64(i))
	}
	finishBatch(out, start)
	return out
}

// appendRecord writes one record as appendRecord of the records package would once the sealer
// rewrote it: a null value stays as it is, unmarked.
func (s *directSealer) appendRecord(out, b []byte, r *recordView, counter uint64) []byte {
	if r.value == nil {
		return append(binary.AppendVarint(out, int64(r.end-r.body)), b[r.body:r.end]...)
	}
	n := s.valueLen(r.value)
	body := r.keyEnd - r.body + varintLen(int64(n)) + n + varintLen(int64(r.count+1)) + r.end - r.headers + len(s.marker)
	out = binary.AppendVarint(out, int64(body))
	out = append(out, b[r.body:r.keyEnd]...)
	out = binary.AppendVarint(out, int64(n))
	out = append(out, s.prefix...)
	s.nonce = s.d.nonce(counter)
	nonce := s.nonce[:]
	out = append(out, nonce...)
	if s.krox {
		// The parcel is written where its ciphertext goes and sealed in place.
		at := len(out)
		out = appendParcelV1(out, r.value)
		out = s.d.aead.Seal(out[:at], nonce, out[at:], nil)
		out = binary.AppendVarint(out, int64(r.count+1))
		out = append(out, s.marker...) // Kroxylicious' marker is the first header
		return append(out, b[r.headers:r.end]...)
	}
	out = s.d.aead.Seal(out, nonce, r.value, s.aad)
	out = binary.AppendVarint(out, int64(r.count+1))
	out = append(out, b[r.headers:r.end]...)
	return append(out, s.marker...) // kafkalink's after the record's own
}

// sealedRecords counts a batch's records and those with a value, which are sealed.
func (v *batchView) sealedRecords() sealedCount {
	n := sealedCount{records: len(v.records)}
	for i := range v.records {
		if v.records[i].value != nil {
			n.values++
		}
	}
	return n
}

// batchRecords is the record count in a batch's header, bounded by what its bytes can hold.
func batchRecords(b []byte) int {
	if len(b) < batchHeaderLen {
		return 0
	}
	n := int(int32(binary.BigEndian.Uint32(b[57:61])))
	return max(0, min(n, (len(b)-batchHeaderLen)/minRecordLen))
}
