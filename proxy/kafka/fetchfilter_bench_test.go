package kafka_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
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
// and streamed partition by partition (above it), side by side.
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
