package kafka

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Pending is a request forwarded upstream whose response has not been relayed yet, or a
// response the proxy answers itself (Local), queued in order so responses stay in order.
type Pending struct {
	Key, Version  int16
	CorrelationID int32
	// Local, when set, is a complete response frame to write instead of reading one upstream.
	Local []byte
	// Received is when the proxy read the request's header (Nanotime), set when CopyRequests
	// has Stats: the response's latency is measured from it.
	Received int64
	// State is what Filters.Request returned for a Filtered request.
	State any
	// Filtered is set when the request went through Filters: its response goes through them too,
	// with State.
	Filtered bool
	// wake marks Wake: a field no request sets, where any Key is a client's to choose. Next to
	// Filtered, so a Pending is 64 bytes, not 72: every connection's queue holds eight.
	wake bool
}

// Filters are a virtual cluster's filter chain as the relay sees it: whole frames (size
// included) of the API keys it wants, in and out. A virtual cluster without filters has none, and
// its frames never leave the byte-copying path (package filter implements this).
type Filters interface {
	// Wants reports whether requests of key (and their responses) go through the filters.
	Wants(key int16) bool
	// Request filters a request frame: it returns the frame to forward, or an answer frame to
	// send the client instead, and a state its response is filtered with. A nil state says
	// the filters only read the response: one larger than MaxFrame is relayed without them.
	// ResponseUnfiltered says they need nothing of it: it is relayed as if they did not want the key.
	Request(frame []byte) (forward, answer []byte, state any, err error)
	// Response filters the response frame of a request that went through Request, unless
	// Request's state was ResponseUnfiltered.
	Response(key, version int16, frame []byte, state any) ([]byte, error)
	// MaxFrame is the largest frame (size excluded) the filters take: a larger request of a key
	// they want closes the connection before it is read.
	MaxFrame() int32
}

// ResponseUnfiltered is the state Filters.Request returns when no filter needs the request's
// response: it is relayed like an unfiltered one (streamed, spliced, addresses rewritten).
var ResponseUnfiltered any = &struct{ responseUnfiltered bool }{}

// Stats receives per-frame counts; it is called from the relay goroutines, on every frame, so
// implementations must be cheap (observe.go).
type Stats interface {
	// Rewrote counts addresses rewritten in one response of key.
	Rewrote(key int16, n int)
	// DroppedEndpoints counts one streamed Fetch response whose NodeEndpoints did not fit the
	// original length once rewritten and were dropped (StreamFetch).
	DroppedEndpoints()
	// Requested counts one request of key read from the client.
	Requested(key int16)
	// Responded counts one response of key that has left the proxy for the client, d after
	// its request was read.
	Responded(key int16, d time.Duration)
}

// ErrSaslHandshakeV0 is returned for SaslHandshake v0, after which SASL tokens flow without
// Kafka framing: the proxy could no longer find frame boundaries and must not guess.
var ErrSaslHandshakeV0 = errors.New("SaslHandshake v0 (unframed SASL tokens) is not supported; clients use v1 with SaslAuthenticate")

// peekLimit bounds how much of a Produce request is inspected to find acks.
const peekLimit = 64 << 10

