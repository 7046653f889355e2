package filter_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// seer is a test filter that records the topic names it is shown: of Produce requests, Fetch
// responses, and ShareFetch responses (by Exchange.TopicName). With Refuse, it refuses every
// Produce partition of the topic of that name.
type seer struct {
	mu     sync.Mutex
	seen   []string
	refuse string
}

func (s *seer) see(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, name)
}

func (s *seer) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

func (s *seer) Keys() []int16 {
	return []int16{kmsg.Produce.Int16(), kmsg.Fetch.Int16(), kmsg.ShareFetch.Int16()}
}

func (s *seer) OnRequest(_ context.Context, x *filter.Exchange) error {
	req, ok := x.Request.(*kmsg.ProduceRequest)
	if !ok {
		return nil
	}
	bad := filter.Refusals{}
	kept := req.Topics[:0]
	for _, t := range req.Topics {
		s.see(t.Topic)
		if t.Topic != s.refuse {
			kept = append(kept, t)
			continue
		}
		for _, p := range t.Partitions {
			bad.Refuse(t.Topic, p.Partition, kerr.PolicyViolation.Code, "refused by the test")
		}
	}
	req.Topics = kept
	switch {
	case len(kept) == 0:
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		bad.AddTo(resp)
		x.Answer(resp)
	case len(bad) > 0:
		x.Set(s, bad)
	}
	return nil
}

func (s *seer) OnResponse(_ context.Context, x *filter.Exchange) error {
	switch r := x.Response.(type) {
	case *kmsg.ProduceResponse:
		if bad, _ := x.Get(s).(filter.Refusals); len(bad) > 0 {
			bad.AddTo(r)
		}
	case *kmsg.FetchResponse:
		for _, t := range r.Topics {
			s.see(t.Topic)
		}
	case *kmsg.ShareFetchResponse:
		for _, t := range r.Topics {
			if name, ok := x.TopicName(t.TopicID); ok {
				s.see(name)
			}
		}
	}
	return nil
}

var (
	seersMu sync.Mutex
	seers   = map[string]*seer{}
)

func init() {
	filter.RegisterTyped(func(cfg *struct{ ID, Refuse string }, _ filter.Env) (filter.Filter, error) {
		seersMu.Lock()
		defer seersMu.Unlock()
		s := &seer{refuse: cfg.Refuse}
		seers[cfg.ID] = s
		return s, nil
	}, "test.Seer")
}

// seerChain is a chain of one test.Seer filter, and the filter.
func seerChain(t *testing.T, refuse string) (*filter.Chain, *seer) {
	t.Helper()
	raw, _ := json.Marshal(map[string]string{"ID": t.Name(), "Refuse": refuse})
	c, err := filter.NewChain(context.Background(), "a", []config.Filter{{Name: "seer", Type: "test.Seer", Config: raw}})
	if err != nil {
		t.Fatal(err)
	}
	seersMu.Lock()
	defer seersMu.Unlock()
	return c, seers[t.Name()]
}

var (
	ordersID  = [16]byte{0xa1, 1}
	paymentID = [16]byte{0xa2, 2}
	unknownID = [16]byte{0xee, 0xee}
)

// requestFrame frames a request as a client sends it.
func requestFrame(req kmsg.Request) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, 7)
}

