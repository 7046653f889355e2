package tenant

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// BenchmarkMultiTenantProduce is the chain's cost for a 1 MiB Produce of 1 KiB records: by topic
// id (v13, forwarded as sent) and by name (v12, prefixed and re-encoded).
func BenchmarkMultiTenantProduce(b *testing.B) {
	c, err := filter.NewChain(context.Background(), "a", []config.Filter{{Name: "t", Type: MultiTenantType, Config: []byte(`{}`)}})
	if err != nil {
		b.Fatal(err)
	}
	conn := c.ForConnection()
	id := [16]byte{7}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	_, _, state, _ := conn.Request(frame(md))
	mdr := kmsg.NewPtrMetadataResponse()
	mdr.Version = 12
	mdr.Topics = []kmsg.MetadataResponseTopic{{Topic: kmsg.StringPtr("a-orders"), TopicID: id}}
	if _, err := conn.Response(3, 12, responseFrame(mdr, 9), state); err != nil {
		b.Fatal(err)
	}
	batch := &records.Batch{Header: kmsg.RecordBatch{Magic: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1}}
	for range 1000 {
		batch.Records = append(batch.Records, kmsg.Record{Value: make([]byte, 1024)})
	}
	raw, err := batch.Encode()
	if err != nil {
		b.Fatal(err)
	}
	for name, version := range map[string]int16{"by id v13": 13, "by name v12": 12} {
		p := kmsg.NewPtrProduceRequest()
		p.Version, p.Acks = version, -1
		p.Topics = []kmsg.ProduceRequestTopic{{Topic: "orders", TopicID: id, Partitions: []kmsg.ProduceRequestTopicPartition{{Records: raw}}}}
		in := frame(p)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, _, _, err := conn.Request(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
