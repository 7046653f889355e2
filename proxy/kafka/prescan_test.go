package kafka

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// prescanKeys returns the keys PrescanRequest knows, in order.
func prescanKeys() []int16 {
	keys := make([]int16, 0, len(prescanSchemas))
	for k := range prescanSchemas {
		keys = append(keys, k.Int16())
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// kmsgDecode decodes body as key at version with kmsg, failing t when that takes over limit
// (the decode is then abandoned: it ends by itself, some time later).
func kmsgDecode(t testing.TB, key, version int16, body []byte, limit time.Duration) error {
	t.Helper()
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	own := bytes.Clone(body)
	done := make(chan error, 1)
	go func() { done <- req.ReadFrom(own) }()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		t.Fatalf("PrescanRequest accepted key %d v%d body %x, and kmsg took over %s to decode it", key, version, body, limit)
		return nil
	}
}

// checkPrescanned is the pre-scanner's promise: a body it accepts, kmsg decodes in time and
// without error.
func checkPrescanned(t testing.TB, key, version int16, body []byte) {
	t.Helper()
	if PrescanRequest(key, version, body) != nil {
		return
	}
	if err := kmsgDecode(t, key, version, body, 2*time.Second); err != nil {
		t.Fatalf("PrescanRequest accepted key %d v%d body %x, which kmsg refuses: %v", key, version, body, err)
	}
}

var tagsType = reflect.TypeOf(kmsg.Tags{})

// fill sets every field of v, a kmsg message, to a value that is not the default: numbers 3,
// strings "ab", two elements in every array, and an unknown tag 99 in every tagged section, so
// that every field of every version is encoded.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(3)
	case reflect.Float64:
		v.SetFloat(0.5)
	case reflect.String:
		v.SetString("ab")
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fill(v.Index(i))
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte{1, 2, 3})
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fill(v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == tagsType {
			v.Addr().Interface().(*kmsg.Tags).Set(99, []byte{7, 7})
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).Name != "Version" && v.Field(i).CanSet() {
				fill(v.Field(i))
			}
		}
	}
}

// prescanSamples returns bodies of key at version encoded by kmsg: all defaults (empty arrays,
// no tags) and every field filled.
func prescanSamples(key, version int16) [][]byte {
	empty := kmsg.RequestForKey(key)
	empty.SetVersion(version)
	full := kmsg.RequestForKey(key)
	fill(reflect.ValueOf(full).Elem())
	full.SetVersion(version)
	return [][]byte{empty.AppendTo(nil), full.AppendTo(nil)}
}

// TestPrescanMatchesKmsg encodes requests of every version of every known key with kmsg: the
// pre-scanner accepts each, reading exactly its bytes (so the table misses no field), and every
// truncation or single-byte change it accepts, kmsg decodes in time and without error.
//
// The samples' own unknown tags have key 99; any other tag the pre-scanner does not know is a
// tagged field kmsg knows and the table misses (kmsg decodes the bytes of the tagged fields it
// knows, and a tagged section in them is where it would loop).
func TestPrescanMatchesKmsg(t *testing.T) {
	var unknown []uint32
	prescanUnknownTag = func(key uint32) {
		if key != 99 {
			unknown = append(unknown, key)
		}
	}
	defer func() { prescanUnknownTag = nil }()
	for _, key := range prescanKeys() {
		sc := prescanSchemas[kmsg.Key(key)]
		req := kmsg.RequestForKey(key)
		if req == nil || sc.max != req.MaxVersion() {
			t.Errorf("key %d: the table knows versions up to %d, kmsg up to %d: update the table", key, sc.max, req.MaxVersion())
			continue
		}
		for v := sc.min; v <= sc.max; v++ {
			for i, body := range prescanSamples(key, v) {
				unknown = unknown[:0]
				sc, err := prescan(key, v, body)
				n := sc.off
				if err != nil || n != len(body) {
					t.Errorf("%s v%d sample %d: read %d of %d bytes, %v", kmsg.NameForKey(key), v, i, n, len(body), err)
					continue
				}
				if len(unknown) > 0 {
					t.Errorf("%s v%d: the table misses tagged fields %v", kmsg.NameForKey(key), v, unknown)
				}
				for cut := 0; cut < len(body); cut++ {
					checkPrescanned(t, key, v, body[:cut])
				}
				changed := make([]byte, len(body))
				for at := range body {
					for _, b := range []byte{0x00, 0x01, 0x7f, 0x80, 0xff} {
						copy(changed, body)
						changed[at] = b
						checkPrescanned(t, key, v, changed)
					}
				}
			}
		}
	}
}