// responseFrame frames a response as a broker sends it: size, correlation id, tags when flexible.
func responseFrame(resp kmsg.Response) []byte {
	b := []byte{0, 0, 0, 0, 0, 0, 0, 7}
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// readResponse decodes a response frame into resp, at resp's version.
func readResponse(t *testing.T, frame []byte, resp kmsg.Response) {
	t.Helper()
	body := frame[8:]
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
}

// readRequest decodes a forwarded request frame into req, at req's version.
func readRequest(t *testing.T, frame []byte, req kmsg.Request) {
	t.Helper()
	off := 14 + int(binary.BigEndian.Uint16(frame[12:]))
	if req.IsFlexible() {
		off++
	}
	if err := req.ReadFrom(frame[off:]); err != nil {
		t.Fatal(err)
	}
}

// metadataResponse names topics as a broker's Metadata v12 response does: id and name.
func metadataResponse(topics map[[16]byte]*string) kmsg.Response {
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(12)
	for id, name := range topics {
		t := kmsg.NewMetadataResponseTopic()
		t.TopicID, t.Topic = id, name
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// teach passes a Metadata v12 exchange naming topics through c, as a client's would, and checks
// that the chain forwards both frames as they are.
func teach(t *testing.T, c *filter.Chain, topics map[[16]byte]*string) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	frame := requestFrame(req)
	fwd, answer, state, err := c.Request(frame)
	if err != nil || answer != nil || !bytes.Equal(fwd, frame) || state != nil {
		t.Fatalf("the Metadata request: forwarded changed %v, answer %v, state %v, %v", !bytes.Equal(fwd, frame), answer, state, err)
	}
	rf := responseFrame(metadataResponse(topics))
	out, err := c.Response(kmsg.Metadata.Int16(), 12, rf, state)
	if err != nil || !bytes.Equal(out, rf) {
		t.Fatalf("the Metadata response: changed %v, %v", !bytes.Equal(out, rf), err)
	}
}

func str(s string) *string { return &s }

// produceByID is a Produce v13 of one partition of each topic id, with records marked by id.
func produceByID(ids ...[16]byte) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(13)
	req.Acks = -1
	for _, id := range ids {
		rt := kmsg.NewProduceRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = []byte{id[0], id[1]}
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
		req.Topics = append(req.Topics, rt)
	}
	return requestFrame(req)
}

// TestProduceByTopicID: a Produce v13 reaches the filters with the names the chain learned from
// Metadata, and is forwarded by id; one naming an id the chain has not learned is answered
// UNKNOWN_TOPIC_ID for every partition and nothing of it is forwarded, whatever else it names.
func TestProduceByTopicID(t *testing.T) {
	for name, tc := range map[string]struct {
		ids        [][16]byte
		wantSeen   []string
		wantAnswer bool
	}{
		"a Produce to learned ids is forwarded, its filters seeing names": {ids: [][16]byte{ordersID, paymentID}, wantSeen: []string{"orders", "payment"}},
		"a Produce to an id never learned is answered UNKNOWN_TOPIC_ID":   {ids: [][16]byte{unknownID}, wantAnswer: true},
		"a Produce to a learned and an unknown id is answered as a whole": {ids: [][16]byte{ordersID, unknownID}, wantAnswer: true},
		"a Produce to the zero id, as a v13 client with no id sends it":   {ids: [][16]byte{{}}, wantAnswer: true},
		"a Produce to an id whose metadata came without a name":           {ids: [][16]byte{{0xa3}}, wantAnswer: true},
	} {
		t.Run(name, func(t *testing.T) {
			c, s := seerChain(t, "")
			teach(t, c, map[[16]byte]*string{ordersID: str("orders"), paymentID: str("payment"), {0xa3}: nil, {}: str("zero")})
			fwd, answer, _, err := c.Request(produceByID(tc.ids...))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.wantAnswer {
				got := kmsg.NewPtrProduceRequest()
				got.SetVersion(13)
				readRequest(t, fwd, got)
				for i, rt := range got.Topics {
					if rt.TopicID != tc.ids[i] || !bytes.Equal(rt.Partitions[0].Records, []byte{tc.ids[i][0], tc.ids[i][1]}) {
						t.Errorf("forwarded topic %d: id %x, records %x", i, rt.TopicID, rt.Partitions[0].Records)
					}
				}
				if !slices.Equal(s.names(), tc.wantSeen) {
					t.Errorf("the filter saw %q, want %q", s.names(), tc.wantSeen)
				}
				return
			}
			if fwd != nil || answer == nil || len(s.names()) != 0 {
				t.Fatalf("forwarded %d bytes, answer %d bytes, the filter saw %q", len(fwd), len(answer), s.names())
			}
			resp := kmsg.NewPtrProduceResponse()
			resp.SetVersion(13)
			readResponse(t, answer, resp)
			if len(resp.Topics) != len(tc.ids) {
				t.Fatalf("%d topics answered, want %d", len(resp.Topics), len(tc.ids))
			}
			for i, rt := range resp.Topics {
				if rt.TopicID != tc.ids[i] || rt.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
					t.Errorf("answered topic %x: error %d, want UNKNOWN_TOPIC_ID for %x", rt.TopicID, rt.Partitions[0].ErrorCode, tc.ids[i])
				}
			}
		})
	}
}

