package filter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// Filter is one filter instance of a virtual cluster.
type Filter interface {
	// Keys are the API keys of the requests (and their responses) the filter sees.
	Keys() []int16
	// OnRequest sees a request on its way to the broker.
	OnRequest(ctx context.Context, x *Exchange) error
	// OnResponse sees the response of a request it saw, unless that request was answered.
	OnResponse(ctx context.Context, x *Exchange) error
}

// Exchange is one request on its way through the chain, and later its response.
type Exchange struct {
	Key, Version  int16
	CorrelationID int32
	ClientID      *string
	// Request is the decoded request. On the response side it is an empty request of the same
	// key and version: the decoded request (records included) is not kept while the broker
	// answers, so what a filter needs of it then it keeps with Set.
	Request kmsg.Request
	// Response is set for OnResponse.
	Response kmsg.Response
	// Allowance is this request's, or on the response side this response's, share of the
	// filters' memory: records are decoded with records.DecodeWithin(raw, x.Allowance).
	Allowance *Allowance
	// Conn is the client connection the request came on.
	Conn   *Conn
	answer kmsg.Response
	state  map[Filter]any
	// unchanged and unneeded count the filters that called RequestUnchanged and
	// ResponseNotNeeded.
	unchanged, unneeded int
	names               map[[16]byte]string // the topic ids it names, resolved (TopicName)
	// scratch are the pooled buffers filters took with Scratch; filters may fill them from
	// several goroutines.
	scratchMu sync.Mutex
	scratch   [][]byte
}

// Scratch returns an empty buffer with room for n bytes, for bytes a filter puts into the request
// (a re-encoded record batch): pooled, and given back once the request is encoded, so nothing
// may keep it beyond OnRequest. Filters working on partitions in parallel may call it at once.
func (x *Exchange) Scratch(n int) []byte {
	b := frameBuffer(n)
	x.scratchMu.Lock()
	defer x.scratchMu.Unlock()
	x.scratch = append(x.scratch, b)
	return b
}

// frameBuffer is an empty buffer with room for n bytes, from the relay's frame pool when its
// class is at most twice n, else of n bytes: a small answer, or one batch of a request of many
// small partitions, must not hold a 64 KiB class each (answers wait in a connection's queue,
// scratch buffers until the request is encoded). kafka.PutFrame leaves the unpooled ones alone.
func frameBuffer(n int) []byte {
	if kafka.FrameClass(n) <= 2*n {
		return kafka.GetFrame(n)
	}
	return make([]byte, 0, n)
}

// releaseScratch gives the Scratch buffers back: their bytes were copied into the frame.
func (x *Exchange) releaseScratch() {
	x.scratchMu.Lock()
	defer x.scratchMu.Unlock()
	for _, b := range x.scratch {
		kafka.PutFrame(b)
	}
	x.scratch = nil
}

// RequestUnchanged says the filter left the request as it was decoded: when every filter that
// saw it says so, the frame the client sent is forwarded as it is, not re-encoded.
func (x *Exchange) RequestUnchanged() { x.unchanged++ }

// ResponseNotNeeded says the filter does not need to see the request's response: when every
// filter that saw the request says so, the response is relayed without being decoded (the data
// path of Fetch and Produce, at the cost of an unfiltered one), and OnResponse is not called.
// The request is still re-encoded unless they all called RequestUnchanged too.
func (x *Exchange) ResponseNotNeeded() { x.unneeded++ }

// Answer makes resp the response to the request, which is then not forwarded.
func (x *Exchange) Answer(resp kmsg.Response) { x.answer = resp }

// Answered is the filter's answer, or nil when the request is to be forwarded.
func (x *Exchange) Answered() kmsg.Response { return x.answer }

// Set keeps a value of filter f for the response side; Get returns it.
func (x *Exchange) Set(f Filter, v any) {
	if x.state == nil {
		x.state = map[Filter]any{}
	}
	x.state[f] = v
}

// Get returns what f kept with Set, or nil.
func (x *Exchange) Get(f Filter) any { return x.state[f] }

