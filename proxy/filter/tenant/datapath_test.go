package tenant

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/kafka"
)

func responseFrame(resp kmsg.Response, corr int32) []byte {
	b := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(b[4:], uint32(corr))
	if resp.IsFlexible() {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// TestDataPathByID: once the chain has learned topic ids, a Produce v13 and a Fetch v13+ naming
// only the tenant's topics are forwarded as the client sent them and their responses are not
// decoded; a Produce naming another tenant's topic is answered UNKNOWN_TOPIC_ID; a Fetch naming
// one is filtered, and that topic's records are dropped.
func TestDataPathByID(t *testing.T) {
	c, err := filter.NewChain(context.Background(), "a", []config.Filter{{Name: "t", Type: MultiTenantType, Config: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	conn := c.ForConnection()
	ours, theirs := [16]byte{1}, [16]byte{2}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	_, _, state, err := conn.Request(frame(md))
	if err != nil {
		t.Fatal(err)
	}
	mdr := kmsg.NewPtrMetadataResponse()
	mdr.Version = 12
	for id, name := range map[[16]byte]string{ours: "a-orders", theirs: "b-orders"} {
		mdr.Topics = append(mdr.Topics, kmsg.MetadataResponseTopic{Topic: kmsg.StringPtr(name), TopicID: id})
	}
	if _, err := conn.Response(3, 12, responseFrame(mdr, 9), state); err != nil {
		t.Fatal(err)
	}

	produce := func(id [16]byte) []byte {
		p := kmsg.NewPtrProduceRequest()
		p.Version, p.Acks = 13, -1
		p.Topics = []kmsg.ProduceRequestTopic{{TopicID: id, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0}}}}
		return frame(p)
	}
	in := produce(ours)
	fwd, answer, state, err := conn.Request(in)
	if err != nil || answer != nil || &fwd[0] != &in[0] || state != kafka.ResponseUnfiltered {
		t.Errorf("a Produce to its own topic: err %v, answered %v, forwarded as sent %v, response unfiltered %v", err, answer != nil, &fwd[0] == &in[0], state == kafka.ResponseUnfiltered)
	}
	txn := kmsg.NewPtrProduceRequest()
	txn.Version, txn.Acks, txn.TransactionID = 13, -1, kmsg.StringPtr("tx")
	txn.Topics = []kmsg.ProduceRequestTopic{{TopicID: ours, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0}}}}
	in = frame(txn)
	fwd, _, state, err = conn.Request(in)
	if err != nil || &fwd[0] == &in[0] || state != kafka.ResponseUnfiltered || !bytes.Contains(fwd, []byte("a-tx")) {
		t.Errorf("a transactional Produce: err %v, re-encoded %v with a-tx %v, response unfiltered %v", err, &fwd[0] != &in[0], bytes.Contains(fwd, []byte("a-tx")), state == kafka.ResponseUnfiltered)
	}
	_, answer, _, err = conn.Request(produce(theirs))
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 13
	if err != nil || answer == nil || resp.ReadFrom(answer[9:]) != nil || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("a Produce to b's topic: %v, answer %x", err, answer)
	}

	fetch := func(ids ...[16]byte) []byte {
		f := kmsg.NewPtrFetchRequest()
		f.Version = 13
		for _, id := range ids {
			f.Topics = append(f.Topics, kmsg.FetchRequestTopic{TopicID: id, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0}}})
		}
		return frame(f)
	}
	in = fetch(ours)
	if fwd, _, state, err := conn.Request(in); err != nil || &fwd[0] != &in[0] || state != kafka.ResponseUnfiltered {
		t.Errorf("a Fetch of its own topic: %v, response unfiltered %v", err, state == kafka.ResponseUnfiltered)
	}
	_, _, state, err = conn.Request(fetch(ours, theirs))
	if err != nil || state == kafka.ResponseUnfiltered {
		t.Fatalf("a Fetch naming b's topic: %v, response unfiltered %v", err, state == kafka.ResponseUnfiltered)
	}
	fr := kmsg.NewPtrFetchResponse()
	fr.Version = 13
	for _, id := range [][16]byte{ours, theirs} {
		fr.Topics = append(fr.Topics, kmsg.FetchResponseTopic{TopicID: id, Partitions: []kmsg.FetchResponseTopicPartition{{RecordBatches: []byte("batch")}}})
	}
	out, err := conn.Response(1, 13, responseFrame(fr, 9), state)
	if err != nil {
		t.Fatal(err)
	}
	got := kmsg.NewPtrFetchResponse()
	got.Version = 13
	if err := got.ReadFrom(out[9:]); err != nil {
		t.Fatal(err)
	}
	if string(got.Topics[0].Partitions[0].RecordBatches) != "batch" || got.Topics[1].Partitions[0].RecordBatches != nil || got.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("fetched %+v, want a's records and none of b's", got.Topics)
	}
}

// TestClusterIDBackToTheBroker: the cluster id a tenant was shown goes back to the broker as
// the broker's in ApiVersions v5; one the filter never showed is left out.
func TestClusterIDBackToTheBroker(t *testing.T) {
	f, err := filter.New(MultiTenantType, []byte(`{}`), filter.Env{VirtualCluster: "a"})
	if err != nil {
		t.Fatal(err)
	}
	m := f.(*multiTenant)
	md := &kmsg.MetadataResponse{Version: 12, ClusterID: kmsg.StringPtr("upstream")}
	if err := m.OnResponse(context.Background(), &filter.Exchange{Key: 3, Response: md}); err != nil {
		t.Fatal(err)
	}
	shown := *md.ClusterID
	for id, want := range map[string]*string{shown: kmsg.StringPtr("upstream"), "never-shown": nil} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClusterID = 5, kmsg.StringPtr(id)
		if err := m.OnRequest(context.Background(), &filter.Exchange{Key: 18, Version: 5, Request: req}); err != nil {
			t.Fatal(err)
		}
		if (want == nil) != (req.ClusterID == nil) || want != nil && *req.ClusterID != *want {
			t.Errorf("ApiVersions naming %q went on naming %v, want %v", id, req.ClusterID, want)
		}
	}
}

// TestRefusedKeysCloseTheConnection: a key MultiTenant refuses, and a key kmsg does not know
// (which the broker might, and would get unrewritten), end the connection instead of being
// forwarded; a key it passes is not even decoded.
func TestRefusedKeysCloseTheConnection(t *testing.T) {
	c, err := filter.NewChain(context.Background(), "a", []config.Filter{{Name: "t", Type: MultiTenantType, Config: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	conn := c.ForConnection()
	acl := kmsg.NewPtrCreateACLsRequest()
	acl.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders"}}
	if fwd, _, _, err := conn.Request(frame(acl)); err == nil || !strings.Contains(err.Error(), "MultiTenant refuses CreateACLs") {
		t.Errorf("CreateACLs: forwarded %d bytes, %v", len(fwd), err)
	}
	for _, key := range []int16{200, 1000} {
		if !c.Wants(key) {
			t.Errorf("key %d is not taken by the chain: it would reach the broker unrewritten", key)
		}
		if fwd, _, _, err := conn.Request(requestFrame(key, 0, []byte{0, 0})); err == nil {
			t.Errorf("key %d: forwarded %d bytes", key, len(fwd))
		}
	}
	if c.Wants(kmsg.SASLAuthenticate.Int16()) {
		t.Error("SaslAuthenticate, which names nothing, is decoded")
	}
}
