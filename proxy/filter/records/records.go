// Package records decodes Kafka record batches (message format v2, as every client since Kafka
// 0.11 sends) into records and encodes them back, compressed with the batch's own codec, for the
// proxy's filters (issue 14: record encryption and validation), which must change record values
// and keep everything else: base offset, leader epoch, timestamps, producer id, epoch and
// sequence, transactional and control flags, headers.
//
// The bytes are untrusted: every length is checked against what is left, and no input panics
// (FuzzRoundTrip). What a batch costs once decoded (its decompressed records, the decoded
// records' structures, its re-encoded form) is taken from an Allowance before it is allocated,
// so a small compressed batch cannot make the proxy allocate without limit.
package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Codec is a batch's compression, attributes bits 0-2.
type Codec int8

// The codecs of message format v2.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// DefaultMaxBatch bounds one batch's decompressed records when Decode is given no Allowance.
const DefaultMaxBatch = 8 << 20

// Allowance bounds what decoding and re-encoding batches may allocate: the proxy's filters
// give each request and response one (filter.Allowance), shared by all its batches.
// Decompressed bytes count against its share (Take); the working memory made of them (decoded
// records, re-encoded batches) against the process's budget only (Reserve), so that a request
// of very compressible records is bounded by what it decompresses to, not refused for what
// re-encoding it costs.
type Allowance interface {
	// MaxBatch is the most one batch's records may take once decompressed.
	MaxBatch() int
	// Left is what may still be taken.
	Left() int
	// Take reserves n decompressed bytes, or fails (ErrShareSpent past Left, or the process
	// has no room).
	Take(n int) error
	// Give returns n bytes reserved by Take that were not used.
	Give(n int)
	// Reserve reserves n bytes of working memory, or fails (the process has no room).
	Reserve(n int) error
}

// ErrMalformed marks bytes that are not a record batch this package reads.
var ErrMalformed = errors.New("malformed record batch")

// ErrTooLarge marks a batch, or a request's or response's batches, larger once decompressed or
// decoded than the Allowance lets them be.
var ErrTooLarge = errors.New("record batch too large once decompressed")

// ErrShareSpent is ErrTooLarge because the Allowance's share ran out (other batches of the same
// request or response took it), not because the batch alone is over MaxBatch.
var ErrShareSpent = fmt.Errorf("%w: the request's or response's share of memory is spent", ErrTooLarge)

// ErrUnsupported marks a batch that is well formed but not message format v2.
var ErrUnsupported = errors.New("unsupported record batch")

// Batch is one decoded record batch: its header (Records, Length, CRC and NumRecords are
// recomputed by Encode) and its records.
type Batch struct {
	Header  kmsg.RecordBatch
	Records []kmsg.Record
	// allowance, from DecodeWithin, is charged for the batch's re-encoding too.
	allowance Allowance
	// plain is the pooled buffer of a compressed batch's records, which they point into.
	plain []byte
}

// Release gives the buffer a compressed batch was decompressed into back to its pool: the
// batch's records, which point into it, must not be used afterwards (they are cleared).
// Filters call it once a batch is re-encoded or checked; a batch never released is only
// garbage.
func (b *Batch) Release() {
	putPlain(b.plain)
	b.plain, b.Records = nil, nil
}

// plainClasses are the sizes of pooled decompression buffers: 64 KiB times powers of four.
// Every produced and fetched batch of an encrypting or validating virtual cluster is
// decompressed, so fresh buffers for each were much of the compressed paths' garbage.
var plainClasses = [...]int{64 << 10, 256 << 10, 1 << 20, 4 << 20}

var plainPools [len(plainClasses)]sync.Pool

// getPlain returns an empty buffer with room for n bytes: pooled up to the largest class.
func getPlain(n int) []byte {
	for i, c := range plainClasses {
		if n <= c {
			if b, ok := plainPools[i].Get().(*[]byte); ok {
				return (*b)[:0]
			}
			return make([]byte, 0, c)
		}
	}
	return make([]byte, 0, n)
}

// putPlain gives a buffer from getPlain back; one of another size is left to the collector.
func putPlain(b []byte) {
	for i, c := range plainClasses {
		if cap(b) == c {
			b = b[:0]
			plainPools[i].Put(&b)
			return
		}
	}
}

// Codec is the batch's compression.
func (b *Batch) Codec() Codec { return Codec(b.Header.Attributes & 0x07) }

// castagnoli is the CRC-32C table message format v2 uses.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchHeaderLen is the size of a v2 batch header up to and including the record count.
const batchHeaderLen = 61

