package validation

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// ordersRequest is a Produce request of raw to partition 0 of orders.
func ordersRequest(raw []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "orders"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	return req
}

// TestJSONArrayBomb: one zstd-compressed record holding a 60 MiB JSON array (a few KB on the
// wire) is refused as too large once decompressed, within the request's share of memory, and
// never forwarded as valid.
func TestJSONArrayBomb(t *testing.T) {
	value := append(append([]byte{'['}, bytes.Repeat([]byte("0,"), 30<<20)...), '0', ']')
	b := &records.Batch{Header: kmsg.RecordBatch{Magic: 2, Attributes: int16(records.CodecZstd)}, Records: []kmsg.Record{{Value: value}}}
	raw, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	req := ordersRequest(raw)
	lim := filter.DefaultLimits()
	x := &filter.Exchange{Request: req, Allowance: filter.NewAllowance(context.Background(), lim, len(raw))}
	v, err := build([]byte(ordersNeedID), nil)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := v.OnRequest(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	resp, ok := x.Answered().(*kmsg.ProduceResponse)
	if !ok {
		t.Fatalf("%d compressed bytes of a 60 MiB array were forwarded", len(raw))
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.MessageTooLarge.Code {
		t.Errorf("error %d, want MESSAGE_TOO_LARGE", code)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("refusing it allocated %d MiB", alloc>>20)
	}
}

// TestRefusalIsBounded: a Produce of many invalid records, each failing a schema with a long
// message, is answered with at most maxErrorRecords error records of at most maxErrorMessage
// bytes each, and a count of the rest.
func TestRefusalIsBounded(t *testing.T) {
	long := `[` + strings.Repeat(`"x",`, 300) + `"x"]`
	b := &records.Batch{Header: kmsg.RecordBatch{Magic: 2}}
	for i := range 150 {
		b.Records = append(b.Records, kmsg.Record{OffsetDelta: int32(i), Value: []byte(long)})
	}
	raw, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	v, err := build([]byte(`{"rules":[{"topicNames":["orders"],"valueRule":{"jsonSchema":{"type":"array","items":{"type":"integer"}}}}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	req := ordersRequest(raw)
	x := &filter.Exchange{Request: req}
	if err := v.OnRequest(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	p := x.Answered().(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if len(p.ErrorRecords) != maxErrorRecords || !strings.Contains(*p.ErrorMessage, "(and 149 more)") {
		t.Errorf("%d error records, message %.200q", len(p.ErrorRecords), *p.ErrorMessage)
	}
	for _, er := range p.ErrorRecords {
		if len(*er.ErrorMessage) > maxErrorMessage+len("…") {
			t.Fatalf("an error record's message of %d bytes", len(*er.ErrorMessage))
		}
	}
}
