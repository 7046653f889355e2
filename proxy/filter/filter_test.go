package filter_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// grow is a test filter that adds n bytes to every Produce partition's records, and keeps
// what it saw of the request on the response side.
type grow struct{ n int }

func (g *grow) Keys() []int16 { return []int16{0, 1} }
func (g *grow) OnRequest(_ context.Context, x *filter.Exchange) error {
	if req, ok := x.Request.(*kmsg.ProduceRequest); ok {
		for i := range req.Topics {
			for j := range req.Topics[i].Partitions {
				p := &req.Topics[i].Partitions[j]
				p.Records = append(p.Records, make([]byte, g.n)...)
			}
		}
	}
	return nil
}

func (g *grow) OnResponse(_ context.Context, x *filter.Exchange) error {
	if req, ok := x.Request.(*kmsg.ProduceRequest); ok && len(req.Topics) > 0 {
		return errors.New("the decoded request was kept for the response")
	}
	return nil
}

func init() {
	filter.RegisterTyped(func(cfg *struct{ N int }, _ filter.Env) (filter.Filter, error) {
		return &grow{n: cfg.N}, nil
	}, "test.Grow")
}

func chain(t *testing.T, n int, maxFrame int) *filter.Chain {
	t.Helper()
	c, err := filter.NewChain(context.Background(), "a", []config.Filter{{Name: "g", Type: "test.Grow", Config: json.RawMessage(`{"N":` + itoa(n) + `}`)}})
	if err != nil {
		t.Fatal(err)
	}
	lim := filter.DefaultLimits()
	lim.MaxFrame = maxFrame
	return c.WithLimits(lim)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func produceFrame(version int16, topic string, records []byte) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks = -1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rt.TopicID = [16]byte{1}
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, 7)
}

