package authorization

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/acl"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// offsetCommit: READ on the group (denied: every partition GROUP_AUTHORIZATION_FAILED) and on
// each topic.
func offsetCommit(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.OffsetCommitRequest)
	if !v.Allows(acl.Group, r.Group, acl.Read) {
		denied := r.Topics
		r.Topics = nil
		return offsetCommitErrors(denied, groupDenied), true
	}
	if !v.Checks(acl.Topic) {
		return nil, false
	}
	read := topicCheck(v, acl.Read)
	keep, denied := split(r.Topics, func(t *kmsg.OffsetCommitRequestTopic) bool { return t.Topic != "" && read(t.Topic) })
	if len(denied) == 0 {
		return nil, false
	}
	r.Topics = keep
	return offsetCommitErrors(denied, topicDenied), len(keep) == 0
}

func offsetCommitErrors(denied []kmsg.OffsetCommitRequestTopic, code int16) pending {
	return func(resp kmsg.Response, _ *acl.View) {
		or := resp.(*kmsg.OffsetCommitResponse)
		for _, t := range denied {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			c := code
			if t.Topic == "" {
				c = kerr.UnknownTopicID.Code // by id, which the filter cannot name (v10+ are not offered)
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, c
				rt.Partitions = append(rt.Partitions, rp)
			}
			or.Topics = append(or.Topics, rt)
		}
	}
}

// offsetFetch: DESCRIBE on each group and on each topic; offsets of every topic (topics null)
// are shown for the topics the subject may describe.
func offsetFetch(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.OffsetFetchRequest)
	if r.Version < 8 {
		return offsetFetchOne(r, v)
	}
	keep, denied := split(r.Groups, func(g *kmsg.OffsetFetchRequestGroup) bool { return v.Allows(acl.Group, g.Group, acl.Describe) })
	r.Groups = keep
	return func(resp kmsg.Response, v *acl.View) {
		or := resp.(*kmsg.OffsetFetchResponse)
		for i := range or.Groups {
			g := &or.Groups[i]
			g.Topics, _ = split(g.Topics, func(t *kmsg.OffsetFetchResponseGroupTopic) bool {
				return t.Topic != "" && v.Allows(acl.Topic, t.Topic, acl.Describe)
			})
		}
		for _, g := range denied {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, groupDenied
			or.Groups = append(or.Groups, rg)
		}
	}, len(keep) == 0 && len(denied) > 0
}

// offsetFetchOne is OffsetFetch before v8: one group. Denied topics are not forwarded, and get
// TOPIC_AUTHORIZATION_FAILED per partition, as Kafka does.
func offsetFetchOne(r *kmsg.OffsetFetchRequest, v *acl.View) (pending, bool) {
	if !v.Allows(acl.Group, r.Group, acl.Describe) {
		topics := r.Topics
		return func(resp kmsg.Response, _ *acl.View) {
			or := resp.(*kmsg.OffsetFetchResponse)
			or.ErrorCode = groupDenied
			if r.Version < 2 { // no top-level error: each partition says it
				or.Topics = offsetFetchErrors(topics, groupDenied)
			}
		}, true
	}
	all := r.Topics == nil
	describe := topicCheck(v, acl.Describe)
	keep, denied := split(r.Topics, func(t *kmsg.OffsetFetchRequestTopic) bool { return describe(t.Topic) })
	if !all {
		r.Topics = keep
	}
	return func(resp kmsg.Response, v *acl.View) {
		or := resp.(*kmsg.OffsetFetchResponse)
		if all {
			or.Topics, _ = split(or.Topics, func(t *kmsg.OffsetFetchResponseTopic) bool { return v.Allows(acl.Topic, t.Topic, acl.Describe) })
		}
		or.Topics = append(or.Topics, offsetFetchErrors(denied, topicDenied)...)
	}, !all && len(keep) == 0 && len(denied) > 0
}

func offsetFetchErrors(topics []kmsg.OffsetFetchRequestTopic, code int16) []kmsg.OffsetFetchResponseTopic {
	var out []kmsg.OffsetFetchResponseTopic
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.Offset, rp.LeaderEpoch = p, code, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// offsetDelete: DELETE on the group, READ on each topic.
func offsetDelete(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.OffsetDeleteRequest)
	if !v.Allows(acl.Group, r.Group, acl.Delete) {
		return answerWith(groupDenied)
	}
	read := topicCheck(v, acl.Read)
	keep, denied := split(r.Topics, func(t *kmsg.OffsetDeleteRequestTopic) bool { return read(t.Topic) })
	if len(denied) == 0 {
		return nil, false
	}
	r.Topics = keep
	return func(resp kmsg.Response, _ *acl.View) {
		or := resp.(*kmsg.OffsetDeleteResponse)
		for _, t := range denied {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, topicDenied
				rt.Partitions = append(rt.Partitions, rp)
			}
			or.Topics = append(or.Topics, rt)
		}
	}, len(keep) == 0
}

// Coordinator types of FindCoordinator.
const (
	coordinatorGroup = 0
	coordinatorTxn   = 1
)

