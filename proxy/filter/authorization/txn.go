package authorization

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/acl"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// initProducerID: WRITE on the transactional id; without one (an idempotent producer),
// IDEMPOTENT_WRITE on the cluster or WRITE on some topic, as Kafka (KIP-679) allows.
func initProducerID(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.InitProducerIDRequest)
	if r.TransactionalID != nil {
		if v.Allows(acl.TransactionalID, *r.TransactionalID, acl.Write) {
			return nil, false
		}
		return answerWith(txnDenied)
	}
	if !v.Checks(acl.Cluster) || v.Allows(acl.Cluster, clusterName, acl.IdempotentWrite) || v.MayEver(acl.Topic, acl.Write) {
		return nil, false
	}
	return answerWith(kerr.ClusterAuthorizationFailed.Code)
}

// addPartitionsToTxn: WRITE on the transactional id and on each topic; when a topic is denied
// nothing is added (the others get OPERATION_NOT_ATTEMPTED), as in Kafka. From v4 brokers send
// it to verify transactions: CLUSTER_ACTION.
func addPartitionsToTxn(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.AddPartitionsToTxnRequest)
	if r.Version >= 4 {
		return clusterOp(acl.ClusterAction)(x, v)
	}
	if !v.Allows(acl.TransactionalID, r.TransactionalID, acl.Write) {
		return addPartitionsErrors(r.Topics, func(string) int16 { return txnDenied }), true
	}
	write := topicCheck(v, acl.Write)
	denied := false
	for _, t := range r.Topics {
		denied = denied || !write(t.Topic)
	}
	if !denied {
		return nil, false
	}
	return addPartitionsErrors(r.Topics, func(topic string) int16 {
		if write(topic) {
			return kerr.OperationNotAttempted.Code
		}
		return topicDenied
	}), true
}

func addPartitionsErrors(topics []kmsg.AddPartitionsToTxnRequestTopic, code func(string) int16) pending {
	return func(resp kmsg.Response, _ *acl.View) {
		ar := resp.(*kmsg.AddPartitionsToTxnResponse)
		for _, t := range topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code(t.Topic)
				rt.Partitions = append(rt.Partitions, rp)
			}
			ar.Topics = append(ar.Topics, rt)
		}
	}
}

// addOffsetsToTxn: WRITE on the transactional id, READ on the group.
func addOffsetsToTxn(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.AddOffsetsToTxnRequest)
	switch {
	case !v.Allows(acl.TransactionalID, r.TransactionalID, acl.Write):
		return answerWith(txnDenied)
	case !v.Allows(acl.Group, r.Group, acl.Read):
		return answerWith(groupDenied)
	}
	return nil, false
}

// txnOffsetCommit: WRITE on the transactional id, READ on the group (either denied: every
// partition gets its error) and on each topic.
func txnOffsetCommit(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.TxnOffsetCommitRequest)
	code := int16(0)
	switch {
	case !v.Allows(acl.TransactionalID, r.TransactionalID, acl.Write):
		code = txnDenied
	case !v.Allows(acl.Group, r.Group, acl.Read):
		code = groupDenied
	}
	if code != 0 {
		return txnOffsetCommitErrors(r.Topics, code), true
	}
	if !v.Checks(acl.Topic) {
		return nil, false
	}
	read := topicCheck(v, acl.Read)
	keep, denied := split(r.Topics, func(t *kmsg.TxnOffsetCommitRequestTopic) bool { return t.Topic != "" && read(t.Topic) })
	if len(denied) == 0 {
		return nil, false
	}
	r.Topics = keep
	return txnOffsetCommitErrors(denied, topicDenied), len(keep) == 0
}

func txnOffsetCommitErrors(topics []kmsg.TxnOffsetCommitRequestTopic, code int16) pending {
	return func(resp kmsg.Response, _ *acl.View) {
		tr := resp.(*kmsg.TxnOffsetCommitResponse)
		for _, t := range topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			tr.Topics = append(tr.Topics, rt)
		}
	}
}

// describeTransactions: DESCRIBE on each transactional id; the topics of a transaction are
// shown when the subject may describe them.
func describeTransactions(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.DescribeTransactionsRequest)
	keep, denied := split(r.TransactionalIDs, func(id *string) bool { return v.Allows(acl.TransactionalID, *id, acl.Describe) })
	r.TransactionalIDs = keep
	return func(resp kmsg.Response, v *acl.View) {
		dr := resp.(*kmsg.DescribeTransactionsResponse)
		for i := range dr.TransactionStates {
			s := &dr.TransactionStates[i]
			s.Topics, _ = split(s.Topics, func(t *kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
				return v.Allows(acl.Topic, t.Topic, acl.Describe)
			})
		}
		for _, id := range denied {
			s := kmsg.NewDescribeTransactionsResponseTransactionState()
			s.TransactionalID, s.ErrorCode = id, txnDenied
			dr.TransactionStates = append(dr.TransactionStates, s)
		}
	}, len(keep) == 0 && len(denied) > 0
}

// listTransactions: the transactional ids the subject may describe.
func listTransactions(_ *filter.Exchange, v *acl.View) (pending, bool) {
	if !v.Checks(acl.TransactionalID) {
		return nil, false
	}
	return func(resp kmsg.Response, v *acl.View) {
		lr := resp.(*kmsg.ListTransactionsResponse)
		lr.TransactionStates, _ = split(lr.TransactionStates, func(s *kmsg.ListTransactionsResponseTransactionState) bool {
			return v.Allows(acl.TransactionalID, s.TransactionalID, acl.Describe)
		})
	}, false
}
