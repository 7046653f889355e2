package authorization

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/acl"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// maxKey bounds the key table; kmsg's keys are below it.
const maxKey = 128

// clusterName is the name of the cluster resource, as Kafka names it ("kafka-cluster"): rules
// about the cluster name it so, or use `*`.
const clusterName = "kafka-cluster"

// enforcement decides on one request of its key. It returns:
//   - (nil, false): the request is allowed whole, and forwarded as read;
//   - (merge, false): the request, from which the enforcement may have taken what is denied, is
//     forwarded, and merge then adds the denied parts' errors to (or takes what the subject may
//     not see from) the broker's response;
//   - (merge, true): nothing of it is allowed: the proxy answers with merge applied to an empty
//     response.
type enforcement func(x *filter.Exchange, v *acl.View) (pending, bool)

// enforcements is the decision of each key; nil: refused (see refusedKeys).
var enforcements [maxKey]enforcement

func init() {
	for k, e := range map[kmsg.Key]enforcement{
		kmsg.ApiVersions:      apiVersions,
		kmsg.SASLHandshake:    allowed,
		kmsg.SASLAuthenticate: allowed,
		// Telemetry (KIP-714) names no resource; Kafka checks nothing either.
		kmsg.GetTelemetrySubscriptions: allowed,
		kmsg.PushTelemetry:             allowed,
		// Delegation tokens are about User resources, which the rules language has no type for;
		// the broker checks them.
		kmsg.CreateDelegationToken:   allowed,
		kmsg.RenewDelegationToken:    allowed,
		kmsg.ExpireDelegationToken:   allowed,
		kmsg.DescribeDelegationToken: allowed,

		kmsg.Produce:                 produce,
		kmsg.Fetch:                   fetch,
		kmsg.ListOffsets:             listOffsets,
		kmsg.OffsetForLeaderEpoch:    offsetForLeaderEpoch,
		kmsg.DeleteRecords:           deleteRecords,
		kmsg.DescribeProducers:       describeProducers,
		kmsg.Metadata:                metadata,
		kmsg.DescribeTopicPartitions: describeTopicPartitions,
		kmsg.CreateTopics:            createTopics,
		kmsg.DeleteTopics:            deleteTopics,
		kmsg.CreatePartitions:        createPartitions,

		kmsg.JoinGroup:              groupOp(func(r kmsg.Request) string { return r.(*kmsg.JoinGroupRequest).Group }, acl.Read),
		kmsg.SyncGroup:              groupOp(func(r kmsg.Request) string { return r.(*kmsg.SyncGroupRequest).Group }, acl.Read),
		kmsg.Heartbeat:              groupOp(func(r kmsg.Request) string { return r.(*kmsg.HeartbeatRequest).Group }, acl.Read),
		kmsg.LeaveGroup:             groupOp(func(r kmsg.Request) string { return r.(*kmsg.LeaveGroupRequest).Group }, acl.Read),
		kmsg.OffsetCommit:           offsetCommit,
		kmsg.OffsetFetch:            offsetFetch,
		kmsg.OffsetDelete:           offsetDelete,
		kmsg.FindCoordinator:        findCoordinator,
		kmsg.DescribeGroups:         describeGroups,
		kmsg.ListGroups:             listGroups,
		kmsg.DeleteGroups:           deleteGroups,
		kmsg.ConsumerGroupHeartbeat: consumerGroupHeartbeat,
		kmsg.ConsumerGroupDescribe:  consumerGroupDescribe,

		kmsg.InitProducerID:       initProducerID,
		kmsg.AddPartitionsToTxn:   addPartitionsToTxn,
		kmsg.AddOffsetsToTxn:      addOffsetsToTxn,
		kmsg.EndTxn:               txnOp(func(r kmsg.Request) string { return r.(*kmsg.EndTxnRequest).TransactionalID }),
		kmsg.TxnOffsetCommit:      txnOffsetCommit,
		kmsg.DescribeTransactions: describeTransactions,
		kmsg.ListTransactions:     listTransactions,

		kmsg.DescribeConfigs:              describeConfigs,
		kmsg.AlterConfigs:                 alterConfigs,
		kmsg.IncrementalAlterConfigs:      incrementalAlterConfigs,
		kmsg.DescribeACLs:                 clusterOp(acl.Describe),
		kmsg.CreateACLs:                   createACLs,
		kmsg.DeleteACLs:                   deleteACLs,
		kmsg.DescribeCluster:              clusterOp(acl.Describe),
		kmsg.DescribeLogDirs:              describeLogDirs,
		kmsg.AlterReplicaLogDirs:          alterReplicaLogDirs,
		kmsg.ElectLeaders:                 electLeaders,
		kmsg.AlterPartitionAssignments:    clusterOp(acl.Alter),
		kmsg.ListPartitionReassignments:   clusterOp(acl.Describe),
		kmsg.DescribeClientQuotas:         clusterOp(acl.DescribeConfigs),
		kmsg.AlterClientQuotas:            alterClientQuotas,
		kmsg.DescribeUserSCRAMCredentials: clusterOp(acl.Describe),
		kmsg.AlterUserSCRAMCredentials:    alterUserSCRAMCredentials,
		kmsg.UpdateFeatures:               clusterOp(acl.Alter),
		kmsg.DescribeQuorum:               clusterOp(acl.Describe),
		kmsg.ListConfigResources:          clusterOp(acl.DescribeConfigs),
	} {
		enforcements[k] = e
	}
	// Requests brokers and controllers send each other: CLUSTER_ACTION, as Kafka checks.
	for _, k := range interBroker {
		enforcements[k] = clusterOp(acl.ClusterAction)
	}
}