func TestPrescanUnknownKeysAndVersions(t *testing.T) {
	for _, tc := range []struct {
		key, version int16
	}{
		{0, 14}, {0, -1}, {1, 19}, {18, 6}, {18, prescanAny}, {4, 0}, {-1, 0}, {200, 0},
	} {
		if err := PrescanRequest(tc.key, tc.version, []byte{0, 0, 0, 0, 0, 0, 0, 0}); err == nil {
			t.Errorf("key %d v%d: accepted", tc.key, tc.version)
		}
	}
	for _, key := range []int16{0, 1, 18} {
		if !HasPrescanner(key) {
			t.Errorf("HasPrescanner(%d) = false", key)
		}
	}
	if HasPrescanner(4) || HasPrescanner(-1) || HasPrescanner(1000) {
		t.Error("HasPrescanner knows keys it has no table for")
	}
	// Bytes after the last field are kmsg's to ignore.
	if err := PrescanRequest(kmsg.SASLHandshake.Int16(), 1, []byte{0, 5, 'P', 'L', 'A', 'I', 'N', 0xff}); err != nil {
		t.Errorf("trailing byte: %v", err)
	}
}

// hostileApiVersions is a whole ApiVersions v3 request frame whose body's tagged-field count is
// 2^32-1: kmsg alone loops about 2^32 times on it.
const hostileApiVersions = "0000001500120003000000010001780002610231ffffffff0f"

// requestBody returns the key, version and body of a request frame (size included): the bytes
// after the client id and, for flexible versions, the header's tag section.
func requestBody(t *testing.T, frame []byte) (int16, int16, []byte) {
	t.Helper()
	key, version := int16(binary.BigEndian.Uint16(frame[4:])), int16(binary.BigEndian.Uint16(frame[6:]))
	off := 14 + int(binary.BigEndian.Uint16(frame[12:]))
	if Flexible(key, version) {
		n, err := skipTags(frame[off:])
		if err != nil {
			t.Fatal(err)
		}
		off += n
	}
	return key, version, frame[off:]
}

// hostileMark is an unknown tag a test puts into one tagged section of a request: count 1, key
// 12345, 5 bytes. hostileCount, as long, replaces it: a count of 2^32-1 and four zero bytes.
var (
	hostileMark  = []byte{0x01, 0xb9, 0x60, 0x05, 'M', 'A', 'R', 'K', '!'}
	hostileCount = []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0, 0}
)

func marked() kmsg.Tags {
	var tags kmsg.Tags
	tags.Set(12345, []byte("MARK!"))
	return tags
}

func sampleProduce(version int16, mark string) kmsg.Request {
	rec := kmsg.Record{Key: []byte("k"), Value: []byte(`{"a":1}`)}
	batch := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: 0, NumRecords: 1, FirstTimestamp: 1700000000000,
		MaxTimestamp: 1700000000000, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Records: rec.AppendTo(nil)}
	raw := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	r := kmsg.NewPtrProduceRequest()
	r.Acks = -1
	id := "tx"
	r.TransactionID = &id
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic, topic.TopicID = "orders", [16]byte{1, 2, 3}
	part := kmsg.NewProduceRequestTopicPartition()
	part.Partition, part.Records = 0, raw
	switch mark {
	case "top":
		r.UnknownTags = marked()
	case "topic":
		topic.UnknownTags = marked()
	case "partition":
		part.UnknownTags = marked()
	}
	topic.Partitions = append(topic.Partitions, part)
	r.Topics = append(r.Topics, topic)
	r.SetVersion(version)
	return r
}

func sampleFetch(version int16, mark string) kmsg.Request {
	r := kmsg.NewPtrFetchRequest()
	r.MaxWaitMillis, r.MinBytes, r.SessionID, r.SessionEpoch, r.Rack = 500, 1, 7, 2, "rack-a"
	cluster := "cluster-1"
	r.ClusterID = &cluster
	r.ReplicaState.ID, r.ReplicaState.Epoch = 2, 9
	topic := kmsg.NewFetchRequestTopic()
	topic.Topic, topic.TopicID = "orders", [16]byte{4, 5, 6}
	part := kmsg.NewFetchRequestTopicPartition()
	part.Partition, part.FetchOffset, part.PartitionMaxBytes = 1, 1000, 1<<20
	part.ReplicaDirectoryID = [16]byte{7}
	forgotten := kmsg.NewFetchRequestForgottenTopic()
	forgotten.Topic, forgotten.Partitions = "old", []int32{0, 1}
	switch mark {
	case "top": // alone in its section
		r.UnknownTags = marked()
		r.ClusterID, r.ReplicaState.ID, r.ReplicaState.Epoch = nil, -1, -1
	case "replica state":
		r.ReplicaState.UnknownTags = marked()
	case "topic":
		topic.UnknownTags = marked()
	case "partition":
		part.UnknownTags = marked()
		part.ReplicaDirectoryID = [16]byte{}
	case "forgotten":
		forgotten.UnknownTags = marked()
	}
	topic.Partitions = append(topic.Partitions, part)
	r.Topics = append(r.Topics, topic)
	r.ForgottenTopics = append(r.ForgottenTopics, forgotten)
	r.SetVersion(version)
	return r
}