// Chain is a virtual cluster's filters in route order. Each client connection sees it through a
// Conn, the relay's kafka.Filters. Chains (lifecycle.go) keeps it across reloads.
type Chain struct {
	ctx     context.Context
	vc      string // the virtual cluster's name, for its filters' metrics
	filters []Filter
	wants   map[int16][]Filter
	// gateFilters are the filters that are gates (gate.go).
	gateFilters []Gate
	lim         Limits
	// sum fingerprints the filters' configuration, and files are the files they read: what a
	// reload compares to keep the chain.
	sum   [32]byte
	files fileSums
	// ids are the topic ids its clients' metadata named (topicids.go).
	ids *topicIDs
	// versions are the brokers' last ApiVersions (terminate.go).
	versions upstreamVersions
}

// defaultBudget is the budget of chains built without WithLimits (tests, the operator's checks).
var defaultBudget = NewBudget(config.DefaultFilterMemoryBytes)

// DefaultLimits are the limits of a configuration that sets none.
func DefaultLimits() Limits {
	c := config.Config{}
	c.Default()
	return LimitsFrom(c.Limits, defaultBudget)
}

// NewChain builds the filters of virtual cluster vc, with DefaultLimits; any unknown type or bad
// config is an error naming the filter, and the virtual cluster must then not be served.
func NewChain(ctx context.Context, vc string, filters []config.Filter) (*Chain, error) {
	c, err := newChain(ctx, vc, filters, DefaultLimits())
	if err != nil {
		return nil, err
	}
	return c, nil
}

// newChain builds a chain. When a filter cannot be built, those built before it are closed, and
// the chain is returned with the error only for the files its filters read.
func newChain(ctx context.Context, vc string, filters []config.Filter, lim Limits) (*Chain, error) {
	c := &Chain{ctx: ctx, vc: vc, wants: map[int16][]Filter{}, lim: lim, sum: filtersSum(filters), files: fileSums{}, ids: newTopicIDs(maxTopicIDs)}
	for _, fc := range filters {
		f, err := c.build(fc)
		if err != nil {
			_ = c.Close()
			return c, err
		}
		c.filters = append(c.filters, f)
		for _, k := range f.Keys() {
			c.wants[k] = append(c.wants[k], f)
		}
	}
	if err := c.checkTermination(filters); err != nil {
		_ = c.Close()
		return c, err
	}
	c.gateFilters = gatesOf(c.filters)
	return c, nil
}

// build makes one filter of the chain, recording the files it reads.
func (c *Chain) build(fc config.Filter) (Filter, error) {
	if lookup(fc.Type) == nil {
		return nil, fmt.Errorf("filter %s: type %s is not implemented by kafkalink-proxy (it implements %v)", fc.Name, fc.Type, Types())
	}
	f, err := New(fc.Type, fc.Config, Env{ReadFile: c.files.read, VirtualCluster: c.vc})
	if err != nil {
		return nil, fmt.Errorf("filter %s (%s): %w", fc.Name, fc.Type, err)
	}
	return f, nil
}

// WithLimits sets the chain's limits (the configuration's, and the process's budget).
func (c *Chain) WithLimits(lim Limits) *Chain {
	c.lim = lim
	return c
}

// Conn is one client connection's view of a chain, and what filters keep per connection.
type Conn struct {
	*Chain
	mu      sync.Mutex
	state   map[Filter]any
	subject Subject   // subject.go
	gates   connGates // gate.go
	// onEnd runs when the connection ended (terminate.go).
	onEnd   []func()
	ended   bool
	expires time.Time // ExpireAt
}

// Opener is implemented by filters that act when a client connection starts
// (ConnectionExpiration sets the connection's end).
type Opener interface{ OnOpen(c *Conn) }

// ForConnection is the chain as one connection's relay uses it: the gates that start closed
// are, and the filters that are Openers see it first.
func (c *Chain) ForConnection() *Conn {
	conn := &Conn{Chain: c}
	conn.gates.closed.Store(closedAtStart(c.gateFilters))
	for _, f := range c.filters {
		if o, ok := f.(Opener); ok {
			o.OnOpen(conn)
		}
	}
	return conn
}