// interBroker are the keys brokers and controllers send each other; each response has a
// top-level error code (TestEveryKeyHasADecision checks).
var interBroker = []kmsg.Key{kmsg.LeaderAndISR, kmsg.StopReplica, kmsg.UpdateMetadata, kmsg.ControlledShutdown,
	kmsg.Vote, kmsg.BeginQuorumEpoch, kmsg.EndQuorumEpoch, kmsg.AlterPartition, kmsg.Envelope, kmsg.FetchSnapshot,
	kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.UnregisterBroker, kmsg.AllocateProducerIDs,
	kmsg.ControllerRegistration, kmsg.AssignReplicasToDirs, kmsg.AddRaftVoter, kmsg.RemoveRaftVoter,
	kmsg.UpdateRaftVoter, kmsg.UnregisterController}

// refusedKeys are the keys the filter does not enforce yet, with why: they are taken out of
// ApiVersions and a request of one is answered with UNSUPPORTED_VERSION (Kroxylicious' filter
// refuses them too).
var refusedKeys = map[kmsg.Key]string{
	kmsg.WriteTxnMarkers:                       "inter-broker, with per-marker results the filter does not build",
	kmsg.ShareGroupHeartbeat:                   "share groups (KIP-932) are not enforced yet",
	kmsg.ShareGroupDescribe:                    "share groups (KIP-932) are not enforced yet",
	kmsg.ShareFetch:                            "share groups (KIP-932) are not enforced yet",
	kmsg.ShareAcknowledge:                      "share groups (KIP-932) are not enforced yet",
	kmsg.InitializeShareGroupState:             "share-group state RPCs are inter-broker",
	kmsg.ReadShareGroupState:                   "share-group state RPCs are inter-broker",
	kmsg.WriteShareGroupState:                  "share-group state RPCs are inter-broker",
	kmsg.DeleteShareGroupState:                 "share-group state RPCs are inter-broker",
	kmsg.ReadShareGroupStateSummary:            "share-group state RPCs are inter-broker",
	kmsg.DescribeShareGroupOffsets:             "share groups (KIP-932) are not enforced yet",
	kmsg.AlterShareGroupOffsets:                "share groups (KIP-932) are not enforced yet",
	kmsg.DeleteShareGroupOffsets:               "share groups (KIP-932) are not enforced yet",
	kmsg.StreamsGroupHeartbeat:                 "streams groups (KIP-1071) are not enforced yet",
	kmsg.StreamsGroupDescribe:                  "streams groups (KIP-1071) are not enforced yet",
	kmsg.StreamsGroupTopologyDescriptionUpdate: "streams groups (KIP-1071) are not enforced yet",
}