// Split cuts the concatenated batches of a partition's records field into batches, without
// decoding them. A trailing partial batch (which a broker may send in a Fetch response) is
// returned as rest.
func Split(raw []byte) (batches [][]byte, rest []byte, err error) {
	for len(raw) > 0 {
		if len(raw) < 12 {
			return batches, raw, nil
		}
		n := int64(int32(binary.BigEndian.Uint32(raw[8:12])))
		if n < batchHeaderLen-12 {
			return nil, nil, fmt.Errorf("%w: batch length %d", ErrMalformed, n)
		}
		if int64(len(raw)) < 12+n {
			return batches, raw, nil
		}
		batches = append(batches, raw[:12+n])
		raw = raw[12+n:]
	}
	return batches, nil, nil
}

// Decode reads one record batch: its header, checked CRC, and records, decompressed, at most
// DefaultMaxBatch bytes of them.
func Decode(raw []byte) (*Batch, error) { return DecodeWithin(raw, nil) }

// Sizes of the decoded forms, charged to an Allowance: a record takes at least minRecordLen
// bytes on the wire and a header minHeaderLen, each far less than its Go structure.
var (
	recordSize   = int(unsafe.Sizeof(kmsg.Record{}))
	headerSize   = int(unsafe.Sizeof(kmsg.Header{}))
	minRecordLen = 7 // length, attributes, timestamp and offset deltas, null key and value, no headers
)

// DecodeWithin is Decode charging a what the batch costs (a nil a: only DefaultMaxBatch applies).
func DecodeWithin(raw []byte, a Allowance) (*Batch, error) {
	if len(raw) < batchHeaderLen {
		return nil, fmt.Errorf("%w: %d bytes", ErrMalformed, len(raw))
	}
	if magic := int8(raw[16]); magic != 2 {
		return nil, fmt.Errorf("%w: magic %d (message format v%d); only v2 is read", ErrUnsupported, magic, magic)
	}
	b := &Batch{}
	if err := b.Header.ReadFrom(raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if int64(b.Header.Length)+12 != int64(len(raw)) {
		return nil, fmt.Errorf("%w: length %d for %d bytes", ErrMalformed, b.Header.Length, len(raw))
	}
	if crc := crc32.Checksum(raw[21:], castagnoli); int32(crc) != b.Header.CRC {
		return nil, fmt.Errorf("%w: CRC mismatch", ErrMalformed)
	}
	b.allowance = a
	plain, err := decompressWithin(b.Codec(), b.Header.Records, a)
	if err != nil {
		return nil, err
	}
	if b.Codec() != CodecNone {
		b.plain = plain
	}
	if b.Header.NumRecords < 0 || int64(b.Header.NumRecords) > int64(len(plain)/minRecordLen) {
		return nil, fmt.Errorf("%w: %d records in %d bytes", ErrMalformed, b.Header.NumRecords, len(plain))
	}
	if err := reserve(a, int(b.Header.NumRecords)*recordSize); err != nil {
		return nil, err
	}
	b.Records = make([]kmsg.Record, 0, b.Header.NumRecords)
	headers := 0
	for i := int32(0); i < b.Header.NumRecords; i++ {
		length, n := binary.Varint(plain)
		if n <= 0 || length < 0 || length > int64(len(plain)-n) {
			return nil, fmt.Errorf("%w: record %d", ErrMalformed, i)
		}
		var r kmsg.Record
		if err := r.ReadFrom(plain[:n+int(length)]); err != nil {
			return nil, fmt.Errorf("%w: record %d: %w", ErrMalformed, i, err)
		}
		headers += len(r.Headers)
		b.Records = append(b.Records, r)
		plain = plain[n+int(length):]
	}
	if len(plain) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last record", ErrMalformed, len(plain))
	}
	// Headers are counted once decoded (at most one per two bytes of records): one charge per
	// batch rather than one per record.
	if err := reserve(a, headers*headerSize); err != nil {
		return nil, err
	}
	return b, nil
}

// Encode writes the batch back: records (with their lengths recomputed) compressed with the
// batch's codec, then the header with its record count, length and CRC recomputed. Everything
// else in the header is kept as it is.
func (b *Batch) Encode() ([]byte, error) { return b.AppendTo(nil) }

// AppendTo is Encode appending to dst, so that a partition's batches are written into one
// buffer without a copy each.
func (b *Batch) AppendTo(dst []byte) ([]byte, error) { return b.AppendRewritten(dst, nil) }

// Rewrite replaces record values while a batch is encoded, so that a new value (a ciphertext)
// is written once, into the batch, and never held apart.
type Rewrite struct {
	// Len is record i's new value length; -1 keeps its value.
	Len func(i int) int
	// Append appends record i's new value to dst: exactly Len(i) bytes.
	Append func(dst []byte, i int) ([]byte, error)
}