// RelayOptions are what CopyRequests and CopyResponses take besides the two connections and
// the queue between them. Every field but MaxFrame may be left zero, which turns its feature off.
type RelayOptions struct {
	// MaxFrame is the largest frame size (the 4-byte size itself excluded) the relay accepts;
	// a larger frame is malformed and ends the connection before it is read.
	MaxFrame int32
	// BeforeRead, if set, runs before each blocking read of requests (idle deadlines, drain
	// checks). Only CopyRequests runs it.
	BeforeRead func() error
	// Addresses gives the address to advertise for each broker address a response carries.
	// Only CopyResponses uses it, and needs it as soon as a response carries addresses.
	Addresses AddressMap
	// Stats, if set, counts every request and times every response until it has left.
	Stats Stats
	// Filters, if set, get the requests they want whole, and those requests' responses (see
	// Filters); every other frame is copied through.
	Filters Filters
	// Splice, if set, moves the bulk of large frames the relay only passes on from the
	// connection it reads to the one it writes (see Splicer). Each direction has its own.
	Splice Splicer
	// WaitSize is the size of the buffer the request side waits for the client's next request
	// with, which an idle connection holds (zero: 512 bytes, which most requests fit, so that
	// waking up costs no second read). A TLS client's requests are decrypted whole into its
	// tls.Conn, so reading the rest takes no system call: a few bytes do.
	WaitSize int
	// Queued, if set, runs after each Pending CopyRequests queues, local when the Pending is an
	// answer of the proxy's own (Pending.Local): a response side that runs only while responses
	// are awaited (ResponseRelay) is started from it, and one that waits on the broker's socket
	// is told that the queue holds something the broker will not answer. Only CopyRequests runs
	// it.
	Queued func(local bool)
}

// CopyRequests relays request frames from the client to the broker until the client's side
// ends or fails, through pooled buffers held only while bytes are in flight (buffers.go). For
// every request that gets a response it queues a Pending before forwarding it; Produce with
// acks=0 gets no response and is not queued, so nothing leaks. An ApiVersions request newer
// than the proxy's is answered locally and not forwarded. CopyRequests closes pending when it
// returns.
func CopyRequests(client io.Reader, broker io.Writer, pending chan<- Pending, opts RelayOptions) error {
	defer close(pending)
	rr := NewRequestRelay(client, broker, pending, opts)
	for {
		if err := rr.RelayBuffered(); err != nil {
			return err
		}
		if err := rr.Wait(); err != nil {
			return err
		}
	}
}

// RequestRelay is CopyRequests in steps, for a caller that chooses where the wait for the
// client's next request happens: the goroutine an idle connection keeps waits there, and its
// stack stays small if nothing deeper ever runs on it. Its caller closes pending.
type RequestRelay struct {
	r requestRelay
}

// NewRequestRelay is the request side of a connection from client to broker.
func NewRequestRelay(client io.Reader, broker io.Writer, pending chan<- Pending, opts RelayOptions) *RequestRelay {
	wait := opts.WaitSize
	if wait <= 0 {
		wait = waitSize
	}
	in := &lazyReader{conn: client, wait: make([]byte, wait)}
	return &RequestRelay{r: requestRelay{in: in, out: &lazyWriter{conn: broker}, pending: pending, opts: opts}}
}

// RelayBuffered relays the requests whose first bytes have been read, reading the rest of each
// as needed, until none is left: then it sends on what it forwarded, holding no pooled buffer,
// and runs BeforeRead. Wait comes next.
func (rr *RequestRelay) RelayBuffered() error {
	r := &rr.r
	for r.in.buffered() > 0 {
		if err := r.relayOne(); err != nil {
			return err
		}
	}
	if err := r.out.flush(); err != nil {
		return err
	}
	if r.opts.BeforeRead != nil {
		return r.opts.BeforeRead()
	}
	return nil
}

// Wait waits for the client's next bytes, holding no pooled buffer.
func (rr *RequestRelay) Wait() error {
	return rr.r.in.waitForBytes()
}

// requestRelay is the state CopyRequests keeps from one request to the next.
type requestRelay struct {
	in      *lazyReader
	out     *lazyWriter
	pending chan<- Pending
	opts    RelayOptions
}

// relayOne relays the request whose first bytes are buffered.
func (r *requestRelay) relayOne() error {
	src, dst := r.in.reader(), r.out.writer()
	p, total, err := readRequestHeader(src, r.opts.MaxFrame)
	if err != nil {
		return err
	}
	if r.opts.Stats != nil {
		p.Received = Nanotime()
		r.opts.Stats.Requested(p.Key)
	}
	if handled, err := r.screen(src, p, total); handled || err != nil {
		return err
	}
	respond, err := expectsResponse(src, p, total)
	if err != nil {
		return err
	}
	return r.forward(src, dst, p, total, respond)
}