// ExpireAt asks the relay to end the connection at t, cleanly: it reads no request after t
// and closes the connection once the responses in flight are written. The earliest time asked
// wins.
func (c *Conn) ExpireAt(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.expires.IsZero() || t.Before(c.expires) {
		c.expires = t
	}
}

// Expires is when the connection is to end (ExpireAt); zero when never.
func (c *Conn) Expires() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.expires
}

// State returns what f keeps for this connection, made by init the first time.
func (c *Conn) State(f Filter, init func() any) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.state[f]
	if !ok {
		if c.state == nil {
			c.state = map[Filter]any{}
		}
		v = init()
		c.state[f] = v
	}
	return v
}

// Request is Conn.Request on a connection of its own, for one-off use (tests, benchmarks).
func (c *Chain) Request(frame []byte) (forward, answer []byte, state any, err error) {
	return c.ForConnection().Request(frame)
}

// Response is Conn.Response on a connection of its own, for one-off use.
func (c *Chain) Response(key, version int16, frame []byte, state any) ([]byte, error) {
	return c.ForConnection().Response(key, version, frame, state)
}

// Wants reports whether some filter sees requests of key, or the chain itself: it sees
// ApiVersions to keep clients on the versions it decodes, and the responses that name topic ids
// (observesOnly).
func (c *Chain) Wants(key int16) bool {
	return key == kmsg.ApiVersions.Int16() || len(c.wants[key]) > 0 || len(c.filters) > 0 && idsFrom(key)
}

// MaxFrame is the largest frame the chain decodes: a larger request of a key it wants closes
// the connection before it is read.
func (c *Chain) MaxFrame() int32 { return int32(min(c.lim.MaxFrame, math.MaxInt32)) }

// capVersions lowers the versions an ApiVersions response offers of the keys the filters see
// to those kmsg decodes: a request of a higher version would close the connection.
func (c *Chain) capVersions(x *Exchange) {
	resp, ok := x.Response.(*kmsg.ApiVersionsResponse)
	if !ok {
		return
	}
	for i := range resp.ApiKeys {
		k := &resp.ApiKeys[i]
		if req := kmsg.RequestForKey(k.ApiKey); req != nil && len(c.wants[k.ApiKey]) > 0 {
			k.MaxVersion = min(k.MaxVersion, req.MaxVersion())
		}
	}
}

// errMalformed marks a frame the chain cannot decode; the connection is closed.
var errMalformed = errors.New("malformed frame for the filters")

// Request decodes a request frame, runs the filters that want it in order, and returns the
// frame to forward (re-encoded when a filter may have changed it), or the answer frame.
func (c *Conn) Request(frame []byte) (forward, answer []byte, state any, err error) {
	gated := c.gates.closed.Load() > 0
	if !gated && c.observesOnly(frame) {
		return frame, nil, nil, nil // see kafka.Filters: the relay may pass a large response on
	}
	a := NewAllowance(c.ctx, c.lim, len(frame))
	defer a.release()
	x, err := decodeRequest(frame, a)
	if err != nil {
		return nil, nil, nil, err
	}
	x.Conn, x.Allowance = c, a
	if gated {
		if pass, answer, err := c.gate(x, frame); pass || answer != nil || err != nil {
			if pass {
				return frame, nil, nil, nil // only the gates wanted it
			}
			return nil, answer, nil, err
		}
	}
	if resp := c.resolveRequest(x); resp != nil {
		return nil, encodeResponse(x.CorrelationID, x.Key, x.Version, resp, 0), nil, nil
	}
	defer x.releaseScratch()
	if answer, err := c.runFilters(x); answer != nil || err != nil {
		return nil, answer, nil, err
	}
	return c.forward(x, frame)
}