// AppendRewritten is AppendTo with record values replaced by rw (nil: none replaced).
func (b *Batch) AppendRewritten(dst []byte, rw *Rewrite) ([]byte, error) {
	h := b.Header
	h.Records = nil
	h.NumRecords = int32(len(b.Records))
	h.Length, h.CRC = 0, 0
	start := len(dst)
	hint := b.sizeHint(rw)
	// The batch as written, and for a compressed one its records before compression: the
	// compressed form is at most about the size of the records it compresses.
	cost := batchHeaderLen + hint
	if b.Codec() != CodecNone {
		cost += hint
	}
	if err := reserve(b.allowance, cost); err != nil {
		return nil, err
	}
	out := h.AppendTo(slices.Grow(dst, batchHeaderLen+hint))
	// Uncompressed records go straight after the header; others are compressed there.
	plain := out
	if b.Codec() != CodecNone {
		plain = make([]byte, 0, hint)
	}
	for i := range b.Records {
		var err error
		if plain, err = appendRecord(plain, &b.Records[i], i, rw); err != nil {
			return nil, err
		}
	}
	if b.Codec() == CodecNone {
		out = plain
	} else {
		compressed, err := compress(b.Codec(), plain)
		if err != nil {
			return nil, err
		}
		out = append(out, compressed...)
	}
	batch := out[start:]
	binary.BigEndian.PutUint32(batch[8:12], uint32(len(batch)-12))
	binary.BigEndian.PutUint32(batch[17:21], crc32.Checksum(batch[21:], castagnoli))
	return out, nil
}

// appendRecord writes record i in message format v2's record layout (the one recordBodyLen
// measures), its length computed, and its value from rw when rw replaces it.
func appendRecord(dst []byte, r *kmsg.Record, i int, rw *Rewrite) ([]byte, error) {
	n := -1 // the new value's length; -1: the record's own value
	if rw != nil {
		n = rw.Len(i)
	}
	bodyLen := recordBodyLen(r)
	if n >= 0 {
		bodyLen += varintLen(int64(n)) + n - bytesLen(r.Value)
	}
	ts := r.TimestampDelta64
	if ts == 0 {
		ts = int64(r.TimestampDelta)
	}
	dst = binary.AppendVarint(dst, int64(bodyLen))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, ts)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendBytes(dst, r.Key)
	if n < 0 {
		dst = appendBytes(dst, r.Value)
	} else {
		dst = binary.AppendVarint(dst, int64(n))
		before := len(dst)
		var err error
		if dst, err = rw.Append(dst, i); err != nil {
			return nil, err
		}
		if len(dst)-before != n {
			return nil, fmt.Errorf("record %d: a rewritten value of %d bytes, announced as %d", i, len(dst)-before, n)
		}
	}
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytes(dst, h.Value)
	}
	return dst, nil
}

// appendBytes writes Kafka's varint-length bytes (length -1 for null).
func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(b))), b...)
}

// recordBodyLen is the size of a record after its length field, as appendRecord writes it,
// computed rather than written out (records are large; writing each one twice was most of the
// cost of re-encoding a batch).
func recordBodyLen(r *kmsg.Record) int {
	ts := r.TimestampDelta64
	if ts == 0 {
		ts = int64(r.TimestampDelta)
	}
	n := 1 + varintLen(ts) + varintLen(int64(r.OffsetDelta)) + bytesLen(r.Key) + bytesLen(r.Value) + varintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	return n
}

// varintLen is the size of v as a zigzag varint.
func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// bytesLen is the size of b as Kafka's varint-length bytes (length -1 for null).
func bytesLen(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

// sizeHint is about the encoded size of the batch's records: their keys, values (as rw
// rewrites them) and headers, and the varints and fields around them.
func (b *Batch) sizeHint(rw *Rewrite) int {
	n := 0
	for i, r := range b.Records {
		v := len(r.Value)
		if rw != nil {
			if l := rw.Len(i); l >= 0 {
				v = l
			}
		}
		n += len(r.Key) + v + 24
		for _, h := range r.Headers {
			n += len(h.Key) + len(h.Value) + 10
		}
	}
	return n
}

// reserve charges a's working memory, when there is an a.
func reserve(a Allowance, n int) error {
	if a == nil {
		return nil
	}
	return a.Reserve(n)
}

// decompressWithin decompresses a batch's records: at most a's MaxBatch and what a has left,
// taken from a before decompressing and the unused part given back.
func decompressWithin(c Codec, in []byte, a Allowance) ([]byte, error) {
	if c == CodecNone {
		return in, nil // no copy: the records are read in place
	}
	limit := DefaultMaxBatch
	if a != nil {
		limit = min(a.MaxBatch(), a.Left())
		if err := a.Take(limit); err != nil {
			return nil, err
		}
	}
	out, err := decompress(c, in, limit)
	if a != nil {
		a.Give(limit - len(out))
	}
	if errors.Is(err, ErrTooLarge) && a != nil && limit < a.MaxBatch() {
		return nil, fmt.Errorf("%w (%d bytes were left)", ErrShareSpent, limit)
	}
	return out, err
}

// decompress decompresses at most limit bytes; more is ErrTooLarge.
func decompress(c Codec, in []byte, limit int) ([]byte, error) {
	var r io.Reader
	switch c {
	case CodecNone:
		return in, nil
	case CodecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(in))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %w", ErrMalformed, err)
		}
		defer zr.Close()
		r = zr
	case CodecSnappy:
		return decompressSnappy(in, limit)
	case CodecLZ4:
		r = lz4.NewReader(bytes.NewReader(in))
	case CodecZstd:
		zr, err := zstd.NewReader(bytes.NewReader(in), zstd.WithDecoderMaxMemory(uint64(limit)+1), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %w", ErrMalformed, err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("%w: compression codec %d", ErrUnsupported, c)
	}
	out, err := readAtMost(r, limit)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		// zstd refuses a frame whose declared size or window is over limit before decoding it.
		return nil, fmt.Errorf("%w: more than %d bytes: %w", ErrTooLarge, limit, err)
	}
	if err != nil && !errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("%w: codec %d: %w", ErrMalformed, c, err)
	}
	return out, err
}