// TestProduceV12KeepsItsNames: below v13 a Produce names its topics, and nothing is learned or
// answered for them.
func TestProduceV12KeepsItsNames(t *testing.T) {
	c, s := seerChain(t, "")
	fwd, answer, _, err := c.Request(produceFrame(12, "orders", []byte("r")))
	if err != nil || fwd == nil || answer != nil {
		t.Fatalf("forwarded %d bytes, answer %d bytes, %v", len(fwd), len(answer), err)
	}
	if !slices.Equal(s.names(), []string{"orders"}) {
		t.Errorf("the filter saw %q", s.names())
	}
}

// TestRefusalsByIDCarryTheID: partitions a filter refuses by name in a Produce v13, whether it
// answers the request itself or adds them to the broker's response, go back to the client
// under the topic id it named them by: at v13 a name is not on the wire.
func TestRefusalsByIDCarryTheID(t *testing.T) {
	c, _ := seerChain(t, "payment")
	teach(t, c, map[[16]byte]*string{ordersID: str("orders"), paymentID: str("payment")})
	_, answer, _, err := c.Request(produceByID(paymentID))
	if err != nil || answer == nil {
		t.Fatalf("answer %d bytes, %v", len(answer), err)
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(13)
	readResponse(t, answer, resp)
	if len(resp.Topics) != 1 || resp.Topics[0].TopicID != paymentID || resp.Topics[0].Partitions[0].ErrorCode != kerr.PolicyViolation.Code {
		t.Errorf("the filter's answer: %+v", resp.Topics)
	}

	fwd, _, state, err := c.Request(produceByID(ordersID, paymentID))
	if err != nil || fwd == nil {
		t.Fatalf("forwarded %d bytes, %v", len(fwd), err)
	}
	broker := kmsg.NewPtrProduceResponse()
	broker.SetVersion(13)
	bt := kmsg.NewProduceResponseTopic()
	bt.TopicID = ordersID
	bt.Partitions = []kmsg.ProduceResponseTopicPartition{kmsg.NewProduceResponseTopicPartition()}
	broker.Topics = []kmsg.ProduceResponseTopic{bt}
	out, err := c.Response(kmsg.Produce.Int16(), 13, responseFrame(broker), state)
	if err != nil {
		t.Fatal(err)
	}
	got := kmsg.NewPtrProduceResponse()
	got.SetVersion(13)
	readResponse(t, out, got)
	codes := map[[16]byte]int16{}
	for _, rt := range got.Topics {
		for _, rp := range rt.Partitions {
			codes[rt.TopicID] = rp.ErrorCode
		}
	}
	if len(codes) != 2 || codes[ordersID] != 0 || codes[paymentID] != kerr.PolicyViolation.Code {
		t.Errorf("the response's partitions by topic id: %v, want orders written and payment refused", codes)
	}
}

// fetchResponse is a Fetch response at version of one partition per topic id, with records.
func fetchResponse(version int16, ids ...[16]byte) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(version)
	for _, id := range ids {
		rt := kmsg.NewFetchResponseTopic()
		rt.TopicID = id
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.RecordBatches = []byte("ciphertext")
		rt.Partitions = []kmsg.FetchResponseTopicPartition{rp}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// TestFetchByTopicID: a Fetch v13+ response reaches the filters with the names of the ids the
// chain learned; a partition of an id it has not learned goes out with UNKNOWN_TOPIC_ID and no
// records (the filters could not have read them), or with the broker's own error if it had one.
func TestFetchByTopicID(t *testing.T) {
	for name, tc := range map[string]struct {
		version    int16
		brokerCode int16
		wantCode   int16
		wantSeen   []string
	}{
		"a Fetch v13 response is named for the filters":                      {version: 13, wantCode: kerr.UnknownTopicID.Code, wantSeen: []string{"orders", ""}},
		"a Fetch v18 response is named for the filters":                      {version: 18, wantCode: kerr.UnknownTopicID.Code, wantSeen: []string{"orders", ""}},
		"a partition of an unknown id keeps the broker's own error":          {version: 17, brokerCode: kerr.NotLeaderForPartition.Code, wantCode: kerr.NotLeaderForPartition.Code, wantSeen: []string{"orders", ""}},
		"a Fetch v12 response names its topics itself, and nothing is taken": {version: 12, wantCode: 0, wantSeen: []string{"", ""}},
	} {
		t.Run(name, func(t *testing.T) {
			c, s := seerChain(t, "")
			teach(t, c, map[[16]byte]*string{ordersID: str("orders")})
			req := kmsg.NewPtrFetchRequest()
			req.SetVersion(tc.version)
			_, _, state, err := c.Request(requestFrame(req))
			if err != nil {
				t.Fatal(err)
			}
			resp := fetchResponse(tc.version, ordersID, unknownID)
			resp.Topics[1].Partitions[0].ErrorCode = tc.brokerCode
			out, err := c.Response(kmsg.Fetch.Int16(), tc.version, responseFrame(resp), state)
			if err != nil {
				t.Fatal(err)
			}
			got := kmsg.NewPtrFetchResponse()
			got.SetVersion(tc.version)
			readResponse(t, out, got)
			known, unknown := got.Topics[0].Partitions[0], got.Topics[1].Partitions[0]
			if known.ErrorCode != 0 || string(known.RecordBatches) != "ciphertext" {
				t.Errorf("the learned id's partition: error %d, records %q", known.ErrorCode, known.RecordBatches)
			}
			wantRecords := "ciphertext"
			if tc.version >= 13 {
				wantRecords = ""
			}
			if unknown.ErrorCode != tc.wantCode || string(unknown.RecordBatches) != wantRecords {
				t.Errorf("the unknown id's partition: error %d, records %q; want error %d, records %q", unknown.ErrorCode, unknown.RecordBatches, tc.wantCode, wantRecords)
			}
			if !slices.Equal(s.names(), tc.wantSeen) {
				t.Errorf("the filter saw %q, want %q", s.names(), tc.wantSeen)
			}
		})
	}
}

// TestShareFetchByTopicID: a ShareFetch response's topics reach the filters named
// (Exchange.TopicName); a partition of an id the chain has not learned loses its records and
// its acquired ranges (a consumer could acknowledge ranges without records as gaps) and gets
// UNKNOWN_TOPIC_ID. The request's sizes are lowered as a Fetch's are.
func TestShareFetchByTopicID(t *testing.T) {
	c, s := seerChain(t, "")
	teach(t, c, map[[16]byte]*string{ordersID: str("orders")})
	req := kmsg.NewPtrShareFetchRequest()
	req.SetVersion(1)
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = ordersID
	rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{kmsg.NewShareFetchRequestTopicPartition()}
	req.Topics = []kmsg.ShareFetchRequestTopic{rt}
	fwd, _, state, err := c.Request(requestFrame(req))
	if err != nil {
		t.Fatal(err)
	}
	sent := kmsg.NewPtrShareFetchRequest()
	sent.SetVersion(1)
	readRequest(t, fwd, sent)
	if sent.MaxBytes > 16<<20 {
		t.Errorf("the ShareFetch asks for %d bytes, over the filters' frame", sent.MaxBytes)
	}
	resp := kmsg.NewPtrShareFetchResponse()
	resp.SetVersion(1)
	for _, id := range [][16]byte{ordersID, unknownID} {
		st := kmsg.NewShareFetchResponseTopic()
		st.TopicID = id
		sp := kmsg.NewShareFetchResponseTopicPartition()
		sp.Records = []byte("ciphertext")
		sp.AcquiredRecords = []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 0, LastOffset: 9, DeliveryCount: 1}}
		st.Partitions = []kmsg.ShareFetchResponseTopicPartition{sp}
		resp.Topics = append(resp.Topics, st)
	}
	out, err := c.Response(kmsg.ShareFetch.Int16(), 1, responseFrame(resp), state)
	if err != nil {
		t.Fatal(err)
	}
	got := kmsg.NewPtrShareFetchResponse()
	got.SetVersion(1)
	readResponse(t, out, got)
	known, unknown := got.Topics[0].Partitions[0], got.Topics[1].Partitions[0]
	if known.ErrorCode != 0 || string(known.Records) != "ciphertext" || len(known.AcquiredRecords) != 1 {
		t.Errorf("the learned id's partition: error %d, records %q, %d acquired ranges", known.ErrorCode, known.Records, len(known.AcquiredRecords))
	}
	if unknown.ErrorCode != kerr.UnknownTopicID.Code || len(unknown.Records) != 0 || len(unknown.AcquiredRecords) != 0 {
		t.Errorf("the unknown id's partition: error %d, records %q, %d acquired ranges", unknown.ErrorCode, unknown.Records, len(unknown.AcquiredRecords))
	}
	if !slices.Equal(s.names(), []string{"orders"}) {
		t.Errorf("the filter saw %q, want only orders", s.names())
	}
}

