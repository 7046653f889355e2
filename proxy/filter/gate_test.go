package filter_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// door is a test gate: while closed it answers Produce with SASL_AUTHENTICATION_FAILED; it
// wants only SaslHandshake itself.
type door struct{ closed bool }

func (d *door) Keys() []int16                                      { return []int16{kmsg.SASLHandshake.Int16()} }
func (d *door) OnRequest(context.Context, *filter.Exchange) error  { return nil }
func (d *door) OnResponse(context.Context, *filter.Exchange) error { return nil }
func (d *door) Gates() bool                                        { return d.closed }
func (d *door) Gate(_ context.Context, x *filter.Exchange) error {
	if _, ok := x.Request.(*kmsg.ProduceRequest); ok {
		resp := kmsg.NewPtrProduceResponse()
		rt := kmsg.NewProduceResponseTopic()
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		x.Answer(resp)
	}
	return nil
}

// doors are the door filters built, by name of their chain's virtual cluster.
var doors sync.Map

func init() {
	filter.RegisterTyped(func(cfg *struct{ Closed bool }, env filter.Env) (filter.Filter, error) {
		d := &door{closed: cfg.Closed}
		doors.Store(env.VirtualCluster, d)
		return d, nil
	}, "test.Door")
}

func doorConn(t *testing.T, closed bool) (*filter.Conn, *door) {
	t.Helper()
	cfg := `{"Closed":` + strconv.FormatBool(closed) + `}`
	c, err := filter.NewChain(context.Background(), t.Name(), []config.Filter{{Name: "d", Type: "test.Door", Config: json.RawMessage(cfg)}})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := doors.Load(t.Name())
	return c.ForConnection(), d.(*door)
}

// TestGateSeesEveryKeyWhileClosed: a closed gate makes the connection want every key and answers
// a Produce no filter wants; once opened, Produce is no longer wanted, and when closed again it
// is refused again.
func TestGateSeesEveryKeyWhileClosed(t *testing.T) {
	conn, d := doorConn(t, true)
	produce := kmsg.Produce.Int16()
	if !conn.Wants(produce) || conn.GateOpen(d) {
		t.Fatal("a closed gate does not make the connection want Produce")
	}
	frame := produceFrame(9, "t", []byte("x"))
	_, answer, _, err := conn.Request(frame)
	if err != nil || answer == nil || answerCode(t, 9, answer) != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("closed gate: answer %x, err %v", answer, err)
	}
	conn.OpenGate(d)
	conn.OpenGate(d) // twice is once
	if conn.Wants(produce) || !conn.GateOpen(d) {
		t.Fatal("an open gate still makes the connection want Produce")
	}
	conn.CloseGate(d)
	if !conn.Wants(produce) {
		t.Fatal("a gate closed again does not make the connection want Produce")
	}
}

// TestGatePassesWhatItLetsThrough: a request the gate lets pass and no filter wants is forwarded
// as it came, with no state (its response is not decoded).
func TestGatePassesWhatItLetsThrough(t *testing.T) {
	conn, _ := doorConn(t, true)
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(4)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, 3)
	fwd, answer, state, err := conn.Request(frame)
	if err != nil || answer != nil || state != nil || string(fwd) != string(frame) {
		t.Fatalf("forward %x answer %x state %v err %v", fwd, answer, state, err)
	}
}

// TestGateNotNeeded: a gate whose configuration does not need it leaves the connection's keys
// as the chain wants them.
func TestGateNotNeeded(t *testing.T) {
	conn, d := doorConn(t, false)
	if conn.Wants(kmsg.Produce.Int16()) || !conn.GateOpen(d) {
		t.Fatal("a gate that is not needed makes the connection want Produce")
	}
}

// TestGateClosedLater: a gate that starts open may be closed for one connection, and then sees
// its requests.
func TestGateClosedLater(t *testing.T) {
	conn, d := doorConn(t, false)
	conn.CloseGate(d)
	if !conn.Wants(kmsg.Produce.Int16()) || conn.GateOpen(d) {
		t.Fatal("a gate closed after the start does not make the connection want Produce")
	}
	_, answer, _, err := conn.Request(produceFrame(9, "t", []byte("x")))
	if err != nil || answer == nil {
		t.Fatalf("answer %x, err %v", answer, err)
	}
	if other := conn.ForConnection(); other.Wants(kmsg.Produce.Int16()) {
		t.Fatal("closing one connection's gate closed another's")
	}
}