// queue hands p to the response side. When the queue is full the client pipelines more
// requests than it may have in flight: what was forwarded is flushed first, for the broker
// answers only what it received, and the response side must make room.
func (r *requestRelay) queue(p Pending) error {
	select {
	case r.pending <- p:
	default:
		if err := r.out.send(); err != nil {
			return err
		}
		r.pending <- p
	}
	if r.opts.Queued != nil {
		r.opts.Queued(p.Local != nil)
	}
	return nil
}

// readRequestHeader peeks at the size and request header of the next frame, leaving them in
// src, and returns them as a Pending and the frame's length, size included. io.EOF means the
// client ended the connection between requests.
func readRequestHeader(src *bufio.Reader, maxFrame int32) (Pending, int64, error) {
	hdr, err := src.Peek(12)
	if err != nil {
		if errors.Is(err, io.EOF) && len(hdr) == 0 {
			return Pending{}, 0, io.EOF
		}
		if errors.Is(err, io.EOF) {
			return Pending{}, 0, malformed("request cut short")
		}
		return Pending{}, 0, err
	}
	size := int32(binary.BigEndian.Uint32(hdr))
	if size < 8 || size > maxFrame {
		return Pending{}, 0, malformed("request size %d outside 8..%d", size, maxFrame)
	}
	p := Pending{
		Key:           int16(binary.BigEndian.Uint16(hdr[4:])),
		Version:       int16(binary.BigEndian.Uint16(hdr[6:])),
		CorrelationID: int32(binary.BigEndian.Uint32(hdr[8:])),
	}
	return p, int64(size) + 4, nil
}

// screen deals with the requests that are not forwarded: an ApiVersions request newer than the
// proxy's is answered here (handled), and a version the proxy could not follow ends the
// connection.
func (r *requestRelay) screen(src *bufio.Reader, p Pending, total int64) (handled bool, err error) {
	switch {
	case p.Key == kmsg.ApiVersions.Int16() && p.Version > MaxVersion(p.Key):
		if _, err := src.Discard(int(total)); err != nil {
			return true, err
		}
		p.Local = UnsupportedApiVersions(p.CorrelationID)
		return true, r.queue(p)
	case p.Key == kmsg.SASLHandshake.Int16() && p.Version == 0:
		return true, ErrSaslHandshakeV0
	case NeedsRewrite(p.Key, p.Version) && p.Version > MaxVersion(p.Key):
		return true, fmt.Errorf("%s v%d is newer than the proxy can rewrite (v%d); the client ignored ApiVersions", kmsg.NameForKey(p.Key), p.Version, MaxVersion(p.Key))
	}
	return false, nil
}

// expectsResponse reports whether the broker answers the request at the start of src: all
// but Produce with acks=0 are answered.
func expectsResponse(src *bufio.Reader, p Pending, total int64) (bool, error) {
	if p.Key != kmsg.Produce.Int16() {
		return true, nil
	}
	n := int(min(total, peekLimit, int64(src.Size())))
	b, err := src.Peek(n)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return false, malformed("request cut short")
		}
		return false, err
	}
	acks, ok, err := ProduceAcks(p.Version, b[4:])
	if err != nil {
		return false, err
	}
	if !ok {
		return false, malformed("Produce request without acks in its first %d bytes", n)
	}
	return acks != 0, nil
}

// forward queues p when the request gets a response and sends the request on, through the
// filters when they want it.
func (r *requestRelay) forward(src *bufio.Reader, dst *bufio.Writer, p Pending, total int64, respond bool) error {
	if r.opts.Filters != nil && r.opts.Filters.Wants(p.Key) {
		return r.filterRequest(src, dst, p, total, respond)
	}
	if respond {
		if err := r.queue(p); err != nil {
			return err
		}
	}
	if err := (mover{src: src, dst: dst, from: r.in, splice: r.opts.Splice}).pass(total); err != nil {
		if errors.Is(err, io.EOF) {
			return malformed("request cut short")
		}
		return err
	}
	return nil
}

