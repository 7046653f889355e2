package validation

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// produceFrame is a Produce request frame of one record per topic, as a client writes it.
func produceFrame(t *testing.T, version int16, values map[string]string) []byte {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks = -1
	req.TimeoutMillis = 1000
	for topic, v := range values {
		b := &records.Batch{Header: kmsg.RecordBatch{Magic: 2}, Records: []kmsg.Record{{Value: []byte(v)}}}
		raw, err := b.Encode()
		if err != nil {
			t.Fatal(err)
		}
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = raw
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
		req.Topics = append(req.Topics, rt)
	}
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, 7)
}

func chain(t *testing.T, cfg string) *filter.Chain {
	t.Helper()
	c, err := filter.NewChain(context.Background(), "a", []config.Filter{{Name: "v", Type: Type, Config: []byte(cfg)}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const ordersNeedID = `{"rules":[{"topicNames":["orders"],"valueRule":{"syntacticallyCorrectJson":{},"jsonSchema":{"type":"object","required":["id"]}}}]}`

func TestValidationAnswersABadRequest(t *testing.T) {
	c := chain(t, ordersNeedID)
	for _, v := range []int16{3, 9, 12} {
		forward, answer, _, err := c.Request(produceFrame(t, v, map[string]string{"orders": "not json"}))
		if err != nil || forward != nil || answer == nil {
			t.Fatalf("v%d: forward %d bytes, answer %d bytes, %v", v, len(forward), len(answer), err)
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(v)
		body := answer[8:]
		if resp.IsFlexible() {
			body = body[1:]
		}
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("v%d: the answer does not decode: %v", v, err)
		}
		if int32(binary.BigEndian.Uint32(answer[4:])) != 7 {
			t.Fatalf("v%d: correlation id", v)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.InvalidRecord.Code || (v >= 8 && (p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "record 0 of orders-0: value: not valid JSON"))) {
			t.Fatalf("v%d: partition %+v", v, p)
		}
	}
}

func TestValidationForwardsGoodAndUnruledTopics(t *testing.T) {
	c := chain(t, ordersNeedID)
	in := produceFrame(t, 9, map[string]string{"orders": `{"id":1}`, "other": "free text"})
	forward, answer, _, err := c.Request(in)
	if err != nil || answer != nil || len(forward) != len(in) {
		t.Fatalf("forward %d bytes of %d, answer %v, %v", len(forward), len(in), answer != nil, err)
	}
}

func TestValidationRefusesUnsupportedConfig(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"rules":[{"topicNames":["a"],"valueRule":{"schemaValidationConfig":{"apicurioId":1}}}]}`: "Apicurio",
		`{}`:           "no rules",
		`{"rulez":[]}`: "unknown field",
		`{"defaultRule":{"valueRule":{"jsonSchemaFile":"/nonexistent"}}}`: "jsonSchemaFile",
		`{"defaultRule":{"valueRule":{"jsonSchema":{"type":12}}}}`:        "does not compile",
	} {
		_, err := filter.NewChain(context.Background(), "a", []config.Filter{{Name: "v", Type: Type, Config: []byte(cfg)}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
		// The operator's check sees the same, with the files it is given (none here).
		err = filter.Check(Type, []byte(cfg), filter.Env{ReadFile: func(string) ([]byte, error) { return nil, os.ErrNotExist }})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check of %s: %v, want %q", cfg, err, want)
		}
	}
}

// chainRequestBound is far above what any frame a fuzzer makes needs (milliseconds), and far
// below what a decoding loop on a corrupt count takes (tens of seconds).
const chainRequestBound = 3 * time.Second

// withTaggedCount replaces a flexible frame's last byte (its top-level tag count, 0) with a
// 5-byte uvarint count of 2^32-1, the tail kmsg would loop on some 2^32 times.
func withTaggedCount(frame []byte) []byte {
	out := append(bytes.Clone(frame[:len(frame)-1]), 0xff, 0xff, 0xff, 0xff, 0x0f)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

func fetchFrame(version int16) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "orders", [16]byte{1}
	rt.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, 7)
}

// FuzzChainRequest: any request frame, well formed or not, goes through the chain (decoding,
// validation, re-encoding) without a panic and within a time bound (a frame that makes a
// decoder loop fails the run instead of hanging it); a frame it forwards decodes again. Seeded
// at the edges: the 25-byte ApiVersions v3 with a tagged-field count of 2^32-1, and the same
// count as the tail of Produce v9+ and Fetch v12+.
func FuzzChainRequest(f *testing.F) {
	tagged, _ := hex.DecodeString("0000001500120003000000010001780002610231ffffffff0f")
	f.Add(tagged)
	for _, v := range []int16{9, 12, 13} {
		f.Add(withTaggedCount(produceFrame(&testing.T{}, v, map[string]string{"orders": `{"id":1}`})))
	}
	for _, v := range []int16{12, 13, 16, 17} {
		f.Add(withTaggedCount(fetchFrame(v)))
	}
	f.Add(produceFrame(&testing.T{}, 9, map[string]string{"orders": "not json"}))
	f.Add(produceFrame(&testing.T{}, 12, map[string]string{"orders": `{"id":1}`, "other": "x"}))
	f.Add(produceFrame(&testing.T{}, 3, map[string]string{"orders": `{"id":1}`})[:30])
	huge := produceFrame(&testing.T{}, 9, map[string]string{"orders": "v"})
	binary.BigEndian.PutUint32(huge[len(huge)-40:], 0x7fffffff) // a huge length somewhere in the batch
	f.Add(huge)
	c, err := filter.NewChain(context.Background(), "a", []config.Filter{{Name: "v", Type: Type, Config: []byte(ordersNeedID)}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		done := make(chan error, 1)
		go func() {
			forward, _, _, err := c.Request(frame)
			if err == nil && forward != nil {
				if _, _, _, err := c.Request(forward); err != nil {
					done <- fmt.Errorf("a forwarded frame does not decode again: %w", err)
					return
				}
			}
			done <- nil
		}()
		timer := time.NewTimer(chainRequestBound)
		defer timer.Stop()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-timer.C:
			t.Fatalf("a %d-byte frame took over %s in the chain", len(frame), chainRequestBound)
		}
	})
}
