package authorization

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/acl"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

var (
	topicDenied = kerr.TopicAuthorizationFailed.Code
	groupDenied = kerr.GroupAuthorizationFailed.Code
	txnDenied   = kerr.TransactionalIDAuthorizationFailed.Code
)

// split keeps in items those ok accepts (in place) and returns the others.
func split[T any](items []T, ok func(*T) bool) (keep, denied []T) {
	keep = items[:0]
	for i := range items {
		if ok(&items[i]) {
			keep = append(keep, items[i])
		} else {
			denied = append(denied, items[i])
		}
	}
	return keep, denied
}

// topicCheck is an ok for split: op on the topic called name.
func topicCheck(v *acl.View, op acl.Op) func(string) bool {
	return func(name string) bool { return v.Allows(acl.Topic, name, op) }
}

// produce: WRITE on the transactional id, when set, and on each topic.
func produce(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.ProduceRequest)
	if r.TransactionID != nil && !v.Allows(acl.TransactionalID, *r.TransactionID, acl.Write) {
		denied := r.Topics
		r.Topics = nil
		return produceErrors(denied, txnDenied), true
	}
	if !v.Checks(acl.Topic) {
		return nil, false
	}
	write := topicCheck(v, acl.Write)
	keep, denied := split(r.Topics, func(t *kmsg.ProduceRequestTopic) bool { return write(t.Topic) })
	if len(denied) == 0 {
		return nil, false
	}
	r.Topics = keep
	return produceErrors(denied, topicDenied), len(keep) == 0
}

func produceErrors(denied []kmsg.ProduceRequestTopic, code int16) pending {
	return func(resp kmsg.Response, _ *acl.View) {
		filter.FailProduce(resp.(*kmsg.ProduceResponse), denied, code)
	}
}

// fetch: CLUSTER_ACTION for a follower's fetch; READ on each topic for a consumer's. A Fetch is
// always forwarded, even with no topic left: it may carry a fetch session the broker keeps.
func fetch(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.FetchRequest)
	if r.ReplicaID >= 0 || r.Version >= 15 && r.ReplicaState.ID >= 0 {
		return clusterOp(acl.ClusterAction)(x, v)
	}
	if !v.Checks(acl.Topic) {
		return nil, false
	}
	read := topicCheck(v, acl.Read)
	// A topic id the proxy has not learned (the chain names it "") is not forwarded: nothing
	// says which topic it is. The client refreshes its metadata on UNKNOWN_TOPIC_ID.
	keep, denied := split(r.Topics, func(t *kmsg.FetchRequestTopic) bool { return t.Topic != "" && read(t.Topic) })
	if len(denied) == 0 {
		return nil, false
	}
	r.Topics = keep
	return func(resp kmsg.Response, _ *acl.View) {
		fr := resp.(*kmsg.FetchResponse)
		for _, t := range denied {
			code := topicDenied
			if t.Topic == "" {
				code = kerr.UnknownTopicID.Code
			}
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			fr.Topics = append(fr.Topics, rt)
		}
	}, false
}

// listOffsets: DESCRIBE on each topic.
func listOffsets(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.ListOffsetsRequest)
	describe := topicCheck(v, acl.Describe)
	keep, denied := split(r.Topics, func(t *kmsg.ListOffsetsRequestTopic) bool { return describe(t.Topic) })
	if len(denied) == 0 {
		return nil, false
	}
	r.Topics = keep
	return func(resp kmsg.Response, _ *acl.View) {
		lr := resp.(*kmsg.ListOffsetsResponse)
		for _, t := range denied {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.Timestamp, rp.Offset, rp.LeaderEpoch = p.Partition, topicDenied, -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			lr.Topics = append(lr.Topics, rt)
		}
	}, len(keep) == 0
}

// offsetForLeaderEpoch: CLUSTER_ACTION for a follower; DESCRIBE on each topic for a consumer.
func offsetForLeaderEpoch(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.OffsetForLeaderEpochRequest)
	op := acl.Describe
	if r.Version >= 3 && r.ReplicaID >= 0 {
		op = acl.ClusterAction
	}
	ok := func(t *kmsg.OffsetForLeaderEpochRequestTopic) bool {
		if op == acl.ClusterAction {
			return v.Allows(acl.Cluster, clusterName, op)
		}
		return v.Allows(acl.Topic, t.Topic, op)
	}
	keep, denied := split(r.Topics, ok)
	if len(denied) == 0 {
		return nil, false
	}
	r.Topics = keep
	code := topicDenied
	if op == acl.ClusterAction {
		code = kerr.ClusterAuthorizationFailed.Code
	}
	return func(resp kmsg.Response, _ *acl.View) {
		or := resp.(*kmsg.OffsetForLeaderEpochResponse)
		for _, t := range denied {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, code, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			or.Topics = append(or.Topics, rt)
		}
	}, len(keep) == 0
}

