package filter

import (
	"cmp"
	"container/list"
	"encoding/binary"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// Topic ids. Produce v13+, Fetch v13+ and ShareFetch name topics by id only, and filters' rules
// (a KEK per topic name, a schema per topic name) are by name. A chain learns which name each id
// stands for from the Metadata (v10+) and DescribeTopicPartitions responses its clients get, as
// every client asks for metadata before it produces or fetches, and names each id-only topic
// before its filters see it. An id it has not learned (yet, or any more) is never forwarded with
// records nor handed out with them: a Produce naming one is answered UNKNOWN_TOPIC_ID, a fetched
// partition of one loses its records and gets that error, and the client, refreshing its
// metadata on that error, teaches the chain the id before it retries.

// maxTopicIDs bounds a chain's id map; more topics than that in use at once (rare: clusters of
// tens of thousands of topics) cost clients an UNKNOWN_TOPIC_ID and a metadata refresh now
// and then, as ids are dropped and learned again.
const maxTopicIDs = 1 << 16

// topicIDs maps a virtual cluster's topic ids to names, shared by its connections; the least
// recently used id is dropped once it holds max.
type topicIDs struct {
	mu    sync.Mutex
	max   int
	byID  map[[16]byte]*list.Element
	order *list.List // of idName, most recently used first
}

type idName struct {
	id   [16]byte
	name string
}

func newTopicIDs(limit int) *topicIDs {
	return &topicIDs{max: limit, byID: map[[16]byte]*list.Element{}, order: list.New()}
}

// put remembers the name of id.
func (t *topicIDs) put(id [16]byte, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.byID[id]; ok {
		e.Value = idName{id, name}
		t.order.MoveToFront(e)
		return
	}
	t.byID[id] = t.order.PushFront(idName{id, name})
	for t.order.Len() > t.max {
		last := t.order.Back()
		delete(t.byID, last.Value.(idName).id)
		t.order.Remove(last)
	}
}

// name is the name of id, if known.
func (t *topicIDs) name(id [16]byte) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byID[id]
	if !ok {
		return "", false
	}
	t.order.MoveToFront(e)
	return e.Value.(idName).name, true
}

func (t *topicIDs) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.order.Len()
}

// learnFrom remembers the ids a Metadata or DescribeTopicPartitions response names. The broker's
// pairing is taken whatever the topic's error: an id it has not assigned is all zeros, and a
// name it did not give is null or empty.
func (t *topicIDs) learnFrom(resp kmsg.Response) {
	learn := func(id [16]byte, name *string) {
		if id != ([16]byte{}) && name != nil && *name != "" {
			t.put(id, *name)
		}
	}
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		for _, tp := range r.Topics {
			learn(tp.TopicID, tp.Topic)
		}
	case *kmsg.DescribeTopicPartitionsResponse:
		for _, tp := range r.Topics {
			learn(tp.TopicID, tp.Topic)
		}
	}
}

// learnsFrom reports whether responses of key at version pair topic ids with names. A version
// above kmsg's (a client that ignored ApiVersions) would be read in another version's layout,
// and could pair an id with another topic's name: it teaches nothing.
func learnsFrom(key, version int16) bool {
	return idsFrom(key) && (key != kmsg.Metadata.Int16() || version >= 10) &&
		version <= kmsg.ResponseForKey(key).MaxVersion()
}

// idsFrom reports whether responses of key pair topic ids with names at some version.
func idsFrom(key int16) bool {
	return key == kmsg.Metadata.Int16() || key == kmsg.DescribeTopicPartitions.Int16()
}

// observesOnly reports whether a request frame is one the chain forwards as it is, to read only
// its response: of a key it learns topic ids from, which no filter wants.
func (c *Chain) observesOnly(frame []byte) bool {
	if len(frame) < 8 || len(c.filters) == 0 {
		return false
	}
	key := int16(binary.BigEndian.Uint16(frame[4:]))
	return idsFrom(key) && len(c.wants[key]) == 0
}

// learn reads the topic ids of a response frame (size included) the chain only observes. A frame
// it cannot read teaches nothing and is passed on: the relay's own address rewriting decodes it
// too, and refuses what is malformed.
func (c *Conn) learn(key, version int16, frame []byte) {
	if !learnsFrom(key, version) || len(frame) < 8 || len(frame) > c.lim.MaxFrame {
		return
	}
	resp := kmsg.ResponseForKey(key)
	resp.SetVersion(version)
	body := frame[8:]
	if resp.IsFlexible() {
		n, err := skipTags(body)
		if err != nil {
			return
		}
		body = body[n:]
	}
	if kafka.DecodeBounded(body, resp.ReadFrom) == nil {
		c.ids.learnFrom(resp)
	}
}