// readAtMost reads r to its end into a pooled buffer that grows (by four) with what arrives,
// never reading past limit bytes (io.ReadAll's growth could overshoot the limit by half).
func readAtMost(r io.Reader, limit int) ([]byte, error) {
	buf := getPlain(min(limit, plainClasses[0]))
	for {
		room := min(cap(buf), limit)
		if len(buf) == room {
			if len(buf) >= limit {
				var one [1]byte
				if n, _ := io.ReadFull(r, one[:]); n > 0 {
					putPlain(buf)
					return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
				}
				return buf, nil
			}
			old := buf
			buf = append(getPlain(min(4*cap(buf), limit)), old...)
			putPlain(old)
			room = min(cap(buf), limit)
		}
		n, err := r.Read(buf[len(buf):room])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			putPlain(buf)
			return nil, err
		}
	}
}

// xerialMagic starts Java's snappy framing (snappy-java's xerial format), which Java producers
// use; other clients send raw snappy blocks.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func decompressSnappy(in []byte, limit int) ([]byte, error) {
	if !bytes.HasPrefix(in, xerialMagic) {
		return snappyBlock(in, limit)
	}
	if len(in) < 16 {
		return nil, fmt.Errorf("%w: xerial snappy header", ErrMalformed)
	}
	in = in[16:] // magic, version, compatible version
	// Two passes: the decoded sizes added up (a total over limit is refused before anything is
	// decoded), then each chunk decoded into its place in one buffer of the exact size.
	total := 0
	err := eachXerialChunk(in, func(_ []byte, size int) error {
		if size > limit-total {
			return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
		}
		total += size
		return nil
	})
	if err != nil {
		return nil, err
	}
	out, off := getPlain(total)[:total], 0
	err = eachXerialChunk(in, func(chunk []byte, size int) error {
		if _, err := s2.Decode(out[off:off+size], chunk); err != nil {
			return fmt.Errorf("%w: snappy: %w", ErrMalformed, err)
		}
		off += size
		return nil
	})
	return out, err
}

// eachXerialChunk calls fn with each snappy block of xerial framing and its decoded size.
func eachXerialChunk(in []byte, fn func(chunk []byte, size int) error) error {
	for len(in) > 0 {
		if len(in) < 4 {
			return fmt.Errorf("%w: xerial snappy chunk", ErrMalformed)
		}
		n := int64(binary.BigEndian.Uint32(in))
		if n > int64(len(in)-4) {
			return fmt.Errorf("%w: xerial snappy chunk of %d bytes", ErrMalformed, n)
		}
		size, err := s2.DecodedLen(in[4 : 4+n])
		if err != nil {
			return fmt.Errorf("%w: snappy block", ErrMalformed)
		}
		if err := fn(in[4:4+n], size); err != nil {
			return err
		}
		in = in[4+n:]
	}
	return nil
}

func snappyBlock(in []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(in)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy block", ErrMalformed)
	}
	if n > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	out, err := s2.Decode(getPlain(n)[:n], in)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %w", ErrMalformed, err)
	}
	return out, nil
}

func compress(c Codec, in []byte) ([]byte, error) {
	var buf bytes.Buffer
	switch c {
	case CodecNone:
		return in, nil
	case CodecGzip:
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(in); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	case CodecSnappy:
		// Raw snappy blocks, as franz-go and librdkafka write; the broker and Java read them.
		return s2.EncodeSnappy(nil, in), nil
	case CodecLZ4:
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(in); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	case CodecZstd:
		w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(in); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: compression codec %d", ErrUnsupported, c)
	}
	return buf.Bytes(), nil
}
