package tenant

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
)

// namer maps a tenant's names to the broker's (prefixed) and back, for the kinds it isolates.
type namer struct {
	prefix string
	kinds  kind
}

// in is the broker's name for a client's name s of kind k.
func (n namer) in(k kind, s string) string {
	if n.kinds&k == 0 {
		return s
	}
	return n.prefix + s
}

// inOpt prefixes an optional name: null or empty means none (an idempotent producer's
// transactional id), and stays so.
func (n namer) inOpt(k kind, s *string) {
	if s != nil && *s != "" {
		*s = n.in(k, *s)
	}
}

// inAll prefixes a list of names in place.
func (n namer) inAll(k kind, s []string) {
	for i := range s {
		s[i] = n.in(k, s[i])
	}
}

// owns reports whether the broker's name s of kind k is the tenant's.
func (n namer) owns(k kind, s string) bool {
	return n.kinds&k == 0 || strings.HasPrefix(s, n.prefix)
}

// out is the client's name for the broker's name s of kind k: the prefix stripped. A name
// without it (the broker answering for a name the client gave, which always has it, would not
// give one) is left as it is.
func (n namer) out(k kind, s string) string {
	if n.kinds&k == 0 || !strings.HasPrefix(s, n.prefix) {
		return s
	}
	return s[len(n.prefix):]
}

func (n namer) outPtr(k kind, s *string) {
	if s != nil {
		*s = n.out(k, *s)
	}
}

// configKind is the kind of a config resource: topics and groups are a tenant's.
func configKind(t kmsg.ConfigResourceType) kind {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		return topics
	case kmsg.ConfigResourceTypeGroupConfig:
		return groups
	}
	return 0
}

// coordinatorKind is the kind of a FindCoordinator key: 0 group, 1 transaction, 2 share group
// (whose key starts with its group id, so prefixing the key prefixes the group).
func coordinatorKind(keyType int8) kind {
	if keyType == 1 {
		return txns
	}
	return groups
}

// request rewrites a request's names; an answer is returned instead when the request must not
// reach the broker.
func (n namer) request(x *filter.Exchange) (kmsg.Response, error) {
	switch r := x.Request.(type) {
	case *kmsg.ProduceRequest:
		return n.produce(x, r), nil
	case *kmsg.FetchRequest:
		for i := range r.Topics {
			r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
		}
		for i := range r.ForgottenTopics {
			r.ForgottenTopics[i].Topic = n.in(topics, r.ForgottenTopics[i].Topic)
		}
	case *kmsg.ListOffsetsRequest:
		for i := range r.Topics {
			r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
		}
	case *kmsg.MetadataRequest:
		for i := range r.Topics {
			n.inOpt(topics, r.Topics[i].Topic)
		}
	case *kmsg.OffsetCommitRequest:
		r.Group = n.in(groups, r.Group)
		for i := range r.Topics {
			r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
		}
	case *kmsg.OffsetFetchRequest:
		n.offsetFetch(r)
	case *kmsg.FindCoordinatorRequest:
		k := coordinatorKind(r.CoordinatorType)
		r.CoordinatorKey = n.in(k, r.CoordinatorKey)
		n.inAll(k, r.CoordinatorKeys)
	case *kmsg.JoinGroupRequest:
		r.Group = n.in(groups, r.Group)
	case *kmsg.HeartbeatRequest:
		r.Group = n.in(groups, r.Group)
	case *kmsg.LeaveGroupRequest:
		r.Group = n.in(groups, r.Group)
	case *kmsg.SyncGroupRequest:
		r.Group = n.in(groups, r.Group)
	case *kmsg.DescribeGroupsRequest:
		n.inAll(groups, r.Groups)
	default:
		return n.adminRequest(x)
	}
	return nil, nil
}

// produce prefixes a Produce's names. From v13 topics are named by id, which the chain resolved
// (x.TopicName) to the broker's name: an id of another tenant's topic fails the whole request
// with UNKNOWN_TOPIC_ID, as an id no metadata named does.
func (n namer) produce(x *filter.Exchange, r *kmsg.ProduceRequest) kmsg.Response {
	n.inOpt(txns, r.TransactionID)
	for i := range r.Topics {
		t := &r.Topics[i]
		if r.Version < 13 {
			t.Topic = n.in(topics, t.Topic)
			continue
		}
		if name, ok := x.TopicName(t.TopicID); !ok || !n.owns(topics, name) {
			return produceError(r, kerr.UnknownTopicID.Code)
		}
	}
	return nil
}

// dataPath tells the chain what the data path needs: a Produce v13+ names topics by id and its
// response names none, so the response is not needed (nor, without a transactional id, is the
// request re-encoded); a Fetch v13+ whose topic ids are all the tenant's was not changed and
// gets a response naming only those.
func (n namer) dataPath(x *filter.Exchange) {
	switch r := x.Request.(type) {
	case *kmsg.ProduceRequest:
		if r.Version < 13 {
			return
		}
		x.ResponseNotNeeded()
		if r.TransactionID == nil || *r.TransactionID == "" {
			x.RequestUnchanged()
		}
	case *kmsg.FetchRequest:
		if r.Version < 13 {
			return
		}
		for _, t := range r.Topics {
			if name, ok := x.TopicName(t.TopicID); !ok || !n.owns(topics, name) {
				return
			}
		}
		x.RequestUnchanged()
		x.ResponseNotNeeded()
	}
}

