package kafka

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch responses are the bulk of a consumer's traffic and can be tens of MiB. Buffering one
// whole before forwarding it would serialise the broker-to-proxy and proxy-to-client
// transfers and halve fetch throughput. So a Fetch v16+ response is streamed: its structure
// is walked as it is copied, records included, and only the top-level tagged fields at its
// very end (where NodeEndpoints live) are held back and rewritten. The frame size has
// already gone out by then, so the rewritten tagged section keeps the original length:
// NodeEndpoints are rewritten in place and the difference is filled with a padding tag
// that clients skip as unknown; when the rewritten endpoints do not fit, they are dropped
// (clients then refresh metadata, as before KIP-951) but never leak an upstream address.
//
// That loss only touches large responses: one up to FetchBufferLimit is read whole and
// rewritten exactly by RewriteFetch, whatever the host lengths. A leader change is answered
// with partitions that carry an error and no records, so the responses with NodeEndpoints are
// small unless other partitions of the same request bring much data at the same time.

// PaddingTag is the tag number used to keep a rewritten tagged section at its original
// length. It is far above any tag Kafka defines, so clients skip it as unknown.
const PaddingTag = 16383

// walker passes a frame on through mv while decoding its structure, within left bytes.
type walker struct {
	mv   mover
	left int64
	err  error
}

func (w *walker) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *walker) copyN(n int64) {
	if w.err != nil {
		return
	}
	if n < 0 || n > w.left {
		w.fail(malformed("field of %d bytes with %d left in the frame", n, w.left))
		return
	}
	if err := w.mv.pass(n); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		w.fail(err)
		return
	}
	w.left -= n
}

func (w *walker) uvarint() uint64 {
	if w.err != nil {
		return 0
	}
	b, err := w.mv.src.Peek(int(min(w.left, binary.MaxVarintLen64)))
	if len(b) == 0 && err != nil {
		w.fail(err)
		return 0
	}
	v, n := binary.Uvarint(b)
	if n <= 0 {
		w.fail(malformed("bad varint"))
		return 0
	}
	w.copyN(int64(n))
	return v
}

// cursor moves through a Fetch response body: walker streams it, sliceCursor scans a buffered
// one. Both check every length against the bytes left.
type cursor interface {
	// advance moves over n bytes (copying them, for walker).
	advance(n int64)
	uvarint() uint64
	remaining() int64
	failed() bool
	fail(err error)
}

func (w *walker) advance(n int64)  { w.copyN(n) }
func (w *walker) remaining() int64 { return w.left }
func (w *walker) failed() bool     { return w.err != nil }

// array walks a compact array, calling elem for each element.
func array(c cursor, elem func()) {
	n := c.uvarint()
	if n == 0 { // null
		return
	}
	if n-1 > uint64(c.remaining()) { // every element takes at least one byte
		c.fail(malformed("array of %d elements with %d bytes left", n-1, c.remaining()))
		return
	}
	for i := uint64(1); i < n && !c.failed(); i++ {
		elem()
	}
}

func skipTagSection(c cursor) {
	n := c.uvarint()
	if n > uint64(c.remaining()) {
		c.fail(malformed("%d tags with %d bytes left", n, c.remaining()))
		return
	}
	for i := uint64(0); i < n && !c.failed(); i++ {
		c.uvarint()
		size := c.uvarint()
		if size > uint64(c.remaining()) {
			c.fail(malformed("tag of %d bytes with %d left", size, c.remaining()))
			return
		}
		c.advance(int64(size))
	}
}

// walkFetchBody moves c from the throttle time of a flexible Fetch response (after the
// response header) to its top-level tagged fields; with walkTopicKey and walkPartition, the one
// place that knows the layout.
func walkFetchBody(c cursor, version int16) {
	c.advance(4 + 2 + 4) // throttle, error code, session id
	array(c, func() {    // topics
		walkTopicKey(c, version)
		array(c, func() { walkPartition(c) })
		skipTagSection(c)
	})
}

// walkTopicKey moves over a Fetch response topic's name (v12) or id (v13+).
func walkTopicKey(c cursor, version int16) {
	if version >= 13 {
		c.advance(16)
	} else if l := c.uvarint(); l > 0 {
		c.advance(int64(l - 1))
	}
}

// walkPartition moves over one partition of a flexible Fetch response, records included.
func walkPartition(c cursor) {
	c.advance(4 + 2 + 8 + 8 + 8) // index, error code, high watermark, last stable offset, log start offset
	array(c, func() {            // aborted transactions
		c.advance(16)
		skipTagSection(c)
	})
	c.advance(4)                 // preferred read replica
	if l := c.uvarint(); l > 0 { // records
		c.advance(int64(l - 1))
	}
	skipTagSection(c)
}

