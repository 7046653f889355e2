package encryption

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// BenchmarkChain is the filter's own cost on a Produce request and a Fetch response of about
// one 900 KiB batch, of 56 records of 16 KiB or 896 of 1 KiB, through the chain as the relay
// calls it.
func BenchmarkChain(b *testing.B) {
	b.Run("16KiB", func(b *testing.B) { benchChain(b, 16<<10, 56) })
	b.Run("1KiB", func(b *testing.B) { benchChain(b, 1<<10, 896) })
}

func benchChain(b *testing.B, size, count int) {
	e, _ := newTestFilter(b, "")
	dir := e.kms.(*countingKMS).KMS.(SecretKMS).Dir
	c, err := filter.NewChain(context.Background(), "bench", []config.Filter{{Name: "e", Type: "RecordEncryption",
		Config: []byte(`{"kms":"KubernetesSecretKms","kmsConfig":{"keyDir":"` + dir + `"},"selector":"TemplateKekSelector","selectorConfig":{"template":"KEK_$(topicName)"}}`)}})
	if err != nil {
		b.Fatal(err)
	}
	values := make([][]byte, count)
	for i := range values {
		values[i] = recordValueForBench(size)
	}
	raw := batch(b, 0, values...)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(12)
	req.Acks, req.TimeoutMillis = -1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "secrets"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
	b.Run("produce", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			fwd, _, _, err := c.Request(frame)
			if err != nil {
				b.Fatal(err)
			}
			kafka.PutFrame(fwd) // as the relay does once the frame is written
		}
	})
	// The broker's Fetch response holds the batch as the filter forwarded it.
	fwd, _, _, err := c.Request(frame)
	if err != nil {
		b.Fatal(err)
	}
	sent := kmsg.NewPtrProduceRequest()
	sent.SetVersion(12)
	if err := sent.ReadFrom(fwd[4+2+2+4+2+1:]); err != nil { // size, key, version, correlation id, null client id, tags
		b.Fatal(err)
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetchFrame := kmsg.NewRequestFormatter().AppendRequest(nil, fetch, 2)
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	ft := kmsg.NewFetchResponseTopic()
	ft.Topic = "secrets"
	fp := kmsg.NewFetchResponseTopicPartition()
	fp.RecordBatches = sent.Topics[0].Partitions[0].Records
	ft.Partitions = []kmsg.FetchResponseTopicPartition{fp}
	resp.Topics = []kmsg.FetchResponseTopic{ft}
	respFrame := encodeForBench(2, resp)
	b.Run("fetch", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		buf := make([]byte, len(respFrame))
		for b.Loop() {
			_, _, state, err := c.Request(fetchFrame)
			if err != nil {
				b.Fatal(err)
			}
			copy(buf, respFrame) // decryption is in place: a fresh response each time
			out, err := c.Response(kmsg.Fetch.Int16(), 12, buf, state)
			if err != nil {
				b.Fatal(err)
			}
			kafka.PutFrame(out) // as the relay does once the frame is written
		}
	})
}

// encodeForBench is a response frame: size, correlation id, flexible header tags, body.
func encodeForBench(corr int32, resp kmsg.Response) []byte {
	b := []byte{0, 0, 0, 0, 0, 0, 0, byte(corr)}
	if resp.IsFlexible() {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	n := len(b) - 4
	b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return b
}

func recordValueForBench(n int) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(i * 7)
	}
	return v
}

// BenchmarkFloor is what any filter that seals each record's value with AES-256-GCM and sums
// each batch with CRC-32C pays per byte on this CPU, whatever else it does: the floor under
// BenchmarkChain and under the proxy bench's encryption rows (docs/record-encryption.md, Cost).
func BenchmarkFloor(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 10} {
		name := map[int]string{16 << 10: "16KiB", 1 << 10: "1KiB"}[size]
		gcm := newGCMForBench(b)
		value, nonce := recordValueForBench(size), make([]byte, gcm.NonceSize())
		sealed := gcm.Seal(nil, nonce, value, nil)
		b.Run(name+"/seal", func(b *testing.B) {
			b.SetBytes(int64(size))
			out := make([]byte, 0, len(sealed))
			for b.Loop() {
				out = gcm.Seal(out[:0], nonce, value, nil)
			}
		})
		b.Run(name+"/open", func(b *testing.B) {
			b.SetBytes(int64(size))
			out := make([]byte, 0, size)
			for b.Loop() {
				var err error
				if out, err = gcm.Open(out[:0], nonce, sealed, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/crc32c", func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				crc32.Checksum(value, castagnoli)
			}
		})
	}
}

func newGCMForBench(b *testing.B) cipher.AEAD {
	block, err := aes.NewCipher(make([]byte, 32))
	if err != nil {
		b.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		b.Fatal(err)
	}
	return gcm
}
