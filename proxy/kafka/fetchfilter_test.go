package kafka

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// testBatches is n record batches of size bytes each as the framing (base offset, length)
// clients split them by; the bodies are the batch's number repeated.
func testBatches(n, size int) []byte {
	var b []byte
	for i := range n {
		b = binary.BigEndian.AppendUint64(b, uint64(i))
		b = binary.BigEndian.AppendUint32(b, uint32(size-12))
		b = append(b, bytes.Repeat([]byte{byte(i)}, size-12)...)
	}
	return b
}

// multiPartitionFetch is a Fetch response of version v: three topics of two partitions each,
// with batches of 1 KiB, and the NodeEndpoints of brokers (v16+).
func multiPartitionFetch(v int16, brokers []kmsg.FetchResponseBroker) *kmsg.FetchResponse {
	r := kmsg.NewPtrFetchResponse()
	r.SetVersion(v)
	for ti := range 3 {
		t := kmsg.NewFetchResponseTopic()
		t.Topic, t.TopicID = fmt.Sprintf("topic-%d", ti), [16]byte{byte(ti + 1)}
		for pi := range 2 {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition, p.HighWatermark = int32(pi), 100
			p.RecordBatches = testBatches(4+ti, 1024)
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
	}
	if v >= 16 {
		r.Brokers = brokers
	}
	return r
}

// decodeFetch decodes a streamed response frame (size included), checking that the size
// matches, with the padding tag taken out.
func decodeFetch(t *testing.T, v int16, frame []byte) *kmsg.FetchResponse {
	t.Helper()
	if got := int(binary.BigEndian.Uint32(frame)); got != len(frame)-4 {
		t.Fatalf("v%d: frame size %d announced, %d sent", v, got, len(frame)-4)
	}
	r := kmsg.NewPtrFetchResponse()
	r.SetVersion(v)
	if err := r.ReadFrom(frame[9:]); err != nil {
		t.Fatalf("v%d: the streamed response does not decode: %v", v, err)
	}
	r.UnknownTags = kmsg.Tags{}
	return r
}

// recordsFilter applies f to the records of every partition it is given.
func recordsFilter(t *testing.T, v int16, f func(records []byte) []byte) PartitionFilter {
	return func(frame []byte) ([]byte, func(), error) {
		r := decodeFetch(t, v, frame)
		p := &r.Topics[0].Partitions[0]
		p.RecordBatches = f(p.RecordBatches)
		return sized(frameResponse(r)), nil, nil
	}
}

func TestStreamFilteredFetch(t *testing.T) {
	brokers := []kmsg.FetchResponseBroker{{NodeID: 1, Host: "upstream-broker-1.kafka.svc.cluster.local", Port: 9093}}
	tests := map[string]struct {
		records func([]byte) []byte
		// want is what the client must get of each partition's batches, from those sent.
		want func(sent []byte) []byte
	}{
		"unchanged partitions go out as they came": {
			records: func(b []byte) []byte { return b },
			want:    func(b []byte) []byte { return b },
		},
		"shrunk partitions are made up by padding": {
			records: func(b []byte) []byte { return b[:1024] },
			want:    func(b []byte) []byte { return b[:1024] },
		},
		"partitions that grow use the slack": {
			records: func(b []byte) []byte { return append(slices.Clone(b), testBatches(1, 13)...) },
			want:    func(b []byte) []byte { return append(slices.Clone(b), testBatches(1, 13)...) },
		},
		"partitions that outgrow the slack lose their last batches": {
			records: func(b []byte) []byte { return append(slices.Clone(b), testBatches(8, 1024)...) },
			want:    nil, // checked below: whole batches, fewer than made
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for v := int16(12); v <= MaxVersion(kmsg.Fetch.Int16()); v++ {
				sent := multiPartitionFetch(v, brokers)
				in := sized(frameResponse(sent))
				var out bytes.Buffer
				st, err := streamFilteredFetch(mover{src: bufio.NewReaderSize(bytes.NewReader(in), 16), dst: &out}, v, int64(len(in)), testMap, recordsFilter(t, v, tc.records))
				dropped := st.dropped
				if err != nil {
					t.Fatalf("v%d: %v", v, err)
				}
				got := decodeFetch(t, v, out.Bytes())
				if v >= 16 && (dropped || len(got.Brokers) != 1 || got.Brokers[0].Host != "vc-broker-1.example.com") {
					t.Errorf("v%d: node endpoints %+v (dropped %v), want rewritten", v, got.Brokers, dropped)
				}
				checkPartitions(t, v, sent, got, tc.records, tc.want)
			}
		})
	}
}

