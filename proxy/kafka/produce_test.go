package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceHasNodeEndpoints checks the scanner against kmsg at every flexible Produce version,
// with and without the parts that vary: record errors, error messages, a partition's current
// leader (a tagged field of its own), and NodeEndpoints.
func TestProduceHasNodeEndpoints(t *testing.T) {
	msg := "leader moved"
	for v := int16(9); v <= MaxVersion(kmsg.Produce.Int16()); v++ {
		for _, withEndpoints := range []bool{false, true} {
			for _, busy := range []bool{false, true} {
				r := kmsg.NewPtrProduceResponse()
				r.SetVersion(v)
				r.ThrottleMillis = 5
				for ti := 0; ti < 2; ti++ {
					tp := kmsg.NewProduceResponseTopic()
					tp.Topic = "orders"
					tp.TopicID = [16]byte{0xff, 0xff, 0xff, 0xff, 1}
					for pi := int32(0); pi < 3; pi++ {
						pp := kmsg.NewProduceResponseTopicPartition()
						pp.Partition, pp.BaseOffset, pp.LogAppendTime = pi, 1<<40, -1
						if busy {
							pp.ErrorCode = kerr.NotLeaderForPartition.Code
							pp.ErrorMessage = &msg
							pp.ErrorRecords = []kmsg.ProduceResponseTopicPartitionErrorRecord{{RelativeOffset: 3, ErrorMessage: &msg}}
							pp.CurrentLeader.LeaderID, pp.CurrentLeader.LeaderEpoch = 2, 7
						}
						tp.Partitions = append(tp.Partitions, pp)
					}
					r.Topics = append(r.Topics, tp)
				}
				if withEndpoints {
					b := kmsg.NewProduceResponseBroker()
					b.NodeID, b.Host, b.Port = 2, "broker-2.kafka.svc", 9093
					r.Brokers = append(r.Brokers, b)
				}
				body := r.AppendTo(nil)

				// What kmsg makes of it at this version is the reference.
				back := kmsg.NewPtrProduceResponse()
				back.SetVersion(v)
				if err := back.ReadFrom(body); err != nil {
					t.Fatal(err)
				}
				want := len(back.Brokers) > 0
				got, err := produceHasNodeEndpoints(v, body)
				if err != nil || got != want {
					t.Errorf("v%d endpoints=%v busy=%v: got %v, %v; want %v", v, withEndpoints, busy, got, err, want)
				}
				for cut := 1; cut < len(body); cut += 7 {
					if _, err := produceHasNodeEndpoints(v, body[:cut]); err == nil {
						t.Errorf("v%d: a body cut at %d of %d scanned without error", v, cut, len(body))
						break
					}
				}
			}
		}
	}
}

func FuzzProduceHasNodeEndpoints(f *testing.F) {
	r := kmsg.NewPtrProduceResponse()
	r.SetVersion(11)
	r.Topics = append(r.Topics, kmsg.NewProduceResponseTopic())
	f.Add(int16(11), r.AppendTo(nil))
	f.Fuzz(func(t *testing.T, version int16, body []byte) {
		_, _ = produceHasNodeEndpoints(version, body)
	})
}