// TestMetadataWithoutIDsTeachesNothing: Metadata below v10 carries no topic ids, and
// DescribeTopicPartitions (which does) teaches them too.
func TestMetadataWithoutIDsTeachesNothing(t *testing.T) {
	c, _ := seerChain(t, "")
	old := kmsg.NewPtrMetadataResponse()
	old.SetVersion(9)
	ot := kmsg.NewMetadataResponseTopic()
	ot.Topic, ot.TopicID = str("orders"), ordersID // not on the wire at v9
	old.Topics = []kmsg.MetadataResponseTopic{ot}
	if _, err := c.Response(kmsg.Metadata.Int16(), 9, responseFrame(old), nil); err != nil {
		t.Fatal(err)
	}
	if _, answer, _, _ := c.Request(produceByID(ordersID)); answer == nil {
		t.Error("an id was learned from Metadata v9")
	}
	dtp := kmsg.NewPtrDescribeTopicPartitionsResponse()
	dt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	dt.Topic, dt.TopicID = str("orders"), ordersID
	dtp.Topics = []kmsg.DescribeTopicPartitionsResponseTopic{dt}
	if _, err := c.Response(kmsg.DescribeTopicPartitions.Int16(), 0, responseFrame(dtp), nil); err != nil {
		t.Fatal(err)
	}
	if fwd, answer, _, err := c.Request(produceByID(ordersID)); fwd == nil || answer != nil || err != nil {
		t.Errorf("after DescribeTopicPartitions named the id: forwarded %d bytes, answer %d bytes, %v", len(fwd), len(answer), err)
	}
}