// answerCode decodes an answer frame to a Produce and returns its first partition's error.
func answerCode(t *testing.T, version int16, frame []byte) int16 {
	t.Helper()
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(version)
	body := frame[8:]
	if resp.IsFlexible() {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestCorruptTaggedCountRefused: the 25-byte ApiVersions v3 whose tag section announces 2^32-1
// fields (kmsg would loop some 2^32 times) is refused by the pre-scan, not decoded.
func TestCorruptTaggedCountRefused(t *testing.T) {
	frame, _ := hex.DecodeString("0000001500120003000000010001780002610231ffffffff0f")
	if _, _, _, err := chain(t, 0, 1<<20).Request(frame); err == nil {
		t.Fatal("the frame was accepted")
	}
}

// TestReencodedFrameOverLimit: a Produce that the filters make larger than
// maxFilteredFrameBytes is answered with MESSAGE_TOO_LARGE, not forwarded.
func TestReencodedFrameOverLimit(t *testing.T) {
	c := chain(t, 4096, 2048)
	fwd, answer, _, err := c.Request(produceFrame(9, "t", []byte("x")))
	if err != nil || fwd != nil {
		t.Fatalf("forwarded %d bytes, err %v", len(fwd), err)
	}
	if code := answerCode(t, 9, answer); code != kerr.MessageTooLarge.Code {
		t.Errorf("error %d, want MESSAGE_TOO_LARGE", code)
	}
	// Within the limit it is forwarded, and the response side does not see the decoded request.
	fwd, _, state, err := chain(t, 16, 2048).Request(produceFrame(9, "t", []byte("x")))
	if err != nil || fwd == nil {
		t.Fatalf("forwarded %d bytes, err %v", len(fwd), err)
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(9)
	frame := append([]byte{0, 0, 0, 0, 0, 0, 0, 7, 0}, resp.AppendTo(nil)...)
	if _, err := chain(t, 16, 2048).Response(kmsg.Produce.Int16(), 9, frame, state); err != nil {
		t.Error(err)
	}
}

// TestFetchSizesCapped: a Fetch asks the broker for no more than the filters take.
func TestFetchSizesCapped(t *testing.T) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxBytes = 50 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 50 << 20
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, 1)
	fwd, _, _, err := chain(t, 0, 1<<20).Request(frame)
	if err != nil {
		t.Fatal(err)
	}
	got := kmsg.NewPtrFetchRequest()
	got.SetVersion(12)
	if err := got.ReadFrom(fwd[4+2+2+4+2+1+1:]); err != nil {
		t.Fatal(err)
	}
	if got.MaxBytes > 1<<20 || got.Topics[0].Partitions[0].PartitionMaxBytes > 1<<20 {
		t.Errorf("max bytes %d, partition max bytes %d: over the filters' 1 MiB", got.MaxBytes, got.Topics[0].Partitions[0].PartitionMaxBytes)
	}
}

// TestAllowance: a request's share is Ratio times its size (at least the floor, at most
// MaxShare), and all requests together take at most the budget: one that cannot get room in
// time fails with ErrBusy, and gets it once another gives its share back; one request holds at
// most a quarter of the budget.
func TestAllowance(t *testing.T) {
	lim := filter.Limits{MaxFrame: 1 << 20, MaxShare: 100 << 20, MaxBatch: 8 << 20, Ratio: 64, Budget: filter.NewBudget(8 << 20)}
	for size, want := range map[int]int{1000: config.DecompressionFloor, 1 << 20: 64 << 20, 1 << 30: 100 << 20} {
		if got := filter.NewAllowance(context.Background(), lim, size).Left(); got != want {
			t.Errorf("a frame of %d bytes: share %d, want %d", size, got, want)
		}
	}
	a := filter.NewAllowance(context.Background(), lim, 1<<20)
	if err := a.Take(65 << 20); !errors.Is(err, records.ErrShareSpent) {
		t.Errorf("over the share: %v, want ErrShareSpent", err)
	}
	if err := a.Reserve(3 << 20); !errors.Is(err, records.ErrTooLarge) {
		t.Errorf("over a quarter of the budget at once: %v, want ErrTooLarge", err)
	}
	if err := a.Take(2 << 20); err != nil {
		t.Fatal(err)
	}
	if err := a.Reserve(1); !errors.Is(err, records.ErrShareSpent) {
		t.Errorf("one request over a quarter of the budget in all: %v, want ErrShareSpent", err)
	}
	// Three more requests of a quarter each fill the budget.
	for range 2 {
		if err := filter.NewAllowance(context.Background(), lim, 1<<20).Take(2 << 20); err != nil {
			t.Fatal(err)
		}
	}
	if err := filter.NewAllowance(context.Background(), lim, 1<<20).Reserve(2 << 20); err != nil {
		t.Fatal(err)
	}
	b := filter.NewAllowance(context.Background(), lim, 1<<20)
	if err := b.Take(2 << 20); !errors.Is(err, filter.ErrBusy) {
		t.Errorf("over the budget: %v, want ErrBusy", err)
	}
	a.Give(2 << 20)
	if err := b.Take(2 << 20); err != nil {
		t.Errorf("after the other gave back: %v", err)
	}
}

// TestDecodedValuesCharged: a request of many tiny elements (a Produce of 100,000 topics of one
// empty partition, 9 bytes each on the wire, 104 once decoded) takes the decoded size from the
// budget before kmsg decodes it, and is refused when that does not fit.
func TestDecodedValuesCharged(t *testing.T) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	for range 100_000 {
		rt := kmsg.NewProduceRequestTopic()
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{kmsg.NewProduceRequestTopicPartition()}
		req.Topics = append(req.Topics, rt)
	}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, 7)
	c, err := filter.NewChain(context.Background(), "a", []config.Filter{{Name: "g", Type: "test.Grow", Config: json.RawMessage(`{"N":0}`)}})
	if err != nil {
		t.Fatal(err)
	}
	lim := filter.DefaultLimits()
	if _, _, _, err := c.WithLimits(lim).Request(frame); err != nil {
		t.Errorf("within the budget: %v", err)
	}
	lim.Budget = filter.NewBudget(64 << 20) // a quarter, 16 MiB, under the 200,000 values' 25 MiB
	if _, _, _, err := c.WithLimits(lim).Request(frame); err == nil {
		t.Errorf("a %d-byte frame of 200,000 values was decoded with a budget of 64 MiB", len(frame))
	}
}

// TestScratchFitsWhatIsAsked: a scratch buffer comes from the frame pool only when its class is at
// most twice the size asked, so a request of a thousand tiny partitions does not hold a thousand
// 64 KiB buffers.
func TestScratchFitsWhatIsAsked(t *testing.T) {
	var x filter.Exchange
	for n, want := range map[int]int{100: 100, 20 << 10: 20 << 10, 40 << 10: 64 << 10, 200 << 10: 256 << 10, 5 << 20: 8 << 20, 9 << 20: 9 << 20} {
		if got := cap(x.Scratch(n)); got != want {
			t.Errorf("Scratch(%d): capacity %d, want %d", n, got, want)
		}
	}
}