// deleteRecords: DELETE on each topic.
func deleteRecords(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.DeleteRecordsRequest)
	del := topicCheck(v, acl.Delete)
	keep, denied := split(r.Topics, func(t *kmsg.DeleteRecordsRequestTopic) bool { return del(t.Topic) })
	if len(denied) == 0 {
		return nil, false
	}
	r.Topics = keep
	return func(resp kmsg.Response, _ *acl.View) {
		dr := resp.(*kmsg.DeleteRecordsResponse)
		for _, t := range denied {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, topicDenied, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			dr.Topics = append(dr.Topics, rt)
		}
	}, len(keep) == 0
}

// describeProducers: READ on each topic.
func describeProducers(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.DescribeProducersRequest)
	read := topicCheck(v, acl.Read)
	keep, denied := split(r.Topics, func(t *kmsg.DescribeProducersRequestTopic) bool { return read(t.Topic) })
	if len(denied) == 0 {
		return nil, false
	}
	r.Topics = keep
	return func(resp kmsg.Response, _ *acl.View) {
		dr := resp.(*kmsg.DescribeProducersResponse)
		for _, t := range denied {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, topicDenied
				rt.Partitions = append(rt.Partitions, rp)
			}
			dr.Topics = append(dr.Topics, rt)
		}
	}, len(keep) == 0
}

// createTopics: CREATE on the cluster or on each topic; the configs of a created topic are
// shown only with DESCRIBE_CONFIGS on it.
func createTopics(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.CreateTopicsRequest)
	cluster := v.Checks(acl.Cluster) && v.Allows(acl.Cluster, clusterName, acl.Create)
	create := topicCheck(v, acl.Create)
	keep, denied := split(r.Topics, func(t *kmsg.CreateTopicsRequestTopic) bool { return cluster || create(t.Topic) })
	r.Topics = keep
	return func(resp kmsg.Response, v *acl.View) {
		cr := resp.(*kmsg.CreateTopicsResponse)
		for i := range cr.Topics {
			t := &cr.Topics[i]
			if t.ErrorCode == 0 && !v.Allows(acl.Topic, t.Topic, acl.DescribeConfigs) {
				t.Configs, t.ConfigErrorCode = nil, topicDenied
			}
		}
		for _, t := range denied {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.NumPartitions, rt.ReplicationFactor = t.Topic, topicDenied, -1, -1
			cr.Topics = append(cr.Topics, rt)
		}
	}, len(keep) == 0 && len(denied) > 0
}

// deleteTopics: DELETE on each topic. A topic named only by id is denied when topics are
// checked: the proxy cannot tell which topic it is.
func deleteTopics(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.DeleteTopicsRequest)
	if !v.Checks(acl.Topic) {
		return nil, false
	}
	del := topicCheck(v, acl.Delete)
	keepNames, deniedNames := split(r.TopicNames, func(n *string) bool { return del(*n) })
	keep, denied := split(r.Topics, func(t *kmsg.DeleteTopicsRequestTopic) bool { return t.Topic != nil && del(*t.Topic) })
	if len(deniedNames)+len(denied) == 0 {
		return nil, false
	}
	r.TopicNames, r.Topics = keepNames, keep
	return func(resp kmsg.Response, _ *acl.View) {
		dr := resp.(*kmsg.DeleteTopicsResponse)
		for _, n := range deniedNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = &n, topicDenied
			dr.Topics = append(dr.Topics, rt)
		}
		for _, t := range denied {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, topicDenied
			dr.Topics = append(dr.Topics, rt)
		}
	}, len(keepNames)+len(keep) == 0
}

// createPartitions: ALTER on each topic.
func createPartitions(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.CreatePartitionsRequest)
	alter := topicCheck(v, acl.Alter)
	keep, denied := split(r.Topics, func(t *kmsg.CreatePartitionsRequestTopic) bool { return alter(t.Topic) })
	if len(denied) == 0 {
		return nil, false
	}
	r.Topics = keep
	return func(resp kmsg.Response, _ *acl.View) {
		cr := resp.(*kmsg.CreatePartitionsResponse)
		for _, t := range denied {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, topicDenied
			cr.Topics = append(cr.Topics, rt)
		}
	}, len(keep) == 0
}