// StreamFetch copies one Fetch response frame (size included, total bytes long) of version
// 12 or later from src to dst, rewriting the NodeEndpoints of v16+ with m as described
// above. It returns the number of addresses rewritten.
func StreamFetch(src *bufio.Reader, dst io.Writer, version int16, total int64, m AddressMap) (n int, dropped bool, err error) {
	return streamFetch(mover{src: src, dst: dst}, version, total, m)
}

// streamFetch is StreamFetch through mv, which may splice the records.
func streamFetch(mv mover, version int16, total int64, m AddressMap) (n int, dropped bool, err error) {
	if version < 12 || version > MaxVersion(kmsg.Fetch.Int16()) {
		return 0, false, malformed("StreamFetch needs a flexible Fetch version, got v%d", version)
	}
	src, dst := mv.src, mv.dst
	w := &walker{mv: mv, left: total}
	w.copyN(8)        // size, correlation id
	skipTagSection(w) // response header
	walkFetchBody(w, version)
	if w.err != nil {
		return 0, false, w.err
	}
	// The rest of the frame is the top-level tagged section.
	if w.left > 1<<20 {
		return 0, false, malformed("%d bytes of top-level tagged fields", w.left)
	}
	tail := make([]byte, w.left)
	if _, err := io.ReadFull(src, tail); err != nil {
		return 0, false, err
	}
	if version < 16 {
		_, err := dst.Write(tail)
		return 0, false, err
	}
	out, n, dropped, err := rewriteTagSection(tail, m, len(tail))
	if err != nil {
		return 0, false, err
	}
	_, err = dst.Write(out)
	return n, dropped, err
}

// sliceCursor is a cursor over a buffered frame.
type sliceCursor struct {
	b   []byte
	off int
	err error
}

func (s *sliceCursor) advance(n int64) {
	if s.err == nil && (n < 0 || n > s.remaining()) {
		s.fail(malformed("field of %d bytes with %d left in the frame", n, s.remaining()))
	}
	if s.err == nil {
		s.off += int(n)
	}
}

func (s *sliceCursor) uvarint() uint64 {
	if s.err != nil {
		return 0
	}
	v, n := binary.Uvarint(s.b[s.off:])
	if n <= 0 {
		s.fail(malformed("bad varint"))
		return 0
	}
	s.off += n
	return v
}

func (s *sliceCursor) remaining() int64 { return int64(len(s.b) - s.off) }
func (s *sliceCursor) failed() bool     { return s.err != nil }
func (s *sliceCursor) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// RewriteFetch rewrites the NodeEndpoints of a whole Fetch v16+ response frame (the bytes after
// the size) exactly, whatever the length of the new host names, for responses small enough to
// be buffered (FetchBufferLimit). It appends the new frame, without size, to dst and returns it
// with the number of addresses rewritten; a nil slice means the frame carries no endpoints
// and goes out unchanged. Only the top-level tagged section is decoded: records are copied
// as bytes.
func RewriteFetch(dst []byte, version int16, frame []byte, m AddressMap) ([]byte, int, error) {
	head, tags, n, err := rewriteFetchTags(version, frame, m)
	if err != nil || tags == nil {
		return nil, 0, err
	}
	return append(append(dst, frame[:head]...), tags...), n, nil
}

// writeFetch writes a whole Fetch response frame (size included) to dst from where it lies,
// the NodeEndpoints of v16+ rewritten exactly as RewriteFetch does (the frame's size set to the
// new length), and returns the number of addresses rewritten.
func writeFetch(dst io.Writer, version int16, frame []byte, m AddressMap) (int, error) {
	if len(frame) < 4 {
		return 0, malformed("a Fetch response frame of %d bytes", len(frame))
	}
	if version < 16 {
		_, err := dst.Write(frame)
		return 0, err
	}
	head, tags, n, err := rewriteFetchTags(version, frame[4:], m)
	if err != nil {
		return 0, err
	}
	if tags == nil {
		_, err := dst.Write(frame)
		return 0, err
	}
	size := int64(head) + int64(len(tags))
	if size > math.MaxInt32 {
		return 0, malformed("a rewritten Fetch response of %d bytes: more than a frame can say", size)
	}
	binary.BigEndian.PutUint32(frame, uint32(size))
	if _, err := dst.Write(frame[:4+head]); err != nil {
		return 0, err
	}
	_, err = dst.Write(tags)
	return n, err
}