// produceError answers every partition of a Produce with code.
func produceError(r *kmsg.ProduceRequest, code int16) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	filter.FailProduce(resp, r.Topics, code)
	return resp
}

func (n namer) offsetFetch(r *kmsg.OffsetFetchRequest) {
	r.Group = n.in(groups, r.Group)
	for i := range r.Topics {
		r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
	}
	for i := range r.Groups {
		g := &r.Groups[i]
		g.Group = n.in(groups, g.Group)
		for j := range g.Topics {
			g.Topics[j].Topic = n.in(topics, g.Topics[j].Topic)
		}
	}
}

// adminRequest rewrites the requests of admin clients and transactions.
func (n namer) adminRequest(x *filter.Exchange) (kmsg.Response, error) {
	switch r := x.Request.(type) {
	case *kmsg.CreateTopicsRequest:
		for i := range r.Topics {
			r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
		}
	case *kmsg.DeleteTopicsRequest:
		n.inAll(topics, r.TopicNames)
		for i := range r.Topics {
			n.inOpt(topics, r.Topics[i].Topic)
		}
	case *kmsg.DeleteRecordsRequest:
		for i := range r.Topics {
			r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		for i := range r.Topics {
			r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
		}
	case *kmsg.CreatePartitionsRequest:
		for i := range r.Topics {
			r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
		}
	case *kmsg.DescribeLogDirsRequest:
		for i := range r.Topics {
			r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
		}
	case *kmsg.DeleteGroupsRequest:
		n.inAll(groups, r.Groups)
	case *kmsg.OffsetDeleteRequest:
		r.Group = n.in(groups, r.Group)
		for i := range r.Topics {
			r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
		}
	case *kmsg.DescribeProducersRequest:
		for i := range r.Topics {
			r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
		}
	case *kmsg.DescribeTopicPartitionsRequest:
		for i := range r.Topics {
			r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
		}
		if r.Cursor != nil {
			r.Cursor.Topic = n.in(topics, r.Cursor.Topic)
		}
	case *kmsg.DescribeConfigsRequest:
		for i := range r.Resources {
			res := &r.Resources[i]
			res.ResourceName = n.in(configKind(res.ResourceType), res.ResourceName)
		}
	case *kmsg.AlterConfigsRequest:
		for i := range r.Resources {
			res := &r.Resources[i]
			res.ResourceName = n.in(configKind(res.ResourceType), res.ResourceName)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		for i := range r.Resources {
			res := &r.Resources[i]
			res.ResourceName = n.in(configKind(res.ResourceType), res.ResourceName)
		}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return n.consumerGroupHeartbeat(r), nil
	case *kmsg.ConsumerGroupDescribeRequest:
		n.inAll(groups, r.Groups)
	default:
		return n.txnRequest(x)
	}
	return nil, nil
}

// consumerGroupHeartbeat prefixes a KIP-848 heartbeat; a subscription by regular expression is
// refused: it would be matched against every tenant's names.
func (n namer) consumerGroupHeartbeat(r *kmsg.ConsumerGroupHeartbeatRequest) kmsg.Response {
	if r.SubscribedTopicRegex != nil && *r.SubscribedTopicRegex != "" && n.kinds&topics != 0 {
		resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = kerr.InvalidRegularExpression.Code
		msg := "kafkalink-proxy MultiTenant: subscribing by regular expression is not supported; subscribe by topic names"
		resp.ErrorMessage = &msg
		return resp
	}
	r.Group = n.in(groups, r.Group)
	n.inAll(topics, r.SubscribedTopicNames)
	return nil
}

// txnRequest rewrites the transaction requests.
func (n namer) txnRequest(x *filter.Exchange) (kmsg.Response, error) {
	switch r := x.Request.(type) {
	case *kmsg.InitProducerIDRequest:
		n.inOpt(txns, r.TransactionalID)
	case *kmsg.AddPartitionsToTxnRequest:
		r.TransactionalID = n.in(txns, r.TransactionalID)
		for i := range r.Topics {
			r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
		}
		for i := range r.Transactions {
			t := &r.Transactions[i]
			t.TransactionalID = n.in(txns, t.TransactionalID)
			for j := range t.Topics {
				t.Topics[j].Topic = n.in(topics, t.Topics[j].Topic)
			}
		}
	case *kmsg.AddOffsetsToTxnRequest:
		r.TransactionalID, r.Group = n.in(txns, r.TransactionalID), n.in(groups, r.Group)
	case *kmsg.EndTxnRequest:
		r.TransactionalID = n.in(txns, r.TransactionalID)
	case *kmsg.TxnOffsetCommitRequest:
		r.TransactionalID, r.Group = n.in(txns, r.TransactionalID), n.in(groups, r.Group)
		for i := range r.Topics {
			r.Topics[i].Topic = n.in(topics, r.Topics[i].Topic)
		}
	case *kmsg.DescribeTransactionsRequest:
		n.inAll(txns, r.TransactionalIDs)
	case *kmsg.ListTransactionsRequest, *kmsg.ListGroupsRequest, *kmsg.DescribeClusterRequest, *kmsg.ApiVersionsRequest:
		// Nothing named: their responses are rewritten.
	default:
		return nil, fmt.Errorf("%s has no rewrite rule", kmsg.NameForKey(x.Key))
	}
	return nil, nil
}