// metadata: the topics the subject may not DESCRIBE are taken out of an answer about every
// topic, and get TOPIC_AUTHORIZATION_FAILED when the request named them; a topic the broker
// would create for the request needs CREATE (on the cluster or the topic), as in Kafka.
func metadata(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.MetadataRequest)
	if !v.Checks(acl.Topic) {
		return nil, false
	}
	all := r.Topics == nil || r.Version == 0 && len(r.Topics) == 0
	autoCreate := r.AllowAutoTopicCreation
	var denied []kmsg.MetadataRequestTopic
	if !all {
		// Denied topics named by name are not asked for; with none left the request asks for
		// no topic (v1+), which still answers with the brokers the client needs.
		describe := topicCheck(v, acl.Describe)
		r.Topics, denied = split(r.Topics, func(t *kmsg.MetadataRequestTopic) bool { return t.Topic == nil || describe(*t.Topic) })
		if r.Version == 0 && len(r.Topics) == 0 && len(denied) > 0 {
			r.Topics = denied[:1] // v0 has no "no topics": ask for one denied topic, filtered below
		}
		// The broker must not create a topic the subject may not create: Kafka checks CREATE
		// first. Such a topic then comes back unknown, and gets TOPIC_AUTHORIZATION_FAILED.
		clusterCreate := v.Checks(acl.Cluster) && v.Allows(acl.Cluster, clusterName, acl.Create)
		for _, t := range r.Topics {
			if autoCreate && !clusterCreate && t.Topic != nil && !v.Allows(acl.Topic, *t.Topic, acl.Create) {
				r.AllowAutoTopicCreation = false
			}
		}
	}
	return func(resp kmsg.Response, v *acl.View) {
		mr := resp.(*kmsg.MetadataResponse)
		defer func() {
			for _, t := range denied {
				if !slices.ContainsFunc(mr.Topics, func(m kmsg.MetadataResponseTopic) bool { return m.Topic != nil && *m.Topic == *t.Topic }) {
					d := kmsg.NewMetadataResponseTopic()
					d.ErrorCode, d.Topic = topicDenied, t.Topic
					mr.Topics = append(mr.Topics, d)
				}
			}
		}()
		cluster := v.Checks(acl.Cluster) && v.Allows(acl.Cluster, clusterName, acl.Create)
		topics := mr.Topics[:0]
		for _, t := range mr.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			ops := v.Allowed(acl.Topic, name)
			switch {
			case ops.Has(acl.Describe):
				if autoCreate && t.ErrorCode == kerr.UnknownTopicOrPartition.Code && !cluster && !ops.Has(acl.Create) {
					t.ErrorCode = topicDenied
				}
				t.AuthorizedOperations = authorizedOps(t.AuthorizedOperations, ops)
			case all:
				continue
			default:
				t = deniedTopic(t)
			}
			topics = append(topics, t)
		}
		mr.Topics = topics
	}, false
}

// deniedTopic is the entry of a topic the subject may not describe: its name (or, asked by id,
// its id) and the error, nothing else.
func deniedTopic(t kmsg.MetadataResponseTopic) kmsg.MetadataResponseTopic {
	d := kmsg.NewMetadataResponseTopic()
	d.ErrorCode, d.Topic, d.TopicID = topicDenied, t.Topic, t.TopicID
	if t.TopicID != ([16]byte{}) {
		d.Topic = nil // Kafka does not name a topic asked by id that the subject may not describe
	}
	return d
}

// describeTopicPartitions: as metadata, DESCRIBE on each topic.
func describeTopicPartitions(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.DescribeTopicPartitionsRequest)
	if !v.Checks(acl.Topic) {
		return nil, false
	}
	all := len(r.Topics) == 0
	describe := topicCheck(v, acl.Describe)
	var denied []kmsg.DescribeTopicPartitionsRequestTopic
	r.Topics, denied = split(r.Topics, func(t *kmsg.DescribeTopicPartitionsRequestTopic) bool { return describe(t.Topic) })
	return func(resp kmsg.Response, v *acl.View) {
		dr := resp.(*kmsg.DescribeTopicPartitionsResponse)
		defer func() {
			for _, t := range denied {
				d := kmsg.NewDescribeTopicPartitionsResponseTopic()
				d.ErrorCode, d.Topic = topicDenied, &t.Topic
				dr.Topics = append(dr.Topics, d)
			}
		}()
		topics := dr.Topics[:0]
		for _, t := range dr.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			ops := v.Allowed(acl.Topic, name)
			switch {
			case ops.Has(acl.Describe):
				t.AuthorizedOperations = authorizedOps(t.AuthorizedOperations, ops)
			case all:
				continue
			default:
				d := kmsg.NewDescribeTopicPartitionsResponseTopic()
				d.ErrorCode, d.Topic = topicDenied, t.Topic
				t = d
			}
			topics = append(topics, t)
		}
		dr.Topics = topics
	}, !all && len(r.Topics) == 0
}
