package tenant

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterID is the id a tenant sees for the broker's cluster id: stable, distinct per tenant,
// and in Kafka's form (a UUID in unpadded URL-safe base64).
func clusterID(upstream, tenant string) string {
	sum := sha256.Sum256([]byte(upstream + "\x00" + tenant))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// response strips the prefix from a response's names and removes other tenants' resources
// from listings. coordinator is the kind of the FindCoordinator request's keys; clusterID gives
// the id the tenant is shown for the broker's.
func (n namer) response(resp kmsg.Response, coordinator kind, clusterID func(upstream string) string) {
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		if r.Version < 13 { // later versions name topics by id only
			for i := range r.Topics {
				r.Topics[i].Topic = n.out(topics, r.Topics[i].Topic)
			}
		}
	case *kmsg.FetchResponse:
		n.fetch(r)
	case *kmsg.ListOffsetsResponse:
		for i := range r.Topics {
			r.Topics[i].Topic = n.out(topics, r.Topics[i].Topic)
		}
	case *kmsg.MetadataResponse:
		r.Topics = slices.DeleteFunc(r.Topics, func(t kmsg.MetadataResponseTopic) bool { return t.Topic != nil && !n.owns(topics, *t.Topic) })
		for i := range r.Topics {
			n.outPtr(topics, r.Topics[i].Topic)
		}
		if r.ClusterID != nil && n.kinds&cluster != 0 {
			id := clusterID(*r.ClusterID)
			r.ClusterID = &id
		}
	case *kmsg.DescribeClusterResponse:
		if n.kinds&cluster != 0 {
			r.ClusterID = clusterID(r.ClusterID)
		}
	case *kmsg.OffsetCommitResponse:
		for i := range r.Topics {
			r.Topics[i].Topic = n.out(topics, r.Topics[i].Topic)
		}
	case *kmsg.OffsetFetchResponse:
		n.offsetFetchResponse(r)
	case *kmsg.FindCoordinatorResponse:
		for i := range r.Coordinators {
			r.Coordinators[i].Key = n.out(coordinator, r.Coordinators[i].Key)
		}
	case *kmsg.DescribeGroupsResponse:
		for i := range r.Groups {
			r.Groups[i].Group = n.out(groups, r.Groups[i].Group)
		}
	case *kmsg.ListGroupsResponse:
		r.Groups = slices.DeleteFunc(r.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return !n.owns(groups, g.Group) })
		for i := range r.Groups {
			r.Groups[i].Group = n.out(groups, r.Groups[i].Group)
		}
	default:
		n.adminResponse(resp)
	}
}

// fetch strips a Fetch's topic names; from v13 topics are named by id, which the chain resolved:
// a partition of another tenant's topic (or of an id never resolved) loses its records.
func (n namer) fetch(r *kmsg.FetchResponse) {
	for i := range r.Topics {
		t := &r.Topics[i]
		if r.Version < 13 {
			t.Topic = n.out(topics, t.Topic)
			continue
		}
		if t.Topic != "" && n.owns(topics, t.Topic) {
			continue
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			p.RecordBatches, p.AbortedTransactions = nil, nil
			p.ErrorCode = cmp.Or(p.ErrorCode, kerr.UnknownTopicID.Code)
		}
	}
}

func (n namer) offsetFetchResponse(r *kmsg.OffsetFetchResponse) {
	r.Topics = slices.DeleteFunc(r.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return !n.owns(topics, t.Topic) })
	for i := range r.Topics {
		r.Topics[i].Topic = n.out(topics, r.Topics[i].Topic)
	}
	for i := range r.Groups {
		g := &r.Groups[i]
		g.Group = n.out(groups, g.Group)
		g.Topics = slices.DeleteFunc(g.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool { return !n.owns(topics, t.Topic) })
		for j := range g.Topics {
			g.Topics[j].Topic = n.out(topics, g.Topics[j].Topic)
		}
	}
}