// allowed passes a request that names no resource the rules are about.
func allowed(*filter.Exchange, *acl.View) (pending, bool) { return nil, false }

// apiVersions passes the request, and takes the refused keys out of the response.
func apiVersions(*filter.Exchange, *acl.View) (pending, bool) {
	return func(resp kmsg.Response, _ *acl.View) {
		if r, ok := resp.(*kmsg.ApiVersionsResponse); ok {
			keepEnforced(r)
		}
	}, false
}

// namedVersions are the highest versions of keys that name topics by name: later ones name them
// by id only, which the filter cannot check, so clients are offered these at most.
var namedVersions = map[kmsg.Key]int16{kmsg.OffsetCommit: 9, kmsg.OffsetFetch: 9, kmsg.TxnOffsetCommit: 5}

// refuse answers a request of a key without enforcement with UNSUPPORTED_VERSION, when its
// response has a top-level error code.
func refuse(req kmsg.Request) (kmsg.Response, bool) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	return resp, setTopError(resp, kerr.UnsupportedVersion.Code)
}

// setTopError sets the response's top-level error code, reporting whether it has one.
func setTopError(resp kmsg.Response, code int16) bool {
	f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 {
		return false
	}
	f.SetInt(int64(code))
	return true
}

// answerWith is an answer of a top-level error.
func answerWith(code int16) (pending, bool) {
	return func(resp kmsg.Response, _ *acl.View) { setTopError(resp, code) }, true
}

// clusterOp checks op on the cluster; denied, the answer has CLUSTER_AUTHORIZATION_FAILED as its
// top-level error.
func clusterOp(op acl.Op) enforcement {
	return func(_ *filter.Exchange, v *acl.View) (pending, bool) {
		if v.Allows(acl.Cluster, clusterName, op) {
			return nil, false
		}
		return answerWith(kerr.ClusterAuthorizationFailed.Code)
	}
}

// groupOp checks op on the group a request names; denied, the answer has
// GROUP_AUTHORIZATION_FAILED as its top-level error.
func groupOp(group func(kmsg.Request) string, op acl.Op) enforcement {
	return func(x *filter.Exchange, v *acl.View) (pending, bool) {
		if v.Allows(acl.Group, group(x.Request), op) {
			return nil, false
		}
		return answerWith(kerr.GroupAuthorizationFailed.Code)
	}
}

// txnOp checks WRITE on the transactional id a request names; denied, the answer has
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED as its top-level error.
func txnOp(id func(kmsg.Request) string) enforcement {
	return func(x *filter.Exchange, v *acl.View) (pending, bool) {
		if v.Allows(acl.TransactionalID, id(x.Request), acl.Write) {
			return nil, false
		}
		return answerWith(kerr.TransactionalIDAuthorizationFailed.Code)
	}
}

// kafkaOpBits are the bits of Kafka's AclOperation codes, in which responses give a subject's
// authorized operations.
var kafkaOpBits = map[acl.Op]int32{acl.Read: 3, acl.Write: 4, acl.Create: 5, acl.Delete: 6, acl.Alter: 7,
	acl.Describe: 8, acl.ClusterAction: 9, acl.DescribeConfigs: 10, acl.AlterConfigs: 11, acl.IdempotentWrite: 12}

// authorizedOps narrows a response's authorized operations (a bit set of Kafka's AclOperation
// codes, or MinInt32 when not asked for) to those the rules allow too.
func authorizedOps(broker int32, allowed acl.Ops) int32 {
	if broker == -2147483648 {
		return broker
	}
	var mask int32
	for op, bit := range kafkaOpBits {
		if allowed.Has(op) {
			mask |= 1 << bit
		}
	}
	return broker & mask
}