func sampleShareFetch(version int16, mark string) kmsg.Request {
	r := kmsg.NewPtrShareFetchRequest()
	group, member := "shares", "member-1"
	r.GroupID, r.MemberID = &group, &member
	r.ShareSessionEpoch, r.MaxWaitMillis, r.MinBytes, r.MaxRecords, r.BatchSize = 1, 500, 1, 500, 500
	topic := kmsg.NewShareFetchRequestTopic()
	topic.TopicID = [16]byte{4, 5, 6}
	part := kmsg.NewShareFetchRequestTopicPartition()
	part.Partition, part.PartitionMaxBytes = 1, 1<<20
	ack := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	ack.FirstOffset, ack.LastOffset, ack.AcknowledgeTypes = 10, 12, []int8{1, 1, 2}
	forgotten := kmsg.NewShareFetchRequestForgottenTopicsData()
	forgotten.TopicID, forgotten.Partitions = [16]byte{7}, []int32{0, 1}
	switch mark {
	case "top":
		r.UnknownTags = marked()
	case "topic":
		topic.UnknownTags = marked()
	case "partition":
		part.UnknownTags = marked()
	case "acknowledgement":
		ack.UnknownTags = marked()
	case "forgotten":
		forgotten.UnknownTags = marked()
	}
	part.AcknowledgementBatches = append(part.AcknowledgementBatches, ack)
	topic.Partitions = append(topic.Partitions, part)
	r.Topics = append(r.Topics, topic)
	r.ForgottenTopicsData = append(r.ForgottenTopicsData, forgotten)
	r.SetVersion(version)
	return r
}

func sampleApiVersions(version int16, mark string) kmsg.Request {
	r := kmsg.NewPtrApiVersionsRequest()
	r.ClientSoftwareName, r.ClientSoftwareVersion = "kgo", "1.19.0"
	if mark == "top" {
		r.UnknownTags = marked()
	}
	r.SetVersion(version)
	return r
}

// TestPrescanRealisticRequests: what clients send is accepted, whole, at every version.
func TestPrescanRealisticRequests(t *testing.T) {
	for _, tc := range []struct {
		key    int16
		sample func(int16, string) kmsg.Request
	}{{kmsg.Produce.Int16(), sampleProduce}, {kmsg.Fetch.Int16(), sampleFetch}, {kmsg.ShareFetch.Int16(), sampleShareFetch}, {kmsg.ApiVersions.Int16(), sampleApiVersions}} {
		for v := int16(0); v <= prescanSchemas[kmsg.Key(tc.key)].max; v++ {
			body := tc.sample(v, "").AppendTo(nil)
			if sc, err := prescan(tc.key, v, body); err != nil || sc.off != len(body) {
				t.Errorf("%s v%d: read %d of %d bytes, %v", kmsg.NameForKey(tc.key), v, sc.off, len(body), err)
			}
			for cut := 0; cut < len(body); cut++ {
				checkPrescanned(t, tc.key, v, body[:cut])
			}
		}
	}
}