// checkPartitions compares each partition the client got with what the filter made of what was
// sent: exactly want's, or with want nil a prefix of whole batches.
func checkPartitions(t *testing.T, v int16, sent, got *kmsg.FetchResponse, made, want func([]byte) []byte) {
	t.Helper()
	cut := 0
	defer func() {
		if want == nil && cut == 0 {
			t.Errorf("v%d: no partition was cut, though they outgrew the slack", v)
		}
	}()
	for i, st := range sent.Topics {
		for j, sp := range st.Partitions {
			gp := got.Topics[i].Partitions[j]
			if gp.Partition != sp.Partition || gp.HighWatermark != sp.HighWatermark {
				t.Fatalf("v%d: partition %d/%d came out as %+v", v, i, j, gp)
			}
			if want != nil {
				if !bytes.Equal(gp.RecordBatches, want(sp.RecordBatches)) {
					t.Errorf("v%d: topic %d partition %d: %d bytes of records, want %d", v, i, j, len(gp.RecordBatches), len(want(sp.RecordBatches)))
				}
				continue
			}
			full := made(sp.RecordBatches)
			if len(gp.RecordBatches) < len(full) {
				cut++
			}
			if !bytes.HasPrefix(full, gp.RecordBatches) || len(gp.RecordBatches)%1024 != 0 {
				t.Errorf("v%d: topic %d partition %d: %d bytes, not whole batches of the %d made", v, i, j, len(gp.RecordBatches), len(full))
			}
		}
	}
}

func TestOnePartitionFetchRoundTrip(t *testing.T) {
	for v := int16(12); v <= MaxVersion(kmsg.Fetch.Int16()); v++ {
		r := multiPartitionFetch(v, nil)
		in := sized(frameResponse(r))
		c := &sliceCursor{b: in}
		c.advance(9 + 10 + 1)
		start := c.off
		walkTopicKey(c, v)
		topic := in[start:c.off]
		c.advance(1)
		start = c.off
		walkPartition(c)
		part := in[start:c.off]
		gotTopic, gotPart, err := PartitionOf(OnePartitionFetch(7, topic, part), v)
		if err != nil || !bytes.Equal(gotTopic, topic) || !bytes.Equal(gotPart, part) {
			t.Fatalf("v%d: PartitionOf(OnePartitionFetch) = %x, %d bytes, %v", v, gotTopic, len(gotPart), err)
		}
	}
}

// TestStreamFilteredFetchFails: a filter that fails, panics or renames the topic, and a response
// that ends early, end the stream with an error (the connection closes) and never a partial frame
// announced as whole without error, nor a crash.
func TestStreamFilteredFetchFails(t *testing.T) {
	const v = 16
	good := sized(frameResponse(multiPartitionFetch(v, nil)))
	tests := map[string]struct {
		in     []byte
		filter PartitionFilter
	}{
		"a filter error": {good, func([]byte) ([]byte, func(), error) { return nil, nil, errors.New("kms down") }},
		"a filter panic": {good, func([]byte) ([]byte, func(), error) { panic("a dependency's bug") }},
		"a filter that renames the topic": {good, func(frame []byte) ([]byte, func(), error) {
			r := kmsg.NewPtrFetchResponse()
			r.SetVersion(v)
			if err := r.ReadFrom(frame[9:]); err != nil {
				return nil, nil, err
			}
			r.Topics[0].TopicID[0] ^= 0xff
			return sized(frameResponse(r)), nil, nil
		}},
		"a truncated response": {good[:len(good)-100], recordsFilter(t, v, func(b []byte) []byte { return b })},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := streamFilteredFetch(mover{src: bufio.NewReader(bytes.NewReader(tc.in)), dst: &out}, v, int64(len(good)), testMap, tc.filter)
			if err == nil {
				t.Fatal("the stream ended without an error")
			}
		})
	}
}