// gate runs the gates of a connection that has not authenticated: the answer frame of one that
// answered, or pass when only the gates wanted the request (it goes on as read).
func (c *Conn) gate(x *Exchange, frame []byte) (pass bool, answer []byte, err error) {
	answered, err := c.runGates(x)
	switch {
	case err != nil:
		return false, nil, err
	case answered:
		return false, encodeResponse(x.CorrelationID, x.Key, x.Version, x.answer, 0), nil
	}
	return !c.Chain.Wants(x.Key) || c.observesOnly(frame), nil, nil
}

// runFilters runs the filters that want the request's key, in route order, until one answers
// it: its answer frame.
func (c *Conn) runFilters(x *Exchange) ([]byte, error) {
	for _, f := range c.wants[x.Key] {
		if err := f.OnRequest(c.ctx, x); err != nil {
			return nil, err
		}
		if x.answer != nil {
			return encodeResponse(x.CorrelationID, x.Key, x.Version, x.withTopicIDs(x.answer), 0), nil
		}
	}
	return nil, nil
}

// forward is the frame to send the broker for a request the filters let through (the frame
// read when they all left it unchanged), and the state its response is filtered with.
func (c *Conn) forward(x *Exchange, frame []byte) (forward, answer []byte, state any, err error) {
	n := len(c.wants[x.Key])
	passResponse := n > 0 && x.unneeded == n && x.Key != kmsg.ApiVersions.Int16() && !idsFrom(x.Key)
	if passResponse && x.unchanged == n {
		return frame, nil, kafka.ResponseUnfiltered, nil // nothing to re-encode either
	}
	if !passResponse { // capFetch's limits are for responses the filters take whole
		switch r := x.Request.(type) {
		case *kmsg.FetchRequest:
			c.capFetch(r)
		case *kmsg.ShareFetchRequest:
			c.capShareFetch(r)
		}
	}
	out, answer, err := c.encodeRequest(x, len(frame))
	if out == nil {
		return nil, answer, nil, err
	}
	if passResponse {
		return out, nil, kafka.ResponseUnfiltered, nil
	}
	x.Request = emptyRequest(x.Key, x.Version) // see Exchange.Request
	x.Allowance, x.answer = nil, nil
	return out, nil, x, nil
}

// encodeRequest re-encodes a request the filters may have changed (read as size bytes) into a
// pooled frame the relay gives back; one the filters made too large is refused: a Produce with
// MESSAGE_TOO_LARGE (answer), any other by closing the connection.
func (c *Conn) encodeRequest(x *Exchange, size int) (out, answer []byte, err error) {
	var opts []kmsg.RequestFormatterOpt
	if x.ClientID != nil {
		opts = append(opts, kmsg.FormatterClientID(*x.ClientID))
	}
	out = frameBuffer(size + size/8) // room for what filters add
	out = kmsg.NewRequestFormatter(opts...).AppendRequest(out, x.Request, x.CorrelationID)
	if len(out) <= c.lim.MaxFrame {
		return out, nil, nil
	}
	kafka.PutFrame(out)
	if x.Key != kmsg.Produce.Int16() {
		return nil, nil, fmt.Errorf("%w: the filters made a %s request of %d bytes, over limits.maxFilteredFrameBytes (%d)", errTooLarge, kmsg.NameForKey(x.Key), len(out), c.lim.MaxFrame)
	}
	return nil, encodeResponse(x.CorrelationID, x.Key, x.Version, errorResponse(x.Request, kerr.MessageTooLarge.Code), 0), nil
}

// capFetch lowers a Fetch's size limits so that its response fits the frames the filters take,
// with room for what they add (consumers ask for 50 MiB by default), and so that records
// compressed up to 16 times fit the response's share once decompressed (records compressed
// more than that come over more fetches). The broker may still send one batch larger than
// asked, as Kafka does for progress.
func (c *Conn) capFetch(f *kmsg.FetchRequest) {
	limit := c.fetchLimit()
	f.MaxBytes = min(f.MaxBytes, limit)
	for i := range f.Topics {
		for j := range f.Topics[i].Partitions {
			p := &f.Topics[i].Partitions[j]
			p.PartitionMaxBytes = min(p.PartitionMaxBytes, limit)
		}
	}
}