// TestPrescanRefusesHostileTagCounts: a tagged-field count of 2^32-1 anywhere kmsg would loop on
// it is refused.
func TestPrescanRefusesHostileTagCounts(t *testing.T) {
	frame, _ := hex.DecodeString(hostileApiVersions)
	key, version, body := requestBody(t, frame)
	if key != kmsg.ApiVersions.Int16() || version != 3 || len(body) != 9 {
		t.Fatalf("frame: key %d v%d body %x", key, version, body)
	}
	if err := PrescanRequest(key, version, body); !errors.Is(err, ErrMalformed) {
		t.Errorf("the hostile ApiVersions frame: %v, want ErrMalformed", err)
	}
	type place struct {
		key    int16
		from   int16
		sample func(int16, string) kmsg.Request
		mark   string
	}
	places := []place{{kmsg.ApiVersions.Int16(), 3, sampleApiVersions, "top"}}
	for _, m := range []string{"top", "topic", "partition"} {
		places = append(places, place{kmsg.Produce.Int16(), 9, sampleProduce, m})
	}
	for _, m := range []string{"top", "replica state", "topic", "partition", "forgotten"} {
		places = append(places, place{kmsg.Fetch.Int16(), 12, sampleFetch, m})
	}
	for _, m := range []string{"top", "topic", "partition", "acknowledgement", "forgotten"} {
		places = append(places, place{kmsg.ShareFetch.Int16(), 0, sampleShareFetch, m})
	}
	for _, p := range places {
		for v := p.from; v <= prescanSchemas[kmsg.Key(p.key)].max; v++ {
			if p.mark == "replica state" && v < 15 {
				continue // kmsg writes the ReplicaState tag from v15
			}
			body := p.sample(v, p.mark).AppendTo(nil)
			at := bytes.Index(body, hostileMark)
			if at < 0 || PrescanRequest(p.key, v, body) != nil {
				t.Fatalf("%s v%d %s: mark at %d, %v", kmsg.NameForKey(p.key), v, p.mark, at, PrescanRequest(p.key, v, body))
			}
			copy(body[at:], hostileCount)
			if err := PrescanRequest(p.key, v, body); err == nil {
				t.Errorf("%s v%d: a tag count of 2^32-1 in the %s tags is accepted", kmsg.NameForKey(p.key), v, p.mark)
			}
		}
	}
}

func TestPrescanDoesNotAllocate(t *testing.T) {
	for _, r := range []kmsg.Request{sampleProduce(9, "partition"), sampleFetch(18, "replica state"), sampleApiVersions(4, "top")} {
		body := r.AppendTo(nil)
		if n := testing.AllocsPerRun(100, func() {
			if PrescanRequest(r.Key(), r.GetVersion(), body) != nil {
				t.Fatal("refused")
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations", kmsg.NameForKey(r.Key()), n)
		}
	}
}

// TestPrescanIsLinear: a body of a million tagged fields, or of nested arrays as long as the
// body allows, is walked in linear time: well under a minute, where a quadratic walk takes hours.
func TestPrescanIsLinear(t *testing.T) {
	const n = 1 << 20
	tags := binary.AppendUvarint(nil, n)
	for i := 0; i < n; i++ {
		tags = append(tags, 0x63, 0) // key 99, no bytes
	}
	// Produce v9: null transactional id, acks -1, timeout 0, no topics, the tags.
	produce := append([]byte{0, 0xff, 0xff, 0, 0, 0, 0, 1}, tags...)
	start := time.Now()
	if err := PrescanRequest(kmsg.Produce.Int16(), 9, produce); err != nil {
		t.Fatal(err)
	}
	// Fetch v4: 17 bytes of fields, then n/6 topics of an empty name and no partitions.
	fetch := binary.BigEndian.AppendUint32(make([]byte, 17), n/6)
	fetch = append(fetch, make([]byte, n/6*6)...)
	if err := PrescanRequest(kmsg.Fetch.Int16(), 4, fetch); err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint32(fetch[17:], n/6+1)
	if err := PrescanRequest(kmsg.Fetch.Int16(), 4, fetch); err == nil {
		t.Fatal("an array longer than the body is accepted")
	}
	// Linear, this takes tens of milliseconds (seconds under -race on a loaded machine); one step
	// per pair of fields would take hours. The bound only tells the two apart.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %s", d)
	}
}

// fetchReplicaState returns a Fetch v15 body with nothing but a ReplicaState tag whose own tag
// section is tags.
func fetchReplicaState(tags []byte) []byte {
	b := make([]byte, 21)                                                       // max wait, min bytes, max bytes, isolation, session id, epoch
	b = append(b, 1, 1, 1)                                                      // no topics, no forgotten topics, rack ""
	b = append(b, 1, 1, byte(12+len(tags)), 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2) // one tag: 1, replica 1 epoch 2
	return append(append(b, tags...), 0)                                        // a byte kmsg ignores
}

func TestPrescanReplicaState(t *testing.T) {
	if err := PrescanRequest(kmsg.Fetch.Int16(), 15, fetchReplicaState([]byte{0})); err != nil {
		t.Error(err)
	}
	if err := PrescanRequest(kmsg.Fetch.Int16(), 15, fetchReplicaState([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})); err == nil {
		t.Error("a tag count of 2^32-1 inside ReplicaState is accepted")
	}
}

// FuzzPrescanRequest: PrescanRequest never panics, and a body it accepts kmsg decodes without
// error within 2 s (a body kmsg loops on fails the run instead of hanging it).
func FuzzPrescanRequest(f *testing.F) {
	for _, key := range prescanKeys() {
		for v := prescanSchemas[kmsg.Key(key)].min; v <= prescanSchemas[kmsg.Key(key)].max; v++ {
			for _, body := range prescanSamples(key, v) {
				f.Add(key, v, body)
			}
		}
	}
	frame, _ := hex.DecodeString(hostileApiVersions)
	f.Add(kmsg.ApiVersions.Int16(), int16(3), frame[17:])
	f.Add(kmsg.ApiVersions.Int16(), int16(3), []byte{2, 'a', 2, '1', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}) // 10-byte uvarint
	f.Add(kmsg.ApiVersions.Int16(), int16(3), []byte{2, 'a', 2, '1', 0xff, 0xff, 0xff, 0xff, 0x1f})                               // overflows 32 bits
	f.Add(kmsg.ApiVersions.Int16(), int16(3), []byte{2, 'a', 2, '1', 0x80, 0x80, 0x80, 0x80, 0x00})                               // 0 in 5 bytes
	f.Add(kmsg.SASLHandshake.Int16(), int16(1), []byte{0x7f, 0xff, 'P'})                                                          // huge string
	f.Add(kmsg.Produce.Int16(), int16(8), []byte{0xff, 0xff, 0, 1, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff})                           // huge array
	f.Add(kmsg.Produce.Int16(), int16(9), []byte{0, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x07})                              // huge compact array
	f.Add(kmsg.Fetch.Int16(), int16(15), fetchReplicaState([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}))                                 // ReplicaState with a huge inner tag count
	f.Add(kmsg.Fetch.Int16(), int16(15), fetchReplicaState([]byte{0x00}))
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		checkPrescanned(t, key, version, body)
	})
}