// TestChainWantsWhatNamesIDs: a chain with filters reads Metadata and DescribeTopicPartitions
// responses and offers the Produce and Fetch versions that carry ids, up to what kmsg decodes.
func TestChainWantsWhatNamesIDs(t *testing.T) {
	c, _ := seerChain(t, "")
	for _, k := range []kmsg.Key{kmsg.Metadata, kmsg.DescribeTopicPartitions, kmsg.ShareFetch, kmsg.ApiVersions} {
		if !c.Wants(k.Int16()) {
			t.Errorf("the chain does not want %s", kmsg.NameForKey(k.Int16()))
		}
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	_, _, state, err := c.Request(requestFrame(req))
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	for key, maxVersion := range map[kmsg.Key]int16{kmsg.Produce: 13, kmsg.Fetch: 18, kmsg.ShareFetch: 99, kmsg.Metadata: 99} {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: key.Int16(), MaxVersion: maxVersion})
	}
	out, err := c.Response(kmsg.ApiVersions.Int16(), 3, responseFrame(resp), state)
	if err != nil {
		t.Fatal(err)
	}
	got := kmsg.NewPtrApiVersionsResponse()
	got.SetVersion(3)
	readResponse(t, out, got)
	want := map[int16]int16{kmsg.Produce.Int16(): 13, kmsg.Fetch.Int16(): 18, kmsg.ShareFetch.Int16(): kmsg.NewPtrShareFetchRequest().MaxVersion(), kmsg.Metadata.Int16(): 99}
	for _, k := range got.ApiKeys {
		if k.MaxVersion != want[k.ApiKey] {
			t.Errorf("%s offered up to v%d, want v%d", kmsg.NameForKey(k.ApiKey), k.MaxVersion, want[k.ApiKey])
		}
	}
}