// fetchLimit is what capFetch and capShareFetch lower sizes to.
func (c *Conn) fetchLimit() int32 {
	return int32(min(c.lim.MaxFrame-c.lim.MaxFrame/8, max(c.lim.MaxShare/16, 1<<20)))
}

// errTooLarge ends a connection whose filtered frame would exceed the limit, where no error
// response can say so.
var errTooLarge = errors.New("filtered frame too large")

func emptyRequest(key, version int16) kmsg.Request {
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	return req
}

// Response decodes the response frame of a request that went through Request, runs the filters
// that saw the request in reverse order, and re-encodes it.
func (c *Conn) Response(key, version int16, frame []byte, state any) ([]byte, error) {
	x, ok := state.(*Exchange)
	if !ok {
		c.learn(key, version, frame)
		return frame, nil
	}
	decode := decoder(kafka.DecodeBounded)
	if key == kmsg.Fetch.Int16() && kafka.CheckFetchResponse(frame, version) == nil {
		decode = decodeInline // a Fetch walked whole costs less than a bounded decode's copy
	}
	return c.response(x, key, version, frame, decode)
}

// decoder runs kmsg's decoding of a frame: kafka.DecodeBounded, or decodeInline for a frame
// whose tagged-field counts were checked against its length already.
type decoder func(frame []byte, read func([]byte) error) error

func decodeInline(frame []byte, read func([]byte) error) error { return read(frame) }

// response is Response for the exchange of a request the filters saw.
func (c *Conn) response(x *Exchange, key, version int16, frame []byte, decode decoder) ([]byte, error) {
	if len(frame) > c.lim.MaxFrame {
		return nil, fmt.Errorf("%w: a %s response of %d bytes, over limits.maxFilteredFrameBytes (%d)", errTooLarge, kmsg.NameForKey(key), len(frame), c.lim.MaxFrame)
	}
	resp, err := decodeResponse(x, key, version, frame, decode)
	if err != nil {
		return nil, err
	}
	x.Response = resp
	x.Allowance = NewAllowance(c.ctx, c.lim, len(frame))
	defer x.Allowance.release()
	if key == kmsg.ApiVersions.Int16() {
		c.LearnVersions(resp.(*kmsg.ApiVersionsResponse))
		c.capVersions(x)
	}
	c.ids.learnFrom(resp)
	c.resolveResponse(x)
	fs := c.wants[key]
	for i := len(fs) - 1; i >= 0; i-- {
		if err := fs[i].OnResponse(c.ctx, x); err != nil {
			return nil, err
		}
	}
	out := encodeResponse(x.CorrelationID, key, version, x.withTopicIDs(resp), len(frame))
	if len(out) > c.lim.MaxFrame {
		if !fitFetch(resp, c.lim.MaxFrame) && !fitShareFetch(resp, c.lim.MaxFrame) {
			return nil, fmt.Errorf("%w: the filters made a %s response of %d bytes, over limits.maxFilteredFrameBytes (%d)", errTooLarge, kmsg.NameForKey(key), len(out), c.lim.MaxFrame)
		}
		out = encodeResponse(x.CorrelationID, key, version, resp, len(frame))
	}
	return out, nil
}

// decodeResponse reads a response frame (size included) of the request x. kmsg's loop over a
// tagged-field count runs on after the bytes end (proxy/kafka/decode.go), so a broker's corrupt
// count is decoded within decode's bounds.
func decodeResponse(x *Exchange, key, version int16, frame []byte, decode decoder) (kmsg.Response, error) {
	resp := x.Request.ResponseKind()
	resp.SetVersion(version)
	if len(frame) < 8 {
		return nil, errMalformed
	}
	body := frame[8:]
	if resp.IsFlexible() && key != kmsg.ApiVersions.Int16() { // ApiVersions responses never carry header tags
		n, err := skipTags(body)
		if err != nil {
			return nil, err
		}
		body = body[n:]
	}
	if err := decode(body, resp.ReadFrom); err != nil {
		return nil, fmt.Errorf("%w: %s response: %w", errMalformed, kmsg.NameForKey(key), err)
	}
	return resp, nil
}

