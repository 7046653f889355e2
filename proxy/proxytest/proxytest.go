// Package proxytest holds test support shared by the proxy's test packages (proxy/server and
// the kafkalink-proxy binary's hostile-client suite): a topic full of data and a Fetch request
// that asks for all of it, for clients that must make the proxy write more than socket buffers hold.
package proxytest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
