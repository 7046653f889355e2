package kafka_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	_ "github.com/kafkalink/kafkalink/proxy/filter/encryption"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// BenchmarkDecryptFetch is a decrypting chain's CPU for one Fetch response of two 1 MiB
// partitions of encrypted records, read whole (the relay's path up to kafka.FetchBufferLimit)
// and streamed partition by partition (above it), side by side; and "relay", a connection's
// run of relayResponses Fetch v16 responses of one such partition through kafka.CopyResponses,
// as the proxy relays them (the first streamed, the others streamed too at 16 KiB or, once the
// first was padded by more than 1/32 as at 1 KiB, whose records shrink by 11 %, read whole,
// decrypted and written) and all read whole.
func BenchmarkDecryptFetch(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 10} {
		c, produced := encryptedBatch(b, size, (1<<20)/size)
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(13)
		t := kmsg.NewFetchResponseTopic()
		t.Topic = "secrets"
		for p := range 2 {
			fp := kmsg.NewFetchResponseTopicPartition()
			fp.Partition, fp.RecordBatches = int32(p), produced
			t.Partitions = append(t.Partitions, fp)
		}
		resp.Topics = []kmsg.FetchResponseTopic{t}
		resp.Version = 12
		frame := responseFrame(resp)
		fetch := kmsg.NewPtrFetchRequest()
		fetch.SetVersion(12)
		req := kmsg.NewRequestFormatter().AppendRequest(nil, fetch, 2)
		b.Run(map[int]string{16 << 10: "16KiB", 1 << 10: "1KiB"}[size]+"/relay", func(b *testing.B) {
			benchRelayFetches(b, c, produced)
		})
		buf := make([]byte, len(frame))
		var out bytes.Buffer
		name := map[int]string{16 << 10: "16KiB", 1 << 10: "1KiB"}[size]
		b.Run(name+"/whole", func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				_, _, state, _ := c.Request(req)
				copy(buf, frame) // decryption is in place: a fresh response each time
				got, err := c.Response(kmsg.Fetch.Int16(), 12, buf, state)
				if err != nil {
					b.Fatal(err)
				}
				out.Reset()
				out.Write(got) // as the relay writes it
				kafka.PutFrame(got)
			}
		})
		b.Run(name+"/streamed", func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				_, _, state, _ := c.Request(req)
				out.Reset()
				if err := kafka.StreamFilteredFetch(bufio.NewReaderSize(bytes.NewReader(frame), 64<<10), &out, 12, int64(len(frame)), c.FetchPartitions(12, state)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// relayResponses is how many Fetch responses one connection relays in BenchmarkDecryptFetch's
// "relay" cases.
const relayResponses = 8

// benchRelayFetches relays relayResponses Fetch v16 responses of one partition holding batch
// (with NodeEndpoints, to be rewritten) through c on one connection, as the proxy does
// ("asProxy") and read whole from the first ("whole"), checking once that they are decrypted.
func benchRelayFetches(b *testing.B, c *filter.Conn, batch []byte) {
	id := learnTopicID(b, c, "secrets")
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(16)
	t := kmsg.NewFetchResponseTopic()
	t.TopicID = id
	fp := kmsg.NewFetchResponseTopicPartition()
	fp.RecordBatches = batch
	t.Partitions = []kmsg.FetchResponseTopicPartition{fp}
	resp.Topics = []kmsg.FetchResponseTopic{t}
	resp.Brokers = []kmsg.FetchResponseBroker{{NodeID: 0, Host: "kafka-0.kafka.svc.cluster.local", Port: 9092}}
	frames := bytes.Repeat(responseFrame(resp), relayResponses)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(16)
	req := kmsg.NewRequestFormatter().AppendRequest(nil, fetch, 2)
	src := bytes.NewReader(frames)
	opts := kafka.RelayOptions{MaxFrame: 64 << 20, Filters: c,
		Addresses: func(int32, string, int32) (string, int32) { return "proxy.example.com", 9092 }}
	relay := func(copyResponses func(io.Reader, io.Writer, <-chan kafka.Pending, kafka.RelayOptions) error, out io.Writer) {
		src.Reset(frames)
		pending := make(chan kafka.Pending, relayResponses)
		for range relayResponses {
			_, _, state, _ := c.Request(req)
			pending <- kafka.Pending{Key: kmsg.Fetch.Int16(), Version: 16, CorrelationID: 2, Filtered: true, State: state}
		}
		close(pending)
		if err := copyResponses(src, out, pending, opts); err != nil {
			b.Fatal(err)
		}
	}
	for name, copyResponses := range map[string]func(io.Reader, io.Writer, <-chan kafka.Pending, kafka.RelayOptions) error{
		"asProxy": kafka.CopyResponses, "whole": kafka.CopyResponsesWhole,
	} {
		b.Run(name, func(b *testing.B) {
			var out bytes.Buffer
			relay(copyResponses, &out)
			checkRelayed(b, out.Bytes(), len(batch))
			b.SetBytes(int64(len(frames)))
			for b.Loop() {
				relay(copyResponses, io.Discard)
			}
		})
	}
}

// checkRelayed fails b unless out holds relayResponses Fetch v16 responses whose one partition
// came out decrypted (shorter than the encrypted batch of encrypted bytes) and whose endpoints
// were rewritten.
func checkRelayed(b *testing.B, out []byte, encrypted int) {
	for i := range relayResponses {
		if len(out) < 4 || int(binary.BigEndian.Uint32(out)) > len(out)-4 {
			b.Fatalf("response %d: %d bytes left", i, len(out))
		}
		frame := out[4 : 4+binary.BigEndian.Uint32(out)]
		out = out[len(frame)+4:]
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(16)
		if err := resp.ReadFrom(frame[5:]); err != nil { // correlation id, header tags
			b.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || len(p.RecordBatches) >= encrypted || len(resp.Brokers) != 1 || resp.Brokers[0].Host != "proxy.example.com" {
			b.Fatalf("response %d: error %d, %d bytes of records for %d encrypted, brokers %v", i, p.ErrorCode, len(p.RecordBatches), encrypted, resp.Brokers)
		}
	}
}

// learnTopicID passes a Metadata response naming topic through c, which learns its id (Fetch
// v13+ names topics by id), and returns the id.
func learnTopicID(b *testing.B, c *filter.Conn, topic string) [16]byte {
	id := [16]byte{1, 2, 3}
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	_, _, state, err := c.Request(kmsg.NewRequestFormatter().AppendRequest(nil, req, 2))
	if err != nil {
		b.Fatal(err)
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(12)
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic, mt.TopicID = kmsg.StringPtr(topic), id
	resp.Topics = []kmsg.MetadataResponseTopic{mt}
	if _, err := c.Response(kmsg.Metadata.Int16(), 12, responseFrame(resp), state); err != nil {
		b.Fatal(err)
	}
	return id
}

// encryptedBatch is a connection of a decrypting chain and a batch of n records of size bytes
// encrypted by it, as a broker would hand it back.
func encryptedBatch(b *testing.B, size, n int) (*filter.Conn, []byte) {
	dir := b.TempDir()
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	if err := os.WriteFile(filepath.Join(dir, "KEK_secrets"), []byte(base64.StdEncoding.EncodeToString(k)), 0o600); err != nil {
		b.Fatal(err)
	}
	chain, err := filter.NewChain(context.Background(), "bench", []config.Filter{{Name: "e", Type: "RecordEncryption",
		Config: []byte(`{"kms":"KubernetesSecretKms","kmsConfig":{"keyDir":"` + dir + `"},"selector":"TemplateKekSelector","selectorConfig":{"template":"KEK_$(topicName)"}}`)}})
	if err != nil {
		b.Fatal(err)
	}
	c := chain.ForConnection()
	batch := records.Batch{Header: kmsg.RecordBatch{Magic: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1}}
	for i := range n {
		v := make([]byte, size)
		_, _ = rand.Read(v[:size/4])
		batch.Records = append(batch.Records, kmsg.Record{OffsetDelta: int32(i), Value: v})
	}
	raw, err := batch.Encode()
	if err != nil {
		b.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(12)
	req.Acks, req.TimeoutMillis = -1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "secrets"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	fwd, _, _, err := c.Request(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1))
	if err != nil {
		b.Fatal(err)
	}
	sent := kmsg.NewPtrProduceRequest()
	sent.SetVersion(12)
	if err := sent.ReadFrom(fwd[4+2+2+4+2+1:]); err != nil { // size, key, version, correlation id, null client id, tags
		b.Fatal(err)
	}
	return c, sent.Topics[0].Partitions[0].Records
}

// responseFrame is a response frame: size, correlation id 2, flexible header tags, body.
func responseFrame(resp kmsg.Response) []byte {
	f := binary.BigEndian.AppendUint32(nil, 0)
	f = binary.BigEndian.AppendUint32(f, 2)
	f = resp.AppendTo(append(f, 0))
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	return f
}