// fitFetch makes a Fetch response that filters made larger than max fit: the largest
// partitions' records are dropped, each with MESSAGE_TOO_LARGE, until it does. It reports
// false for other responses.
func fitFetch(resp kmsg.Response, limit int) bool {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return false
	}
	size := len(f.AppendTo(nil))
	var parts []*kmsg.FetchResponseTopicPartition
	for i := range f.Topics {
		for j := range f.Topics[i].Partitions {
			parts = append(parts, &f.Topics[i].Partitions[j])
		}
	}
	slices.SortFunc(parts, func(a, b *kmsg.FetchResponseTopicPartition) int { return len(b.RecordBatches) - len(a.RecordBatches) })
	for _, p := range parts {
		if size+8 <= limit {
			break
		}
		size -= len(p.RecordBatches)
		p.RecordBatches, p.ErrorCode = nil, kerr.MessageTooLarge.Code
	}
	return true
}

// errorResponse is a response to req in which everything the request names fails with code:
// each Produce partition, or a Fetch as a whole.
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		FailProduce(resp.(*kmsg.ProduceResponse), r.Topics, code)
	case *kmsg.FetchRequest:
		resp.(*kmsg.FetchResponse).ErrorCode = code
	}
	return resp
}

// decodeRequest reads a whole request frame: header v1 or v2, then the body as kmsg decodes it,
// after the bounded pre-scan (kafka.PrescanValues) has checked every count and length in it and
// the values kmsg will make of it are taken from a.
func decodeRequest(frame []byte, a *Allowance) (*Exchange, error) {
	if len(frame) < 14 {
		return nil, fmt.Errorf("%w: %d bytes", errMalformed, len(frame))
	}
	x := &Exchange{Key: int16(binary.BigEndian.Uint16(frame[4:])), Version: int16(binary.BigEndian.Uint16(frame[6:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[8:]))}
	req := kmsg.RequestForKey(x.Key)
	if req == nil {
		return nil, fmt.Errorf("%w: unknown API key %d", errMalformed, x.Key)
	}
	if x.Version < 0 || x.Version > req.MaxVersion() {
		return nil, fmt.Errorf("%w: %s v%d is not a version the proxy decodes (up to v%d)", errMalformed, kmsg.NameForKey(x.Key), x.Version, req.MaxVersion())
	}
	if x.Key == kmsg.ControlledShutdown.Int16() && x.Version == 0 {
		// The one request with header v0 (no client id), sent by brokers, not clients.
		return nil, fmt.Errorf("%w: ControlledShutdown v0 is not for the filters", errMalformed)
	}
	req.SetVersion(x.Version)
	off := 14
	if n := int(int16(binary.BigEndian.Uint16(frame[12:]))); n >= 0 {
		if n > len(frame)-off {
			return nil, fmt.Errorf("%w: client id", errMalformed)
		}
		id := string(frame[off : off+n])
		x.ClientID = &id
		off += n
	}
	if req.IsFlexible() {
		n, err := skipTags(frame[off:])
		if err != nil {
			return nil, err
		}
		off += n
	}
	if err := decodeBody(req, x.Key, x.Version, frame[off:], a); err != nil {
		return nil, err
	}
	x.Request = req
	return x, nil
}

// decodedValueSize is what one value of a decoded request (an array element, a tagged field)
// takes in memory at most: kmsg's largest element structs take 72 bytes, a slice grown by
// append or a map entry some more.
const decodedValueSize = 128

// decodeBody decodes a request body with kmsg, whose tagged-field loops run on after the
// bytes end (proxy/kafka/decode.go): a key the pre-scanner knows is checked first, its values'
// memory taken from a, and decoded inline; any other is decoded within kafka.DecodeBounded's
// time limit.
func decodeBody(req kmsg.Request, key, version int16, body []byte, a *Allowance) error {
	read := func(b []byte) error {
		if err := req.ReadFrom(b); err != nil {
			return fmt.Errorf("%w: %s request: %w", errMalformed, kmsg.NameForKey(key), err)
		}
		return nil
	}
	if !kafka.HasPrescanner(key) {
		return kafka.DecodeBounded(body, read)
	}
	values, err := kafka.PrescanValues(key, version, body)
	if err != nil {
		return fmt.Errorf("%w: %s v%d request: %w", errMalformed, kmsg.NameForKey(key), version, err)
	}
	if err := a.Reserve(values * decodedValueSize); err != nil {
		return fmt.Errorf("%w: %s v%d request of %d values: %w", errTooLarge, kmsg.NameForKey(key), version, values, err)
	}
	return read(body)
}

// skipTags returns the length of a tagged-field section.
func skipTags(b []byte) (int, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return 0, fmt.Errorf("%w: tagged fields", errMalformed)
	}
	off := n
	for range count {
		_, k := binary.Uvarint(b[off:])
		if k <= 0 {
			return 0, fmt.Errorf("%w: tag", errMalformed)
		}
		off += k
		size, k := binary.Uvarint(b[off:])
		if k <= 0 || size > uint64(len(b)-off-k) {
			return 0, fmt.Errorf("%w: tag size", errMalformed)
		}
		off += k + int(size)
	}
	return off, nil
}