// FuzzStreamFilteredFetch: whatever a broker sends, the filtered stream ends (no partition is
// left in flight), and what it sends the client when it succeeds is as long as it announced.
func FuzzStreamFilteredFetch(f *testing.F) {
	for v := int16(12); v <= MaxVersion(kmsg.Fetch.Int16()); v++ {
		f.Add(v, sized(frameResponse(multiPartitionFetch(v, nil))))
	}
	huge := sized(frameResponse(multiPartitionFetch(16, nil)))
	binary.BigEndian.PutUint32(huge[9+10+1+16+1+4+2+8+8+8+1+4:], 0xffffffff) // a records length varint's neighbourhood
	f.Add(int16(16), huge)
	f.Fuzz(func(t *testing.T, version int16, frame []byte) {
		var out bytes.Buffer
		same := func(frame []byte) ([]byte, func(), error) { return frame, nil, nil }
		_, err := streamFilteredFetch(mover{src: bufio.NewReaderSize(bytes.NewReader(frame), 16), dst: &out}, version, int64(len(frame)), testMap, same)
		if err == nil && int64(out.Len()) != int64(len(frame))+fetchSlack(int64(len(frame))) {
			t.Fatalf("%d bytes out for a %d-byte frame announced %d", out.Len(), len(frame), int64(len(frame))+fetchSlack(int64(len(frame))))
		}
	})
}

// shrinking is a Filters stand-in that streams Fetch responses and keeps only each partition's
// first batch, counting what it filtered each way.
type shrinking struct {
	wantAll
	streamed, whole int
}

func (s *shrinking) FetchPartitions(version int16, _ any) PartitionFilter {
	s.streamed++
	return func(frame []byte) ([]byte, func(), error) {
		r := kmsg.NewPtrFetchResponse()
		r.SetVersion(version)
		if err := r.ReadFrom(frame[9:]); err != nil {
			return nil, nil, err
		}
		p := &r.Topics[0].Partitions[0]
		p.RecordBatches = p.RecordBatches[:64<<10]
		return sized(frameResponse(r)), nil, nil
	}
}

func (s *shrinking) Response(_, _ int16, frame []byte, _ any) ([]byte, error) {
	s.whole++
	return frame, nil
}

// TestShrunkFetchesGoWhole: a streamed response the filters shrank by megabytes is padded up to
// the size announced (a padding tag whose length takes four bytes), and the connection's next
// large Fetch responses are filtered whole rather than padded again.
func TestShrunkFetchesGoWhole(t *testing.T) {
	const v = 16
	r := multiPartitionFetch(v, nil)
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			r.Topics[i].Partitions[j].RecordBatches = testBatches(512, 1024) // 512 KiB each, 3 MiB in all
		}
	}
	frame := sized(frameResponse(r))
	pending := filteredFetches(v, 2)
	f := &shrinking{wantAll: wantAll{max: 8 << 20}}
	var out bytes.Buffer
	err := CopyResponses(bytes.NewReader(append(slices.Clone(frame), frame...)), &out, pending, RelayOptions{MaxFrame: 8 << 20, Filters: f})
	if err != nil || f.streamed != 1 || f.whole != 1 {
		t.Fatalf("%v: streamed %d, whole %d; want one of each", err, f.streamed, f.whole)
	}
	first := out.Bytes()[:4+binary.BigEndian.Uint32(out.Bytes())]
	got := decodeFetch(t, v, first)
	if len(first) != len(frame)+int(fetchSlack(int64(len(frame)))) || len(got.Topics[2].Partitions[1].RecordBatches) != 64<<10 {
		t.Fatalf("the streamed response is %d bytes (want %d) with %d bytes of records in its last partition", len(first), len(frame)+int(fetchSlack(int64(len(frame)))), len(got.Topics[2].Partitions[1].RecordBatches))
	}
}