// filterRequest reads a request whole and passes it through the filters: their answer is queued
// as a local response, else the (possibly changed) request is forwarded and its response will go
// through the filters too. A request without a response (Produce acks=0) gets no answer.
func (r *requestRelay) filterRequest(src *bufio.Reader, dst *bufio.Writer, p Pending, total int64, respond bool) error {
	filters := r.opts.Filters
	if total-4 > int64(filters.MaxFrame()) {
		return malformed("%s request of %d bytes for the filters, over limits.maxFilteredFrameBytes (%d)", kmsg.NameForKey(p.Key), total-4, filters.MaxFrame())
	}
	frame, err := readFrame(src, total)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return malformed("request cut short")
		}
		return err
	}
	// The frame goes back to its pool once the filters are done with it and what they forward
	// (which may be the frame itself) is written.
	defer PutFrame(frame)
	forward, answer, state, err := filters.Request(frame)
	if err != nil {
		return err
	}
	if answer != nil {
		if respond {
			p.Local = answer
			return r.queue(p)
		}
		return nil
	}
	if respond {
		// ResponseUnfiltered: no filter needs the response, which is relayed as any other.
		p.Filtered = state != ResponseUnfiltered
		if p.Filtered {
			p.State = state
		}
		if err := r.queue(p); err != nil {
			return err
		}
	}
	if !SameBuffer(forward, frame) {
		defer PutFrame(forward) // built by the filters (GetFrame); written or copied once Write returns
	}
	_, err = dst.Write(forward)
	return err
}

// SameBuffer reports whether a and b start in the same array: a filter that changed nothing
// forwards the frame it was given.
func SameBuffer(a, b []byte) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:1][0] == &b[:1][0]
}

// readFrame reads a whole frame of total bytes into a buffer that grows as the bytes arrive
// (from 64 KiB, four times its size each time it is full), not to the size the peer announced:
// a client that announces a large frame holds at most four times what it sent. The buffers
// come from framePools; the caller gives the frame back with PutFrame once nothing refers to it.
func readFrame(src io.Reader, total int64) ([]byte, error) {
	buf := GetFrame(int(min(total, frameClasses[0])))
	for int64(len(buf)) < total {
		if len(buf) == cap(buf) {
			old := buf
			buf = append(GetFrame(int(min(total, 4*int64(cap(buf))))), old...)
			PutFrame(old)
		}
		n, err := io.ReadFull(src, buf[len(buf):min(int64(cap(buf)), total)])
		buf = buf[:len(buf)+n]
		if err != nil {
			PutFrame(buf)
			return nil, err
		}
	}
	return buf, nil
}

// frameClasses are the sizes of pooled frame buffers: 64 KiB times powers of two, so that any
// size up to the largest has a class less than twice as large (the filters take a pooled frame
// only then, FrameClass). Filtered frames are read and dropped at the rate requests arrive, and
// allocating each afresh (zeroed, at sizes the runtime takes from the OS) cost the filtered path
// a third of its CPU.
var frameClasses = [...]int64{64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20}

var framePools [len(frameClasses)]sync.Pool

// GetFrame returns an empty buffer with room for n bytes: pooled up to the largest class. The
// filters build the frames they send with it, and the relay gives those back (PutFrame) once
// written.
func GetFrame(n int) []byte {
	for i, c := range frameClasses {
		if int64(n) <= c {
			if b, ok := framePools[i].Get().(*[]byte); ok {
				return (*b)[:0]
			}
			return make([]byte, 0, c)
		}
	}
	return make([]byte, 0, n)
}

// FrameClass is the capacity GetFrame(n) gives: a pooled class, or n itself above the largest.
func FrameClass(n int) int {
	for _, c := range frameClasses {
		if int64(n) <= c {
			return int(c)
		}
	}
	return n
}

