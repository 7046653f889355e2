package kafka

import (
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkSmallProduceRoundTrip relays one-record Produce requests (acks=1) and their
// responses one after another, as a small producer sends them, through CopyRequests and
// CopyResponses between in-memory connections: what the relay costs per request beyond the
// system calls, allocations included.
func BenchmarkSmallProduceRoundTrip(b *testing.B) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = 1
	req.TimeoutMillis = 1000
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "small"
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = make([]byte, 160)
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(9)
	respFrame := sized(frameResponse(resp))

	client, proxyIn := net.Pipe()
	proxyUp, broker := net.Pipe()
	pending := make(chan Pending, 32)
	go func() { _ = CopyRequests(proxyIn, proxyUp, pending, RelayOptions{MaxFrame: 1 << 20}) }()
	go func() {
		_ = CopyResponses(proxyUp, proxyIn, pending, RelayOptions{MaxFrame: 1 << 20, Addresses: testMap})
	}()
	go answer(broker, respFrame)
	defer client.Close()
	defer broker.Close()
	in := make([]byte, len(respFrame))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		binary.BigEndian.PutUint32(frame[8:], uint32(i))
		if _, err := client.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(client, in); err != nil {
			b.Fatal(err)
		}
	}
}

// answer reads request frames from broker and answers each with resp, its correlation id set.
func answer(broker net.Conn, resp []byte) {
	out := append([]byte(nil), resp...)
	var size [4]byte
	var body []byte
	for {
		if _, err := io.ReadFull(broker, size[:]); err != nil {
			return
		}
		body = append(body[:0], make([]byte, binary.BigEndian.Uint32(size[:]))...)
		if _, err := io.ReadFull(broker, body); err != nil {
			return
		}
		copy(out[4:8], body[4:8])
		if _, err := broker.Write(out); err != nil {
			return
		}
	}
}
