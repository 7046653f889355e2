package filter

import "github.com/twmb/franz-go/pkg/kmsg"

// Refusals are Produce partitions a filter took out of a request, with the errors their
// producer gets: the filter answers them itself, whether the rest of the request is forwarded
// (then AddTo the broker's response) or not (then AddTo the filter's own answer).
type Refusals map[string][]kmsg.ProduceResponseTopicPartition

// Add records a refused partition of topic.
func (r Refusals) Add(topic string, p kmsg.ProduceResponseTopicPartition) {
	r[topic] = append(r[topic], p)
}

// Refuse records a refused partition with an error code and message.
func (r Refusals) Refuse(topic string, partition int32, code int16, msg string) {
	p := kmsg.NewProduceResponseTopicPartition()
	p.Partition, p.ErrorCode = partition, code
	p.BaseOffset, p.LogAppendTime, p.LogStartOffset = -1, -1, -1
	p.ErrorMessage = &msg
	r.Add(topic, p)
}

// AddTo adds the refused partitions to a Produce response.
func (r Refusals) AddTo(resp *kmsg.ProduceResponse) {
	for topic, parts := range r {
		i := -1
		for j := range resp.Topics {
			if resp.Topics[j].Topic == topic {
				i = j
			}
		}
		if i < 0 {
			t := kmsg.NewProduceResponseTopic()
			t.Topic = topic
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, parts...)
	}
}

// FailProduce adds to a Produce response every partition of topics (a request's), failed with
// code, as a broker answers a partition it did not write.
func FailProduce(resp *kmsg.ProduceResponse, topics []kmsg.ProduceRequestTopic, code int16) {
	for _, t := range topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}