// rewriteFetchTags finds the top-level tagged section of a Fetch v16+ response frame (the bytes
// after the size), at head, and returns it re-encoded with its NodeEndpoints rewritten by m; nil
// tags when it has none.
func rewriteFetchTags(version int16, frame []byte, m AddressMap) (head int, tags []byte, n int, err error) {
	if version < 16 || version > MaxVersion(kmsg.Fetch.Int16()) {
		return 0, nil, 0, malformed("RewriteFetch needs Fetch v16 to v%d, got v%d", MaxVersion(kmsg.Fetch.Int16()), version)
	}
	c := &sliceCursor{b: frame}
	c.advance(4) // correlation id
	skipTagSection(c)
	walkFetchBody(c, version)
	if c.err != nil {
		return 0, nil, 0, c.err
	}
	parsed, err := parseTags(frame[c.off:])
	if err != nil {
		return 0, nil, 0, err
	}
	idx := slices.IndexFunc(parsed, func(t tag) bool { return t.key == 0 })
	if idx < 0 {
		return c.off, nil, 0, nil
	}
	eps, n, err := rewriteEndpoints(parsed[idx].data, m)
	if err != nil {
		return 0, nil, 0, err
	}
	parsed[idx].data = eps
	tags = binary.AppendUvarint(nil, uint64(len(parsed)))
	for _, t := range parsed {
		tags = appendTag(tags, t)
	}
	return c.off, tags, n, nil
}

type tag struct {
	key  uint64
	data []byte
}

func parseTags(b []byte) ([]tag, error) {
	s := scanner{b: b}
	var tags []tag
	s.eachTag(func(key uint64, data []byte) { tags = append(tags, tag{key: key, data: data}) })
	if s.err != nil {
		return nil, malformed("bad tagged-field section")
	}
	if s.off != len(b) {
		return nil, malformed("%d bytes after the tagged fields", len(b)-s.off)
	}
	return tags, nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func appendTag(dst []byte, t tag) []byte {
	dst = binary.AppendUvarint(dst, t.key)
	dst = binary.AppendUvarint(dst, uint64(len(t.data)))
	return append(dst, t.data...)
}

// padTo encodes tags plus, if needed, one padding tag so that the section is exactly size
// bytes long. ok is false when that is impossible.
func padTo(tags []tag, size int) ([]byte, bool) {
	body := 0
	var maxKey uint64
	for _, t := range tags {
		body += uvarintLen(t.key) + uvarintLen(uint64(len(t.data))) + len(t.data)
		maxKey = max(maxKey, t.key)
	}
	if uvarintLen(uint64(len(tags)))+body == size {
		out := binary.AppendUvarint(make([]byte, 0, size), uint64(len(tags)))
		for _, t := range tags {
			out = appendTag(out, t)
		}
		return out, true
	}
	key := uint64(PaddingTag)
	if maxKey >= key {
		key = maxKey + 1
	}
	need := size - uvarintLen(uint64(len(tags)+1)) - body - uvarintLen(key)
	for sl := 1; sl <= binary.MaxVarintLen32; sl++ {
		c := need - sl
		if c >= 0 && uvarintLen(uint64(c)) == sl {
			out := binary.AppendUvarint(make([]byte, 0, size), uint64(len(tags)+1))
			for _, t := range tags {
				out = appendTag(out, t)
			}
			return appendTag(out, tag{key: key, data: make([]byte, c)}), true
		}
	}
	return nil, false
}

// rewriteTagSection rewrites the NodeEndpoints (tag 0) of a Fetch response's top-level
// tagged section, making it size bytes long (at least its length) with a padding tag.
func rewriteTagSection(section []byte, m AddressMap, size int) (out []byte, n int, dropped bool, err error) {
	tags, err := parseTags(section)
	if err != nil {
		return nil, 0, false, err
	}
	idx := slices.IndexFunc(tags, func(t tag) bool { return t.key == 0 })
	if idx < 0 && size == len(section) {
		return section, 0, false, nil
	}
	if idx < 0 {
		if out, ok := padTo(tags, size); ok {
			return out, 0, false, nil
		}
		return nil, 0, false, errors.New("cannot pad a Fetch response's tagged fields to the announced size")
	}
	eps, n, err := rewriteEndpoints(tags[idx].data, m)
	if err != nil {
		return nil, 0, false, err
	}
	withEps := append([]tag(nil), tags...)
	withEps[idx].data = eps
	if out, ok := padTo(withEps, size); ok {
		return out, n, false, nil
	}
	without := append(append([]tag(nil), tags[:idx]...), tags[idx+1:]...)
	if out, ok := padTo(without, size); ok {
		return out, n, true, nil
	}
	return nil, 0, false, errors.New("cannot rewrite Fetch NodeEndpoints within the original frame size")
}

// rewriteEndpoints decodes a compact array of {NodeID int32, Host compact string, Port
// int32, Rack compact nullable string, tags} and re-encodes it with rewritten addresses.
func rewriteEndpoints(b []byte, m AddressMap) ([]byte, int, error) {
	r := endpointsReader{rest: b}
	count, ok := r.uvarint()
	if !ok || count == 0 || count-1 > uint64(len(r.rest)) {
		return nil, 0, malformed("bad NodeEndpoints array")
	}
	out := binary.AppendUvarint(nil, count)
	rewrites := 0
	for i := uint64(1); i < count; i++ {
		e, err := r.endpoint()
		if err != nil {
			return nil, 0, err
		}
		if e.id >= 0 {
			e.host, e.port = m(e.id, e.host, e.port)
			rewrites++
		}
		out = e.appendTo(out)
	}
	if len(r.rest) != 0 {
		return nil, 0, malformed("bytes after NodeEndpoints")
	}
	return out, rewrites, nil
}

// nodeEndpoint is one element of NodeEndpoints; the rack and the tagged fields stay encoded, as
// they go out unchanged.
type nodeEndpoint struct {
	id   int32
	host string
	port int32
	// rackLen is the rack's compact length as read (length+1, 0 for null).
	rackLen    uint64
	rack, tags []byte
}

// appendTo appends e encoded.
func (e nodeEndpoint) appendTo(out []byte) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(e.id))
	out = binary.AppendUvarint(out, uint64(len(e.host))+1)
	out = append(out, e.host...)
	out = binary.BigEndian.AppendUint32(out, uint32(e.port))
	out = binary.AppendUvarint(out, e.rackLen)
	out = append(out, e.rack...)
	return append(out, e.tags...)
}