// TestPrescanTopicIDLayouts: from Produce v13 and Fetch v13, and in every ShareFetch, a topic is
// its 16-byte id and no name. Ids of bytes that would be overflowing uvarints or huge lengths
// if read as a name's length are read as the fixed bytes they are; an array count after the id
// that the body cannot hold is refused.
func TestPrescanTopicIDLayouts(t *testing.T) {
	for name, tc := range map[string]struct {
		key, version int16
		sample       func(int16, string) kmsg.Request
	}{
		"Produce v13 names its topic by id only":   {kmsg.Produce.Int16(), 13, sampleProduce},
		"Fetch v13 names its topic by id only":     {kmsg.Fetch.Int16(), 13, sampleFetch},
		"Fetch v18 names its topic by id only":     {kmsg.Fetch.Int16(), 18, sampleFetch},
		"ShareFetch v1 names its topic by id only": {kmsg.ShareFetch.Int16(), 1, sampleShareFetch},
		"ShareFetch v2 names its topic by id only": {kmsg.ShareFetch.Int16(), 2, sampleShareFetch},
	} {
		for _, fillByte := range []byte{0xff, 0x80, 0x00} {
			req := tc.sample(tc.version, "")
			id := bytes.Repeat([]byte{fillByte}, 16)
			setTopicID(req, [16]byte(id))
			body := req.AppendTo(nil)
			at := bytes.Index(body, id)
			if at < 0 {
				t.Fatalf("%s: the id is not in the body", name)
			}
			if sc, err := prescan(tc.key, tc.version, body); err != nil || sc.off != len(body) {
				t.Errorf("%s, id of %#x bytes: read %d of %d bytes, %v", name, fillByte, sc.off, len(body), err)
			}
			// The partitions' count follows the id: a count the body cannot hold is refused.
			huge := slices.Concat(body[:at+16], []byte{0xff, 0xff, 0xff, 0xff, 0x07}, body[at+17:])
			if PrescanRequest(tc.key, tc.version, huge) == nil {
				t.Errorf("%s, id of %#x bytes: a partition count of 2^31 after the id is accepted", name, fillByte)
			}
		}
	}
}

// setTopicID sets the id of a sample's first topic.
func setTopicID(req kmsg.Request, id [16]byte) {
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		r.Topics[0].TopicID = id
	case *kmsg.FetchRequest:
		r.Topics[0].TopicID = id
	case *kmsg.ShareFetchRequest:
		r.Topics[0].TopicID = id
	}
}