func (n namer) adminResponse(resp kmsg.Response) {
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		for i := range r.Topics {
			r.Topics[i].Topic = n.out(topics, r.Topics[i].Topic)
		}
	case *kmsg.DeleteTopicsResponse:
		for i := range r.Topics {
			n.outPtr(topics, r.Topics[i].Topic)
		}
	case *kmsg.DeleteRecordsResponse:
		for i := range r.Topics {
			r.Topics[i].Topic = n.out(topics, r.Topics[i].Topic)
		}
	case *kmsg.OffsetForLeaderEpochResponse:
		for i := range r.Topics {
			r.Topics[i].Topic = n.out(topics, r.Topics[i].Topic)
		}
	case *kmsg.CreatePartitionsResponse:
		for i := range r.Topics {
			r.Topics[i].Topic = n.out(topics, r.Topics[i].Topic)
		}
	case *kmsg.DescribeProducersResponse:
		for i := range r.Topics {
			r.Topics[i].Topic = n.out(topics, r.Topics[i].Topic)
		}
	case *kmsg.DescribeLogDirsResponse:
		for i := range r.Dirs {
			d := &r.Dirs[i]
			d.Topics = slices.DeleteFunc(d.Topics, func(t kmsg.DescribeLogDirsResponseDirTopic) bool { return !n.owns(topics, t.Topic) })
			for j := range d.Topics {
				d.Topics[j].Topic = n.out(topics, d.Topics[j].Topic)
			}
		}
	case *kmsg.DeleteGroupsResponse:
		for i := range r.Groups {
			r.Groups[i].Group = n.out(groups, r.Groups[i].Group)
		}
	case *kmsg.OffsetDeleteResponse:
		for i := range r.Topics {
			r.Topics[i].Topic = n.out(topics, r.Topics[i].Topic)
		}
	case *kmsg.DescribeTopicPartitionsResponse:
		n.describeTopicPartitions(r)
	case *kmsg.DescribeConfigsResponse:
		for i := range r.Resources {
			res := &r.Resources[i]
			res.ResourceName = n.out(configKind(res.ResourceType), res.ResourceName)
		}
	case *kmsg.AlterConfigsResponse:
		for i := range r.Resources {
			res := &r.Resources[i]
			res.ResourceName = n.out(configKind(res.ResourceType), res.ResourceName)
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for i := range r.Resources {
			res := &r.Resources[i]
			res.ResourceName = n.out(configKind(res.ResourceType), res.ResourceName)
		}
	case *kmsg.ConsumerGroupDescribeResponse:
		n.consumerGroupDescribe(r)
	default:
		n.txnResponse(resp)
	}
}

// describeTopicPartitions keeps the tenant's topics; a cursor at another tenant's topic becomes
// the start of the tenant's names (when theirs sort later) or the end of the listing.
func (n namer) describeTopicPartitions(r *kmsg.DescribeTopicPartitionsResponse) {
	r.Topics = slices.DeleteFunc(r.Topics, func(t kmsg.DescribeTopicPartitionsResponseTopic) bool {
		return t.Topic != nil && !n.owns(topics, *t.Topic)
	})
	for i := range r.Topics {
		n.outPtr(topics, r.Topics[i].Topic)
	}
	c := r.NextCursor
	switch {
	case c == nil || n.owns(topics, c.Topic):
		if c != nil {
			c.Topic = n.out(topics, c.Topic)
		}
	case c.Topic < n.prefix:
		c.Topic, c.Partition = "", 0 // the client's "" is the broker's prefix: the first of the tenant's names
	default:
		r.NextCursor = nil
	}
}

func (n namer) consumerGroupDescribe(r *kmsg.ConsumerGroupDescribeResponse) {
	for i := range r.Groups {
		g := &r.Groups[i]
		g.Group = n.out(groups, g.Group)
		for j := range g.Members {
			m := &g.Members[j]
			for k := range m.SubscribedTopics {
				m.SubscribedTopics[k] = n.out(topics, m.SubscribedTopics[k])
			}
			for _, a := range []*kmsg.Assignment{&m.Assignment, &m.TargetAssignment} {
				for k := range a.TopicPartitions {
					a.TopicPartitions[k].Topic = n.out(topics, a.TopicPartitions[k].Topic)
				}
			}
		}
	}
}

func (n namer) txnResponse(resp kmsg.Response) {
	switch r := resp.(type) {
	case *kmsg.AddPartitionsToTxnResponse:
		for i := range r.Topics {
			r.Topics[i].Topic = n.out(topics, r.Topics[i].Topic)
		}
		for i := range r.Transactions {
			t := &r.Transactions[i]
			t.TransactionalID = n.out(txns, t.TransactionalID)
			for j := range t.Topics {
				t.Topics[j].Topic = n.out(topics, t.Topics[j].Topic)
			}
		}
	case *kmsg.TxnOffsetCommitResponse:
		for i := range r.Topics {
			r.Topics[i].Topic = n.out(topics, r.Topics[i].Topic)
		}
	case *kmsg.DescribeTransactionsResponse:
		for i := range r.TransactionStates {
			s := &r.TransactionStates[i]
			s.TransactionalID = n.out(txns, s.TransactionalID)
			for j := range s.Topics {
				s.Topics[j].Topic = n.out(topics, s.Topics[j].Topic)
			}
		}
	case *kmsg.ListTransactionsResponse:
		r.TransactionStates = slices.DeleteFunc(r.TransactionStates, func(s kmsg.ListTransactionsResponseTransactionState) bool {
			return !n.owns(txns, s.TransactionalID)
		})
		for i := range r.TransactionStates {
			r.TransactionStates[i].TransactionalID = n.out(txns, r.TransactionStates[i].TransactionalID)
		}
	}
}

// apiVersions removes the keys a filter isolating kinds refuses and lowers the versions it caps.
func apiVersions(r *kmsg.ApiVersionsResponse, isolates kind) {
	r.ApiKeys = slices.DeleteFunc(r.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return action(k.ApiKey, isolates) == "refuse" })
	for i := range r.ApiKeys {
		k := &r.ApiKeys[i]
		if ru := rules[k.ApiKey]; ru.capKind&isolates != 0 {
			k.MaxVersion = min(k.MaxVersion, ru.maxVersion)
		}
	}
}