// PutFrame gives a buffer from GetFrame back; one of another size is left to the collector.
func PutFrame(b []byte) {
	for i, c := range frameClasses {
		if int64(cap(b)) == c {
			b = b[:0]
			framePools[i].Put(&b)
			return
		}
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// passChunk is the size of the pooled buffers that bytes the proxy only passes on (record data
// above all) move through. Chunks this large are read straight from the source connection and
// written straight to the destination, bypassing the 64 KiB per-connection buffers: a large Fetch
// response then takes a quarter of the read and write calls, and no copy from one buffer to the
// other. Pooled, so an idle connection holds none.
const passChunk = 256 << 10

var passPool = sync.Pool{New: func() any { b := make([]byte, passChunk); return &b }}

// passThrough copies exactly n bytes from src to dst, like io.CopyN (io.EOF when src ends
// first), through a pooled chunk. Small copies land in dst's buffer and go out with the next
// flush; large ones bypass both buffers (bufio reads into and writes from a caller's slice
// directly when it is at least as large as the buffer and the buffer is empty).
func passThrough(dst io.Writer, src *bufio.Reader, n int64) error {
	if f, ok := dst.(*frameWriter); ok {
		return f.readFrom(src, n) // a streamed Fetch partition captured: read straight into it
	}
	if n <= int64(src.Buffered()) {
		// Already in src's buffer, as the small fields of a streamed Fetch nearly always are:
		// no chunk, and nothing allocated.
		b, _ := src.Peek(int(n))
		_, err := dst.Write(b)
		_, _ = src.Discard(int(n))
		return err
	}
	bp := passPool.Get().(*[]byte)
	defer passPool.Put(bp)
	// Hiding dst's ReadFrom makes io.CopyBuffer use the chunk.
	written, err := io.CopyBuffer(struct{ io.Writer }{dst}, io.LimitReader(src, n), *bp)
	if err == nil && written < n {
		err = io.EOF
	}
	return err
}

// FetchBufferLimit is the size (frame size included) up to which a Fetch v16+ response is read
// whole and its NodeEndpoints rewritten exactly (RewriteFetch); larger ones are streamed
// (StreamFetch), where endpoints that do not fit the original length are dropped. A leader
// change is answered with partitions that carry an error and no records, so the responses that
// carry NodeEndpoints are nearly always small; the data-bearing ones that move throughput are
// large and keep streaming. Buffering a response this size costs one extra copy of at most
// 256 KiB, well under a millisecond. A variable so tests can move it.
var FetchBufferLimit int64 = 256 << 10

// maxPooled keeps huge frames' buffers out of the pool.
const maxPooled = 4 << 20

// CopyResponses relays response frames from the broker to the client, one per Pending in
// order, through pooled buffers held only while bytes are in flight (buffers.go), checking
// correlation ids. Responses that carry addresses are read whole, rewritten with
// opts.Addresses and re-framed; all others are copied through in chunks. It returns nil when
// pending is closed and drained.
//
// Responses of filtered requests (Pending.Filtered) are read whole and go through the filters
// first.
func CopyResponses(broker io.Reader, client io.Writer, pending <-chan Pending, opts RelayOptions) error {
	return NewResponseRelay(broker, client, opts).relayAll(pending)
}

// relayAll relays the responses to every Pending until pending is closed and drained.
func (rr *ResponseRelay) relayAll(pending <-chan Pending) error {
	for {
		closed, err := rr.RelayQueued(pending)
		if err != nil || closed {
			return err
		}
		p, ok := <-pending
		if !ok {
			return nil
		}
		if err := rr.Relay(p); err != nil {
			return err
		}
	}
}

// ResponseRelay is CopyResponses in bursts, for a caller that runs the response side only
// while responses are awaited: nothing comes from a Kafka broker unasked, so between bursts a
// connection needs no goroutine waiting on the broker. It keeps what one burst leaves to the
// next (the buffers' state, response timing); one goroutine at a time may use it.
type ResponseRelay struct {
	r responseRelay
}

// NewResponseRelay is the response side of a connection from broker to client. With a
// splicer and no filters it reads with a small buffer (headSize), so that the bulk of a Fetch
// response is spliced and not read. Filters read records through it (a filtered Fetch is
// streamed partition by partition), and the request side peeks up to 64 KiB for a Produce
// request's acks: both keep 64 KiB.
func NewResponseRelay(broker io.Reader, client io.Writer, opts RelayOptions) *ResponseRelay {
	rr := &ResponseRelay{r: responseRelay{in: &lazyReader{conn: broker, spliced: opts.Splice != nil && opts.Filters == nil}, out: &lazyWriter{conn: client}, opts: opts}}
	rr.r.clock = responseClock{dst: rr.r.out, stats: opts.Stats}
	return rr
}

// Wake is a Pending that asks for no response: the relay skips it. A caller sends it to wake a
// response side that waits on the queue.
var Wake = Pending{wake: true}

// IsWake reports whether p is Wake.
func IsWake(p Pending) bool { return p.wake }

// Relay relays the response to p (nothing for Wake), and leaves it buffered: RelayQueued sends
// it once the queue is empty.
func (rr *ResponseRelay) Relay(p Pending) error {
	if IsWake(p) {
		return nil
	}
	return rr.r.relayOne(p)
}

// RelayQueued relays the responses to the Pendings queued in pending, in order, as
// CopyResponses does. When it finds the queue empty it sends what it wrote, gives its buffers
// back, and returns false; it returns true once pending is closed and drained.
func (rr *ResponseRelay) RelayQueued(pending <-chan Pending) (closed bool, err error) {
	r := &rr.r
	for {
		select {
		case p, ok := <-pending:
			if !ok {
				return true, r.clock.flush()
			}
			if err := rr.Relay(p); err != nil {
				return false, err
			}
		default:
			if err := r.clock.flush(); err != nil {
				return false, err
			}
			r.in.releaseAll()
			return false, nil
		}
	}
}

// WaitForBytes waits until the broker has sent bytes, holding a pooled wait buffer meanwhile,
// which it gives back when the wait fails (a caller that interrupts the wait with a read
// deadline may end the burst there): a caller that waits on the broker's socket before it
// knows which Pending the bytes answer. The next Relay relays them.
func (rr *ResponseRelay) WaitForBytes() error {
	err := rr.r.in.waitForBytes()
	if err != nil {
		rr.r.in.releaseAll()
	}
	return err
}

// Buffered is how many bytes of the broker's have been read and not relayed yet.
func (rr *ResponseRelay) Buffered() int {
	return rr.r.in.buffered()
}

// responseRelay is the state CopyResponses keeps from one response to the next.
type responseRelay struct {
	in    *lazyReader
	out   *lazyWriter
	clock responseClock
	opts  RelayOptions
	// wholeFetches: the filters shrank the last Fetch response streamed so much that padding it
	// costs more than holding the next ones whole (partitionFilter).
	wholeFetches bool
}

// relayOne writes p's local answer, or relays the broker's response to p.
func (r *responseRelay) relayOne(p Pending) error {
	if p.Local != nil {
		if err := r.clock.add(p); err != nil {
			return err
		}
		_, err := r.out.writer().Write(p.Local)
		return err
	}
	if r.in.buffered() == 0 {
		if err := r.clock.flush(); err != nil {
			return err
		}
	}
	if err := r.clock.add(p); err != nil {
		return err
	}
	total, err := r.awaitResponse(p)
	if err != nil {
		return err
	}
	src, dst := r.in.reader(), r.out.writer()
	if p.Filtered && r.opts.Filters != nil {
		return r.filterResponse(src, dst, p, total)
	}
	return r.relayResponse(mover{src: src, dst: dst, from: r.in, splice: r.opts.Splice}, p, total)
}

// awaitResponse waits for the response to p and checks its size and correlation id, leaving
// them in the read buffer; it returns the frame's length, size included. A broker may hold a
// Fetch for its max wait: the connection waits without a pooled buffer.
func (r *responseRelay) awaitResponse(p Pending) (int64, error) {
	var hdr []byte
	err := r.in.waitForBytes()
	if err == nil {
		hdr, err = r.in.reader().Peek(8)
	}
	if errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("broker closed the connection with %s (correlation id %d) unanswered", kmsg.NameForKey(p.Key), p.CorrelationID)
	}
	if err != nil {
		return 0, err
	}
	size := int32(binary.BigEndian.Uint32(hdr))
	corr := int32(binary.BigEndian.Uint32(hdr[4:]))
	if size < 4 || size > r.opts.MaxFrame {
		return 0, malformed("response size %d outside 4..%d", size, r.opts.MaxFrame)
	}
	if corr != p.CorrelationID {
		return 0, malformed("response correlation id %d, expected %d for %s", corr, p.CorrelationID, kmsg.NameForKey(p.Key))
	}
	return int64(size) + 4, nil
}

// filterResponse reads a response whole, passes it through the filters, and relays what they
// make of it on the usual path, address rewriting included.
func (r *responseRelay) filterResponse(src *bufio.Reader, dst io.Writer, p Pending, total int64) error {
	filters := r.opts.Filters
	if total-4 > int64(filters.MaxFrame()) {
		if p.State == nil {
			return r.relayResponse(mover{src: src, dst: dst, from: r.in, splice: r.opts.Splice}, p, total)
		}
		return malformed("%s response of %d bytes for the filters, over limits.maxFilteredFrameBytes (%d)", kmsg.NameForKey(p.Key), total-4, filters.MaxFrame())
	}
	if pf := r.partitionFilter(filters, p, total); pf != nil {
		st, err := streamFilteredFetch(mover{src: src, dst: dst}, p.Version, total, r.opts.Addresses, pf)
		r.countRewrites(p.Key, st.rewrote, st.dropped)
		// A streamed response is made up to its announced size by padding, which costs the proxy
		// and the client as much as records: once it is more than wholeFetchPadding of a
		// response, this connection's large Fetch responses are filtered whole.
		r.wholeFetches = st.padding > total/wholeFetchPadding
		return err
	}
	read, err := readResponse(src, total)
	if err != nil {
		return err
	}
	defer PutFrame(read) // once relayed: the filtered frame may be the one read
	frame, err := filters.Response(p.Key, p.Version, read, p.State)
	if err != nil {
		return err
	}
	if !SameBuffer(frame, read) {
		defer PutFrame(frame) // a frame the filters built (GetFrame), no longer used once relayed
	}
	if p.Key == kmsg.Fetch.Int16() {
		// Written from where it lies: through a reader and the stream's walk, the records
		// were copied twice more (a 1 KiB connection's Fetch responses come this way).
		n, err := writeFetch(dst, p.Version, frame, r.opts.Addresses)
		r.countRewrites(p.Key, n, false)
		return err
	}
	mv := mover{src: bufio.NewReaderSize(bytes.NewReader(frame), min(len(frame), bufSize)), dst: dst}
	return r.relayResponse(mv, p, int64(len(frame)))
}

// readResponse reads a whole response frame of total bytes, size included, into a pooled buffer
// of its size. Unlike a client's request (readFrame), a response answers a request the proxy
// sent, and total has been checked against the filters' frame limit, so the buffer it would
// grow to is taken at once: growing it as the bytes arrive copies them again at every step (for
// a 1 MiB Fetch response, its first 1.3 MiB).
func readResponse(src io.Reader, total int64) ([]byte, error) {
	buf := GetFrame(int(total))[:total]
	if _, err := io.ReadFull(src, buf); err != nil {
		PutFrame(buf)
		return nil, err
	}
	return buf, nil
}

// relayResponse relays one response frame of total bytes through mv: a large Fetch v16+
// streamed, one that carries addresses rewritten, the others passed on.
func (r *responseRelay) relayResponse(mv mover, p Pending, total int64) error {
	if p.Key == kmsg.Fetch.Int16() && p.Version >= 16 && total > FetchBufferLimit {
		n, dropped, err := streamFetch(mv, p.Version, total, r.opts.Addresses)
		r.countRewrites(p.Key, n, dropped)
		return err
	}
	if !NeedsRewrite(p.Key, p.Version) {
		return mv.pass(total)
	}
	return rewriteOne(mv.src, mv.dst, p, int(total), r.opts.Addresses, r.opts.Stats)
}

// countRewrites counts the addresses rewritten in a streamed response, and endpoints dropped.
func (r *responseRelay) countRewrites(key int16, n int, dropped bool) {
	if stats := r.opts.Stats; stats != nil {
		if n > 0 {
			stats.Rewrote(key, n)
		}
		if dropped {
			stats.DroppedEndpoints()
		}
	}
}

// wholeFetchPadding: a connection whose streamed Fetch response was padded by more than
// 1/wholeFetchPadding of its size has its large Fetch responses filtered whole. The padding is
// sent over TLS and read by the client like records: decrypted 1 KiB records shrink responses by
// 11-13 % (and take 12-13 % of padding), 16 KiB ones by 1 % (1.8 % with the slack, fetchSlack).
// Whole, a response is read at its size, filtered in place and written from where it lies
// (writeFetch), as many copies as streaming; streaming overlaps reading with filtering and holds
// a few partitions, not the response (both within limits.maxFilteredFrameBytes). Before
// 2026-11-26 the bound was an eighth: 1 KiB connections streamed, with 12 % of padding.
const wholeFetchPadding = 32

// partitionFilter is the filters' partition filter for the response to p, when they stream it:
// a Fetch response as large as those streamed unfiltered (smaller ones are filtered whole, and
// their NodeEndpoints rewritten exactly), unless the last one streamed was padded by more than
// 1/wholeFetchPadding.
func (r *responseRelay) partitionFilter(filters Filters, p Pending, total int64) PartitionFilter {
	fs, ok := filters.(FetchStreamer)
	if !ok || r.wholeFetches || p.Key != kmsg.Fetch.Int16() || p.State == nil || total <= FetchBufferLimit {
		return nil
	}
	return fs.FetchPartitions(p.Version, p.State)
}

// rewriteOne reads one response frame of total bytes whole, rewrites the addresses in it and
// writes the result, or the frame as read when nothing changed.
func rewriteOne(src *bufio.Reader, dst io.Writer, p Pending, total int, m AddressMap, stats Stats) error {
	bp := bufPool.Get().(*[]byte)
	defer putBuf(bp)
	in := *bp
	if cap(in) < total {
		in = make([]byte, total)
	}
	in = in[:total]
	if _, err := io.ReadFull(src, in); err != nil {
		return err
	}
	ob := bufPool.Get().(*[]byte)
	defer putBuf(ob)
	// The rewritten frame is built after 4 bytes left for its size, known once it is built.
	out, n, err := rewriteFrame(append((*ob)[:0], 0, 0, 0, 0), p, in[4:], m)
	if out != nil {
		*ob = out[:0]
	}
	if err != nil {
		return err
	}
	if out == nil {
		_, err = dst.Write(in)
	} else {
		if int64(len(out)-4) > math.MaxInt32 {
			return malformed("a rewritten %s response of %d bytes: more than a frame can say", kmsg.NameForKey(p.Key), len(out))
		}
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		_, err = dst.Write(out)
		if stats != nil && n > 0 {
			stats.Rewrote(p.Key, n)
		}
	}
	*bp = in[:0]
	return err
}

// rewriteFrame appends the rewritten form of the response frame (the bytes after the size) to
// dst, with the number of addresses rewritten; nil when the frame goes out as it is.
func rewriteFrame(dst []byte, p Pending, frame []byte, m AddressMap) ([]byte, int, error) {
	switch kmsg.Key(p.Key) {
	case kmsg.ApiVersions:
		out, err := RewriteApiVersions(dst, p.Version, frame)
		return out, 0, err
	case kmsg.Fetch:
		return RewriteFetch(dst, p.Version, frame, m)
	default:
		return RewriteResponse(dst, p.Key, p.Version, frame, m)
	}
}

// putBuf gives a buffer from bufPool back, unless a huge frame made it too large to keep.
func putBuf(bp *[]byte) {
	if cap(*bp) <= maxPooled {
		bufPool.Put(bp)
	}
}