// FuzzLearnTopicIDs: any bytes as the Metadata or DescribeTopicPartitions response a chain only
// reads (as a broker could send them) go on to the client unchanged, without a panic and within
// a time bound; what the chain learned from them names topics only as a broker paired them.
func FuzzLearnTopicIDs(f *testing.F) {
	md := responseFrame(metadataResponse(map[[16]byte]*string{ordersID: str("orders"), {}: str("zero"), paymentID: nil}))
	f.Add(kmsg.Metadata.Int16(), int16(12), md)
	f.Add(kmsg.Metadata.Int16(), int16(12), withTaggedCount(md))
	huge := bytes.Clone(md)
	huge[len(huge)-30] = 0xff // a length somewhere among the topics
	f.Add(kmsg.Metadata.Int16(), int16(12), huge)
	dtp := kmsg.NewPtrDescribeTopicPartitionsResponse()
	dt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	dt.Topic, dt.TopicID = str("orders"), ordersID
	dtp.Topics = []kmsg.DescribeTopicPartitionsResponseTopic{dt}
	f.Add(kmsg.DescribeTopicPartitions.Int16(), int16(0), responseFrame(dtp))
	f.Add(kmsg.Metadata.Int16(), int16(13), []byte{0, 0, 0, 5, 0, 0, 0, 7, 0xff})
	f.Add(kmsg.Metadata.Int16(), int16(10), append([]byte{0, 0, 0, 20, 0, 0, 0, 7, 0}, bytes.Repeat([]byte{0xff}, 12)...)) // overflowing uvarints
	f.Fuzz(func(t *testing.T, key, version int16, frame []byte) {
		if key != kmsg.Metadata.Int16() && key != kmsg.DescribeTopicPartitions.Int16() || version < 0 || version > kmsg.ResponseForKey(key).MaxVersion() {
			return // the relay gives the chain only responses of the keys and versions it wants
		}
		c, _ := seerChain(t, "")
		done := make(chan []byte, 1)
		go func() {
			out, _ := c.Response(key, version, bytes.Clone(frame), nil)
			done <- out
		}()
		timer := time.NewTimer(chainRequestBound)
		defer timer.Stop()
		select {
		case out := <-done:
			if !bytes.Equal(out, frame) {
				t.Fatal("a response the chain only reads was changed")
			}
		case <-timer.C:
			t.Fatalf("a %d-byte response took over %s in the chain", len(frame), chainRequestBound)
		}
		// The zero id is never learned, whatever a response pairs it with.
		if _, answer, _, _ := c.Request(produceByID([16]byte{})); answer == nil {
			t.Fatal("the zero topic id was learned")
		}
	})
}

// chainRequestBound is far above what decoding any response a fuzzer makes needs, and far
// below what a decoding loop on a corrupt tagged-field count takes (tens of seconds).
const chainRequestBound = 3 * time.Second

// withTaggedCount replaces a flexible frame's last byte (its top-level tag count, 0) with a
// 5-byte uvarint count of 2^32-1.
func withTaggedCount(frame []byte) []byte {
	out := append(bytes.Clone(frame[:len(frame)-1]), 0xff, 0xff, 0xff, 0xff, 0x0f)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}
