package kafka

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// testSplicer stands in for the kernel's splice between the relay's two connections: it moves
// bytes straight from the source the relay reads to the destination it writes, and counts them.
// refuse makes it decline, as the server's does while bytes read earlier are still to go.
type testSplicer struct {
	src     io.Reader
	dst     io.Writer
	refuse  bool
	spliced int64
}

func (s *testSplicer) splice(n int64) (bool, error) {
	if s.refuse {
		return false, nil
	}
	m, err := io.CopyN(s.dst, s.src, n)
	s.spliced += m
	return true, err
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestSplicedResponsesKeepEveryByte: large Fetch responses (streamed) and a small one between
// them reach the client byte for byte as the copying relay sends them, with their record data
// spliced and their endpoints rewritten; a splicer that declines changes nothing either.
func TestSplicedResponsesKeepEveryByte(t *testing.T) {
	var stream []byte
	var pendings []Pending
	for i, size := range []int{600 << 10, 0, 2 << 20} {
		r := sampleResponse(kmsg.Fetch.Int16(), 16).(*kmsg.FetchResponse)
		r.Topics[0].Partitions[0].RecordBatches = randomBytes(size, uint64(i))
		r.Brokers = []kmsg.FetchResponseBroker{{NodeID: 1, Host: "10.0.0.2", Port: 9093}}
		frame := sized(frameResponse(r))
		corr := int32(100 + i)
		frame[4], frame[5], frame[6], frame[7] = byte(corr>>24), byte(corr>>16), byte(corr>>8), byte(corr)
		stream = append(stream, frame...)
		pendings = append(pendings, Pending{Key: kmsg.Fetch.Int16(), Version: 16, CorrelationID: corr})
	}
	relay := func(sp func(src io.Reader, dst io.Writer) Splicer) []byte {
		pending := make(chan Pending, len(pendings))
		for _, p := range pendings {
			pending <- p
		}
		close(pending)
		src, dst := bytes.NewReader(stream), &bytes.Buffer{}
		if err := CopyResponses(src, dst, pending, RelayOptions{MaxFrame: 8 << 20, Addresses: testMap, Splice: sp(src, dst)}); err != nil {
			t.Fatal(err)
		}
		return dst.Bytes()
	}
	copied := relay(func(io.Reader, io.Writer) Splicer { return nil })
	if bytes.Contains(copied, []byte("10.0.0.2")) {
		t.Fatal("the upstream address was not rewritten")
	}
	var splicing, refusing *testSplicer
	spliced := relay(func(src io.Reader, dst io.Writer) Splicer {
		splicing = &testSplicer{src: src, dst: dst}
		return splicing.splice
	})
	if !bytes.Equal(spliced, copied) {
		t.Fatalf("spliced relay sent %d bytes that differ from the copying relay's %d", len(spliced), len(copied))
	}
	if splicing.spliced < 2<<20 {
		t.Fatalf("only %d bytes spliced; the records alone are %d", splicing.spliced, 600<<10+2<<20)
	}
	declined := relay(func(src io.Reader, dst io.Writer) Splicer {
		refusing = &testSplicer{src: src, dst: dst, refuse: true}
		return refusing.splice
	})
	if !bytes.Equal(declined, copied) || refusing.spliced != 0 {
		t.Fatalf("a declining splicer changed the output (%d bytes) or moved %d bytes", len(declined), refusing.spliced)
	}
}

// TestSplicedRequestsKeepEveryByte: a large Produce request is forwarded whole, its bulk
// spliced, between small requests that are copied.
func TestSplicedRequestsKeepEveryByte(t *testing.T) {
	f := kmsg.NewRequestFormatter()
	var stream []byte
	for i, size := range []int{1 << 20, 100, 300 << 10} {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks = 1
		req.TimeoutMillis = 1000
		topic := kmsg.NewProduceRequestTopic()
		topic.Topic = "t"
		part := kmsg.NewProduceRequestTopicPartition()
		part.Records = randomBytes(size, uint64(i))
		topic.Partitions = append(topic.Partitions, part)
		req.Topics = append(req.Topics, topic)
		stream = append(stream, f.AppendRequest(nil, req, int32(i))...) // AppendRequest sizes from dst[0]
	}
	pending := make(chan Pending, 8)
	src, dst := bytes.NewReader(stream), &bytes.Buffer{}
	sp := &testSplicer{src: src, dst: dst}
	if err := CopyRequests(src, dst, pending, RelayOptions{MaxFrame: 8 << 20, Splice: sp.splice}); !errors.Is(err, io.EOF) {
		t.Fatalf("CopyRequests: %v, want io.EOF at the end of the stream", err)
	}
	if !bytes.Equal(dst.Bytes(), stream) {
		t.Fatalf("forwarded %d bytes that differ from the %d sent", dst.Len(), len(stream))
	}
	if sp.spliced < 1<<20 {
		t.Fatalf("only %d bytes spliced", sp.spliced)
	}
	n := 0
	for range pending {
		n++
	}
	if n != 3 {
		t.Fatalf("%d requests queued for a response, want 3", n)
	}
}

// TestSplicedResponsesReadOnlyHeads: with a splicer, the response side reads a large Fetch
// response's heads (the response's, each partition's) with a small buffer (headSize), so all
// but a few KiB of it is spliced. A 64 KiB buffer reads, and copies twice, up to 64 KiB of the
// next partition's records with its head.
func TestSplicedResponsesReadOnlyHeads(t *testing.T) {
	const partitions = 3
	r := sampleResponse(kmsg.Fetch.Int16(), 16).(*kmsg.FetchResponse)
	first := r.Topics[0].Partitions[0]
	r.Topics[0].Partitions = nil
	for i := range partitions {
		p := first
		p.Partition = int32(i)
		p.RecordBatches = randomBytes(512<<10, uint64(i))
		r.Topics[0].Partitions = append(r.Topics[0].Partitions, p)
	}
	frame := sized(frameResponse(r))
	frame[4], frame[5], frame[6], frame[7] = 0, 0, 0, 9
	pending := make(chan Pending, 1)
	pending <- Pending{Key: kmsg.Fetch.Int16(), Version: 16, CorrelationID: 9}
	close(pending)
	src, dst := bytes.NewReader(frame), &bytes.Buffer{}
	sp := &testSplicer{src: src, dst: dst}
	if err := CopyResponses(src, dst, pending, RelayOptions{MaxFrame: 8 << 20, Addresses: testMap, Splice: sp.splice}); err != nil {
		t.Fatal(err)
	}
	if read, most := int64(len(frame))-sp.spliced, int64(waitSize+partitions*headSize); read > most {
		t.Fatalf("%d bytes of a %d-byte response were read, not spliced; want at most %d", read, len(frame), most)
	}
}