// encodeResponse frames a response: size, correlation id, an empty tag section for flexible
// versions (ApiVersions excepted), then the body. Callers check its size against their limit,
// which is below MaxInt32.
func encodeResponse(corr int32, key, version int16, resp kmsg.Response, sizeHint int) []byte {
	resp.SetVersion(version)
	// Sized for the frame it replaces and some growth (encryption adds to each record), so a
	// large Fetch or Produce is not copied over and over as it grows; pooled, and given back by
	// the relay once written.
	b := frameBuffer(max(256, sizeHint+sizeHint/8))[:8]
	binary.BigEndian.PutUint32(b[4:], uint32(corr))
	if resp.IsFlexible() && key != kmsg.ApiVersions.Int16() {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// Closer is implemented by filters that hold resources (KMS clients, caches).
type Closer interface{ Close() error }

// Close closes the filters that hold resources, last first.
func (c *Chain) Close() error {
	var errs []error
	for _, f := range slices.Backward(c.filters) {
		errs = append(errs, closeFilter(f))
	}
	return errors.Join(errs...)
}

// forPartition is a copy of a Fetch exchange for one partition of its response, which filters
// see on a goroutine of its own.
func (x *Exchange) forPartition() *Exchange {
	return &Exchange{Key: x.Key, Version: x.Version, CorrelationID: x.CorrelationID, ClientID: x.ClientID,
		Request: x.Request, Conn: x.Conn, state: x.state, names: maps.Clone(x.names)}
}

// PartitionwiseFetch is implemented by filters whose OnResponse of a Fetch response treats each
// partition on its own: a chain whose Fetch filters all do streams large Fetch responses one
// partition at a time (kafka.FetchStreamer) instead of holding them whole. Partitions of one
// response are then filtered at once, on copies of the exchange that share its Get state: such a
// filter must not call Set on a Fetch response.
type PartitionwiseFetch interface {
	PartitionwiseFetch()
}

// FetchPartitions is kafka.FetchStreamer: for the response to a Fetch request of a flexible
// version whose filters are all PartitionwiseFetch, the filter of one partition. Each partition
// goes through Response as a response of its own, with a copy of the request's exchange (the
// stream filters partitions of a response at the same time).
func (c *Conn) FetchPartitions(version int16, state any) kafka.PartitionFilter {
	x, ok := state.(*Exchange)
	if !ok || x.Key != kmsg.Fetch.Int16() || version < 12 {
		return nil
	}
	for _, f := range c.wants[x.Key] {
		if _, ok := f.(PartitionwiseFetch); !ok {
			return nil
		}
	}
	return func(frame []byte) ([]byte, func(), error) {
		// The stream walked the partition, every tagged-field count within its bytes.
		out, err := c.response(x.forPartition(), x.Key, version, frame, decodeInline)
		if err != nil || kafka.SameBuffer(out, frame) {
			return out, nil, err
		}
		return out, func() { kafka.PutFrame(out) }, nil
	}
}