// TestCheckFetchResponse: a well-formed Fetch response passes; one whose top-level tagged-field
// count runs past its end (what makes kmsg loop) or that is cut short does not.
func TestCheckFetchResponse(t *testing.T) {
	for v := int16(12); v <= MaxVersion(kmsg.Fetch.Int16()); v++ {
		good := sized(frameResponse(multiPartitionFetch(v, nil)))
		if err := CheckFetchResponse(good, v); err != nil {
			t.Fatalf("v%d: a good response: %v", v, err)
		}
		corrupt := append(slices.Clone(good[:len(good)-1]), 0xff, 0xff, 0xff, 0xff, 0x0f) // 2^32-1 tags
		binary.BigEndian.PutUint32(corrupt, uint32(len(corrupt)-4))
		for name, frame := range map[string][]byte{"a corrupt tag count": corrupt, "cut short": good[:len(good)-10]} {
			if CheckFetchResponse(frame, v) == nil {
				t.Errorf("v%d: %s passed", v, name)
			}
		}
	}
}

// halving is a filter that takes every Fetch response whole and keeps the first half of each
// partition's records, as decryption shrinks them, in a frame of its own.
type halving struct{ wantAll }

func (halving) Response(_, version int16, frame []byte, _ any) ([]byte, error) {
	return keepBatches(version, frame, func(n int) int { return n / 2 })
}

// TestWholeFetchWrittenExactly: a filtered Fetch response read whole (as a connection's are
// once one was padded by more than 1/wholeFetchPadding) goes out from where it lies with its size set to what
// the filters made and, at v16+, NodeEndpoints rewritten exactly, whatever the hosts' lengths,
// small or large: never dropped, as the stream's in-place rewrite must when the new hosts do not
// fit the bytes the broker's took.
func TestWholeFetchWrittenExactly(t *testing.T) {
	brokers := []kmsg.FetchResponseBroker{{NodeID: 1, Host: "b1", Port: 9093}, {NodeID: 2, Host: "b2", Port: 9093}}
	for _, v := range []int16{12, 15, 16, MaxVersion(kmsg.Fetch.Int16())} {
		for _, batches := range []int{4, 600} { // under and over FetchBufferLimit
			sent := multiPartitionFetch(v, brokers)
			for i := range sent.Topics {
				for j := range sent.Topics[i].Partitions {
					sent.Topics[i].Partitions[j].RecordBatches = testBatches(batches, 1024)
				}
			}
			frame := sized(frameResponse(sent))
			pending := filteredFetches(v, 2)
			var out bytes.Buffer
			stats := &countingStats{}
			err := CopyResponsesWhole(bytes.NewReader(append(slices.Clone(frame), frame...)), &out, pending,
				RelayOptions{MaxFrame: 8 << 20, Filters: halving{wantAll{max: 8 << 20}}, Addresses: testMap, Stats: stats})
			if err != nil {
				t.Fatalf("v%d, %d batches: %v", v, batches, err)
			}
			for i := range 2 {
				size := int(binary.BigEndian.Uint32(out.Bytes()))
				got := decodeFetch(t, v, out.Next(4+size))
				if n := len(got.Topics[1].Partitions[1].RecordBatches); n != batches*1024/2 {
					t.Fatalf("v%d, %d batches, response %d: %d bytes of records, want %d", v, batches, i, n, batches*1024/2)
				}
				want := []kmsg.FetchResponseBroker(nil)
				if v >= 16 {
					want = []kmsg.FetchResponseBroker{{NodeID: 1, Host: "vc-broker-1.example.com", Port: 9292}, {NodeID: 2, Host: "vc-broker-2.example.com", Port: 9292}}
				}
				if fmt.Sprint(got.Brokers) != fmt.Sprint(want) {
					t.Fatalf("v%d, %d batches, response %d: brokers %v, want %v", v, batches, i, got.Brokers, want)
				}
			}
			if out.Len() != 0 || stats.rewrote != 2*len(brokers) && v >= 16 || stats.dropped != 0 {
				t.Fatalf("v%d, %d batches: %d bytes after the responses, %d addresses rewritten, %d dropped", v, batches, out.Len(), stats.rewrote, stats.dropped)
			}
		}
	}
}