// endpointsReader reads NodeEndpoints from rest, the bytes not read yet. A read that does not
// fit them returns false and leaves rest as it was.
type endpointsReader struct {
	rest []byte
}

func (r *endpointsReader) next(n int) ([]byte, bool) {
	if n < 0 || n > len(r.rest) {
		return nil, false
	}
	v := r.rest[:n]
	r.rest = r.rest[n:]
	return v, true
}

func (r *endpointsReader) uvarint() (uint64, bool) {
	v, n := binary.Uvarint(r.rest)
	if n <= 0 {
		return 0, false
	}
	r.rest = r.rest[n:]
	return v, true
}

// endpoint reads one element of NodeEndpoints.
func (r *endpointsReader) endpoint() (nodeEndpoint, error) {
	idb, ok1 := r.next(4)
	hl, ok2 := r.uvarint()
	if !ok1 || !ok2 || hl == 0 {
		return nodeEndpoint{}, malformed("bad NodeEndpoints entry")
	}
	host, ok3 := r.next(int(hl - 1))
	pb, ok4 := r.next(4)
	rl, ok5 := r.uvarint()
	if !ok3 || !ok4 || !ok5 {
		return nodeEndpoint{}, malformed("bad NodeEndpoints entry")
	}
	e := nodeEndpoint{
		id:      int32(binary.BigEndian.Uint32(idb)),
		host:    string(host),
		port:    int32(binary.BigEndian.Uint32(pb)),
		rackLen: rl,
	}
	if rl > 0 {
		var ok bool
		if e.rack, ok = r.next(int(rl - 1)); !ok {
			return nodeEndpoint{}, malformed("bad NodeEndpoints rack")
		}
	}
	var err error
	e.tags, err = r.tagSection()
	return e, err
}

// tagSection reads a tagged-field section and returns it as it was encoded.
func (r *endpointsReader) tagSection() ([]byte, error) {
	start := r.rest
	count, ok := r.uvarint()
	if !ok {
		return nil, malformed("bad NodeEndpoints tags")
	}
	for range count {
		if _, ok := r.uvarint(); !ok {
			return nil, malformed("bad NodeEndpoints tags")
		}
		size, ok := r.uvarint()
		if !ok {
			return nil, malformed("bad NodeEndpoints tags")
		}
		if _, ok := r.next(int(size)); !ok || size > uint64(len(start)) {
			return nil, malformed("bad NodeEndpoints tags")
		}
	}
	return start[:len(start)-len(r.rest)], nil
}