// TopicName is the name of a topic id that this request or response names, as the chain resolved
// it before the filters ran. Produce and Fetch carry the name in their topics' name fields as
// well; ShareFetch has no such field.
func (x *Exchange) TopicName(id [16]byte) (string, bool) {
	name, ok := x.names[id]
	return name, ok
}

// named records, and returns, the name of an id for this exchange, from the chain's map.
func (x *Exchange) named(ids *topicIDs, id [16]byte) (string, bool) {
	if name, ok := x.names[id]; ok {
		return name, true
	}
	name, ok := ids.name(id)
	if ok {
		if x.names == nil {
			x.names = map[[16]byte]string{}
		}
		x.names[id] = name
	}
	return name, ok
}

// unknownTopicIDMessage tells a client whose Produce named an id the proxy has not learned what
// to do; its client library does it on the error code alone.
const unknownTopicIDMessage = "kafkalink-proxy: this topic id is not known to the proxy yet; refresh metadata and retry"

// resolveRequest names the topics of a Produce or Fetch request that names them by id. A Produce
// naming an id the chain does not know is answered as a whole: its records would be forwarded
// without the filters knowing their topic.
func (c *Conn) resolveRequest(x *Exchange) kmsg.Response {
	switch r := x.Request.(type) {
	case *kmsg.ProduceRequest:
		if r.Version < 13 {
			return nil
		}
		for i := range r.Topics {
			name, ok := x.named(c.ids, r.Topics[i].TopicID)
			if !ok {
				return unknownTopicIDs(r)
			}
			r.Topics[i].Topic = name
		}
	case *kmsg.FetchRequest:
		if r.Version < 13 {
			return nil
		}
		for i := range r.Topics {
			r.Topics[i].Topic, _ = x.named(c.ids, r.Topics[i].TopicID)
		}
		for i := range r.ForgottenTopics {
			r.ForgottenTopics[i].Topic, _ = x.named(c.ids, r.ForgottenTopics[i].TopicID)
		}
	}
	return nil
}

// unknownTopicIDs answers every partition of a Produce with UNKNOWN_TOPIC_ID.
func unknownTopicIDs(req *kmsg.ProduceRequest) kmsg.Response {
	resp := errorResponse(req, kerr.UnknownTopicID.Code).(*kmsg.ProduceResponse)
	msg := unknownTopicIDMessage
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			resp.Topics[i].Partitions[j].ErrorMessage = &msg
		}
	}
	return resp
}

// resolveResponse names the topics of a Produce, Fetch or ShareFetch response that names them by
// id, before the filters see it. A fetched partition of an id the chain does not know loses its
// records, which the filters could not read, and gets UNKNOWN_TOPIC_ID unless the broker gave it
// an error of its own.
func (c *Conn) resolveResponse(x *Exchange) {
	switch r := x.Response.(type) {
	case *kmsg.ProduceResponse:
		if r.Version < 13 {
			return
		}
		for i := range r.Topics {
			r.Topics[i].Topic, _ = x.named(c.ids, r.Topics[i].TopicID)
		}
	case *kmsg.FetchResponse:
		if r.Version < 13 {
			return
		}
		for i := range r.Topics {
			t := &r.Topics[i]
			var ok bool
			if t.Topic, ok = x.named(c.ids, t.TopicID); ok {
				continue
			}
			for j := range t.Partitions {
				p := &t.Partitions[j]
				p.RecordBatches, p.AbortedTransactions = nil, nil
				p.ErrorCode = cmp.Or(p.ErrorCode, kerr.UnknownTopicID.Code)
			}
		}
	case *kmsg.ShareFetchResponse:
		for i := range r.Topics {
			if _, ok := x.named(c.ids, r.Topics[i].TopicID); !ok {
				for j := range r.Topics[i].Partitions {
					DropShareRecords(&r.Topics[i].Partitions[j], kerr.UnknownTopicID.Code)
				}
			}
		}
	}
}

// withTopicIDs gives the topics of a Produce v13+ response that filters added by name (the
// partitions they refused) the id the request named them by: from v13 only ids are encoded.
func (x *Exchange) withTopicIDs(resp kmsg.Response) kmsg.Response {
	r, ok := resp.(*kmsg.ProduceResponse)
	if !ok || x.Version < 13 {
		return resp
	}
	for i := range r.Topics {
		t := &r.Topics[i]
		if t.TopicID != ([16]byte{}) {
			continue
		}
		for id, name := range x.names {
			if name == t.Topic {
				t.TopicID = id
			}
		}
	}
	return resp
}