// countingStats counts what the relay reports of address rewriting.
type countingStats struct{ rewrote, dropped int }

func (s *countingStats) Rewrote(_ int16, n int)         { s.rewrote += n }
func (s *countingStats) DroppedEndpoints()              { s.dropped++ }
func (s *countingStats) Requested(int16)                {}
func (s *countingStats) Responded(int16, time.Duration) {}

// trimming drops the last of every partition's ten record batches, streamed or whole, as
// decrypting 1 KiB records shrinks a response (by 11-13 %), counting which way each went.
type trimming struct {
	wantAll
	streamed, whole int
}

func trimBatches(version int16, frame []byte) ([]byte, error) {
	return keepBatches(version, frame, func(n int) int { return n * 9 / 10 })
}

// keepBatches re-frames a Fetch response frame (size included) with only the first keep(n) of
// each partition's n record batches.
func keepBatches(version int16, frame []byte, keep func(n int) int) ([]byte, error) {
	r := kmsg.NewPtrFetchResponse()
	r.SetVersion(version)
	if err := r.ReadFrom(frame[9:]); err != nil {
		return nil, err
	}
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			p := &r.Topics[i].Partitions[j]
			p.RecordBatches = p.RecordBatches[:keep(len(p.RecordBatches))]
		}
	}
	return sized(frameResponse(r)), nil
}

func (f *trimming) FetchPartitions(version int16, _ any) PartitionFilter {
	f.streamed++
	return func(frame []byte) ([]byte, func(), error) {
		out, err := trimBatches(version, frame)
		return out, nil, err
	}
}

func (f *trimming) Response(_, version int16, frame []byte, _ any) ([]byte, error) {
	f.whole++
	return trimBatches(version, frame)
}

// TestPaddedFetchesGoWhole: a connection whose streamed Fetch response the filters shrank by a
// tenth (1 KiB records decrypted shrink by 11-13 %) has the rest read whole, not padded again:
// padding costs the proxy and the client as much as records.
func TestPaddedFetchesGoWhole(t *testing.T) {
	const v = 16
	r := multiPartitionFetch(v, nil)
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			r.Topics[i].Partitions[j].RecordBatches = testBatches(10, 50<<10) // 500 KiB each
		}
	}
	frame := sized(frameResponse(r))
	pending := filteredFetches(v, 3)
	f := &trimming{wantAll: wantAll{max: 8 << 20}}
	var out bytes.Buffer
	err := CopyResponses(bytes.NewReader(bytes.Repeat(frame, 3)), &out, pending, RelayOptions{MaxFrame: 8 << 20, Filters: f})
	if err != nil || f.streamed != 1 || f.whole != 2 {
		t.Fatalf("%v: streamed %d, whole %d; want the first streamed and the others whole", err, f.streamed, f.whole)
	}
	for i := range 3 {
		got := decodeFetch(t, v, out.Next(4+int(binary.BigEndian.Uint32(out.Bytes()))))
		if n := len(got.Topics[2].Partitions[1].RecordBatches); n != 9*50<<10 {
			t.Fatalf("response %d: %d bytes of records in the last partition, want %d", i, n, 9*50<<10)
		}
	}
}

// filteredFetches is a closed queue of n filtered Fetch requests at version v, correlation id 7.
func filteredFetches(v int16, n int) chan Pending {
	pending := make(chan Pending, n)
	for range n {
		pending <- Pending{Key: kmsg.Fetch.Int16(), Version: v, CorrelationID: 7, Filtered: true, State: "filtered"}
	}
	close(pending)
	return pending
}