// findCoordinator: DESCRIBE on the group or transactional id.
func findCoordinator(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.FindCoordinatorRequest)
	typ, code := acl.Group, groupDenied
	if r.CoordinatorType == coordinatorTxn {
		typ, code = acl.TransactionalID, txnDenied
	}
	if r.Version < 4 {
		if v.Allows(typ, r.CoordinatorKey, acl.Describe) {
			return nil, false
		}
		return answerWith(code)
	}
	keep, denied := split(r.CoordinatorKeys, func(k *string) bool { return v.Allows(typ, *k, acl.Describe) })
	if len(denied) == 0 {
		return nil, false
	}
	r.CoordinatorKeys = keep
	return func(resp kmsg.Response, _ *acl.View) {
		fr := resp.(*kmsg.FindCoordinatorResponse)
		for _, k := range denied {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.ErrorCode, c.NodeID, c.Port = k, code, -1, -1
			fr.Coordinators = append(fr.Coordinators, c)
		}
	}, len(keep) == 0
}

// describeGroups: DESCRIBE on each group.
func describeGroups(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.DescribeGroupsRequest)
	keep, denied := split(r.Groups, func(g *string) bool { return v.Allows(acl.Group, *g, acl.Describe) })
	r.Groups = keep
	return func(resp kmsg.Response, v *acl.View) {
		dr := resp.(*kmsg.DescribeGroupsResponse)
		for i := range dr.Groups {
			g := &dr.Groups[i]
			g.AuthorizedOperations = authorizedOps(g.AuthorizedOperations, v.Allowed(acl.Group, g.Group))
		}
		for _, g := range denied {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, groupDenied
			dr.Groups = append(dr.Groups, rg)
		}
	}, len(keep) == 0 && len(denied) > 0
}

// listGroups: the groups the subject may describe (all of them with DESCRIBE on the cluster),
// as Kafka lists them.
func listGroups(_ *filter.Exchange, v *acl.View) (pending, bool) {
	if !v.Checks(acl.Group) || v.Checks(acl.Cluster) && v.Allows(acl.Cluster, clusterName, acl.Describe) {
		return nil, false
	}
	return func(resp kmsg.Response, v *acl.View) {
		lr := resp.(*kmsg.ListGroupsResponse)
		lr.Groups, _ = split(lr.Groups, func(g *kmsg.ListGroupsResponseGroup) bool { return v.Allows(acl.Group, g.Group, acl.Describe) })
	}, false
}

// deleteGroups: DELETE on each group.
func deleteGroups(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.DeleteGroupsRequest)
	keep, denied := split(r.Groups, func(g *string) bool { return v.Allows(acl.Group, *g, acl.Delete) })
	if len(denied) == 0 {
		return nil, false
	}
	r.Groups = keep
	return func(resp kmsg.Response, _ *acl.View) {
		dr := resp.(*kmsg.DeleteGroupsResponse)
		for _, g := range denied {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, groupDenied
			dr.Groups = append(dr.Groups, rg)
		}
	}, len(keep) == 0
}

// consumerGroupHeartbeat: READ on the group, DESCRIBE on each subscribed topic (KIP-848).
func consumerGroupHeartbeat(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !v.Allows(acl.Group, r.Group, acl.Read) {
		return answerWith(groupDenied)
	}
	for _, t := range r.SubscribedTopicNames {
		if !v.Allows(acl.Topic, t, acl.Describe) {
			return answerWith(topicDenied)
		}
	}
	return nil, false
}

// consumerGroupDescribe: DESCRIBE on each group; a group whose members are assigned or
// subscribed to a topic the subject may not describe gets TOPIC_AUTHORIZATION_FAILED, as in
// Kafka.
func consumerGroupDescribe(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.ConsumerGroupDescribeRequest)
	keep, denied := split(r.Groups, func(g *string) bool { return v.Allows(acl.Group, *g, acl.Describe) })
	r.Groups = keep
	return func(resp kmsg.Response, v *acl.View) {
		cr := resp.(*kmsg.ConsumerGroupDescribeResponse)
		for i := range cr.Groups {
			g := &cr.Groups[i]
			g.AuthorizedOperations = authorizedOps(g.AuthorizedOperations, v.Allowed(acl.Group, g.Group))
			if !membersDescribable(g, v) {
				d := kmsg.NewConsumerGroupDescribeResponseGroup()
				d.Group, d.ErrorCode = g.Group, topicDenied
				*g = d
			}
		}
		for _, g := range denied {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, groupDenied
			cr.Groups = append(cr.Groups, rg)
		}
	}, len(keep) == 0 && len(denied) > 0
}

func membersDescribable(g *kmsg.ConsumerGroupDescribeResponseGroup, v *acl.View) bool {
	for _, m := range g.Members {
		for _, t := range m.SubscribedTopics {
			if !v.Allows(acl.Topic, t, acl.Describe) {
				return false
			}
		}
		for _, a := range [][]kmsg.AssignmentTopicPartition{m.Assignment.TopicPartitions, m.TargetAssignment.TopicPartitions} {
			for _, t := range a {
				if !v.Allows(acl.Topic, t.Topic, acl.Describe) {
					return false
				}
			}
		}
	}
	return true
}
