// Package proxytest holds test support shared by the proxy's test packages (proxy/server and
// the kafkalink-proxy binary's hostile-client suite, and end-to-end tests): a topic full of
// data and a Fetch request that asks for all of it, for clients that must make the proxy write
// more than socket buffers hold, and a topic's records as the brokers store them.
package proxytest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// BigFetch is a Fetch v12 request (by topic name, which the proxy does not rewrite) for
// partitions 0..partitions-1 of topic from offset 0, allowing up to 16 MiB per partition.
func BigFetch(topic string, partitions int32) *kmsg.FetchRequest {
	f := kmsg.NewPtrFetchRequest()
	f.SetVersion(12)
	f.MaxWaitMillis, f.MaxBytes = 10, 64<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	for i := range partitions {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes, fp.LogStartOffset = i, 16<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
	}
	f.Topics = append(f.Topics, ft)
	return f
}

// FillTopic writes about 4 MiB into topic, directly to the cluster at seed, spread round-robin
// over the topic's partitions, so every partition BigFetch asks for holds data.
func FillTopic(t testing.TB, seed, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(2<<20), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	val := make([]byte, 512<<10)
	for range 8 {
		if err := cl.ProduceSync(ctx, kgo.SliceRecord(val)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// StoredRecords reads every data record of a topic as the brokers store it, with a client of
// the brokers themselves (opts), whatever the proxy would make of them: control batches are
// left out.
func StoredRecords(ctx context.Context, t testing.TB, opts []kgo.Opt, topic string) []kmsg.Record {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = []kmsg.MetadataRequestTopic{mt}
	mdResp, err := md.RequestWith(ctx, cl)
	if err != nil || len(mdResp.Topics) != 1 || mdResp.Topics[0].ErrorCode != 0 {
		return nil
	}
	var out []kmsg.Record
	for _, part := range mdResp.Topics[0].Partitions {
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes, req.MaxWaitMillis = 1<<20, 10
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, mdResp.Topics[0].TopicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = part.Partition, 1<<20
		rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
		req.Topics = []kmsg.FetchRequestTopic{rt}
		resp, err := req.RequestWith(ctx, cl.Broker(int(part.Leader)))
		if err != nil {
			t.Fatal(err)
		}
		batches, _, _ := records.Split(resp.Topics[0].Partitions[0].RecordBatches)
		for _, b := range batches {
			batch, err := records.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if batch.Header.Attributes&0x20 == 0 {
				out = append(out, batch.Records...)
			}
		}
	}
	return out
}
