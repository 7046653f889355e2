package authorization

import (
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/acl"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// tableRules: root may do everything on every type; alice may do everything on resources
// named "ok" only. Every type is named, so every type is checked.
const tableRules = `from io.kroxylicious.filter.authorization import TopicResource as Topic, GroupResource as Group, TransactionalIdResource as TxnId, ClusterResource as Cluster;
allow User with name = "root" to * Topic with name *;
allow User with name = "root" to * Group with name *;
allow User with name = "root" to * TxnId with name *;
allow User with name = "root" to * Cluster with name *;
allow User with name = "alice" to * Topic with name = "ok";
allow User with name = "alice" to * Group with name = "ok";
allow User with name = "alice" to * TxnId with name = "ok";
otherwise deny;
`

var (
	clusterDeniedCode = kerr.ClusterAuthorizationFailed.Code
	unsupported       = kerr.UnsupportedVersion.Code
)

// keyCase is what the table knows of a key: a request naming resources called name (at
// version, when set), and the error code a subject denied them gets.
type keyCase struct {
	version int16
	req     func(name string) kmsg.Request
	code    int16
}

func named[T any](fill func(r *T, name string)) func(string) kmsg.Request {
	return func(name string) kmsg.Request {
		r := new(T)
		reflect.ValueOf(r).MethodByName("Default").Call(nil)
		fill(r, name)
		return any(r).(kmsg.Request)
	}
}

func empty(key kmsg.Key) func(string) kmsg.Request {
	return func(string) kmsg.Request { return kmsg.RequestForKey(key.Int16()) }
}

// keyCases: each key the filter enforces, with a request naming a resource and the error a
// denied subject gets. TestEveryKeyHasADecision makes a new key fail until it is listed here or
// in refusedKeys.
var keyCases = map[kmsg.Key]keyCase{
	kmsg.Produce: {req: named(func(r *kmsg.ProduceRequest, n string) {
		r.Topics = []kmsg.ProduceRequestTopic{{Topic: n, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0}}}}
	}), code: topicDenied},
	kmsg.Fetch: {version: 12, req: named(func(r *kmsg.FetchRequest, n string) {
		r.Topics = []kmsg.FetchRequestTopic{{Topic: n, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0}}}}
	}), code: topicDenied},
	kmsg.ListOffsets: {req: named(func(r *kmsg.ListOffsetsRequest, n string) {
		r.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: n, Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0}}}}
	}), code: topicDenied},
	kmsg.OffsetForLeaderEpoch: {req: named(func(r *kmsg.OffsetForLeaderEpochRequest, n string) {
		r.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: n, Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0}}}}
	}), code: topicDenied},
	kmsg.DeleteRecords: {req: named(func(r *kmsg.DeleteRecordsRequest, n string) {
		r.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: n, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0}}}}
	}), code: topicDenied},
	kmsg.DescribeProducers: {req: named(func(r *kmsg.DescribeProducersRequest, n string) {
		r.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: n, Partitions: []int32{0}}}
	}), code: topicDenied},
	kmsg.CreateTopics: {req: named(func(r *kmsg.CreateTopicsRequest, n string) {
		r.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: n}}
	}), code: topicDenied},
	kmsg.DeleteTopics: {version: 5, req: named(func(r *kmsg.DeleteTopicsRequest, n string) { r.TopicNames = []string{n} }), code: topicDenied},
	kmsg.CreatePartitions: {req: named(func(r *kmsg.CreatePartitionsRequest, n string) {
		r.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: n}}
	}), code: topicDenied},
	kmsg.Metadata: {req: named(func(r *kmsg.MetadataRequest, n string) {
		r.Topics = []kmsg.MetadataRequestTopic{{Topic: &n}}
	}), code: topicDenied},
	kmsg.DescribeTopicPartitions: {req: named(func(r *kmsg.DescribeTopicPartitionsRequest, n string) {
		r.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: n}}
	}), code: topicDenied},

	kmsg.JoinGroup:  {req: named(func(r *kmsg.JoinGroupRequest, n string) { r.Group = n }), code: groupDenied},
	kmsg.SyncGroup:  {req: named(func(r *kmsg.SyncGroupRequest, n string) { r.Group = n }), code: groupDenied},
	kmsg.Heartbeat:  {req: named(func(r *kmsg.HeartbeatRequest, n string) { r.Group = n }), code: groupDenied},
	kmsg.LeaveGroup: {req: named(func(r *kmsg.LeaveGroupRequest, n string) { r.Group = n }), code: groupDenied},
	kmsg.OffsetCommit: {version: 9, req: named(func(r *kmsg.OffsetCommitRequest, n string) {
		r.Group = n
		r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "ok", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0}}}}
	}), code: groupDenied},
	kmsg.OffsetFetch:  {version: 7, req: named(func(r *kmsg.OffsetFetchRequest, n string) { r.Group = n }), code: groupDenied},
	kmsg.OffsetDelete: {req: named(func(r *kmsg.OffsetDeleteRequest, n string) { r.Group = n }), code: groupDenied},
	kmsg.FindCoordinator: {version: 3, req: named(func(r *kmsg.FindCoordinatorRequest, n string) {
		r.CoordinatorKey = n
	}), code: groupDenied},
	kmsg.DescribeGroups: {req: named(func(r *kmsg.DescribeGroupsRequest, n string) { r.Groups = []string{n} }), code: groupDenied},
	kmsg.DeleteGroups:   {req: named(func(r *kmsg.DeleteGroupsRequest, n string) { r.Groups = []string{n} }), code: groupDenied},
	kmsg.ConsumerGroupHeartbeat: {req: named(func(r *kmsg.ConsumerGroupHeartbeatRequest, n string) {
		r.Group = n
	}), code: groupDenied},
	kmsg.ConsumerGroupDescribe: {req: named(func(r *kmsg.ConsumerGroupDescribeRequest, n string) { r.Groups = []string{n} }), code: groupDenied},

	kmsg.InitProducerID: {req: named(func(r *kmsg.InitProducerIDRequest, n string) { r.TransactionalID = &n }), code: txnDenied},
	kmsg.AddPartitionsToTxn: {version: 3, req: named(func(r *kmsg.AddPartitionsToTxnRequest, n string) {
		r.TransactionalID = n
		r.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "ok", Partitions: []int32{0}}}
	}), code: txnDenied},
	kmsg.AddOffsetsToTxn: {req: named(func(r *kmsg.AddOffsetsToTxnRequest, n string) { r.TransactionalID, r.Group = n, "ok" }), code: txnDenied},
	kmsg.EndTxn:          {req: named(func(r *kmsg.EndTxnRequest, n string) { r.TransactionalID = n }), code: txnDenied},
	kmsg.TxnOffsetCommit: {version: 5, req: named(func(r *kmsg.TxnOffsetCommitRequest, n string) {
		r.TransactionalID, r.Group = n, "ok"
		r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "ok", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0}}}}
	}), code: txnDenied},
	kmsg.DescribeTransactions: {req: named(func(r *kmsg.DescribeTransactionsRequest, n string) { r.TransactionalIDs = []string{n} }), code: txnDenied},

	kmsg.DescribeConfigs: {req: named(func(r *kmsg.DescribeConfigsRequest, n string) {
		r.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: n}}
	}), code: topicDenied},
	kmsg.AlterConfigs: {req: named(func(r *kmsg.AlterConfigsRequest, n string) {
		r.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: n}}
	}), code: groupDenied},
	kmsg.IncrementalAlterConfigs: {req: named(func(r *kmsg.IncrementalAlterConfigsRequest, n string) {
		r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"}}
	}), code: clusterDeniedCode},
	kmsg.CreateACLs: {req: named(func(r *kmsg.CreateACLsRequest, _ string) {
		r.Creations = []kmsg.CreateACLsRequestCreation{{ResourceName: "x"}}
	}), code: clusterDeniedCode},
	kmsg.DeleteACLs: {req: named(func(r *kmsg.DeleteACLsRequest, _ string) {
		r.Filters = []kmsg.DeleteACLsRequestFilter{{}}
	}), code: clusterDeniedCode},
	kmsg.AlterReplicaLogDirs: {req: named(func(r *kmsg.AlterReplicaLogDirsRequest, _ string) {
		r.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{{Dir: "/d", Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "t", Partitions: []int32{0}}}}}
	}), code: clusterDeniedCode},
	kmsg.ElectLeaders: {version: 0, req: named(func(r *kmsg.ElectLeadersRequest, _ string) {
		r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	}), code: clusterDeniedCode},
	kmsg.AlterClientQuotas: {req: named(func(r *kmsg.AlterClientQuotasRequest, _ string) {
		r.Entries = []kmsg.AlterClientQuotasRequestEntry{{}}
	}), code: clusterDeniedCode},
	kmsg.AlterUserSCRAMCredentials: {req: named(func(r *kmsg.AlterUserSCRAMCredentialsRequest, _ string) {
		r.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "u"}}
	}), code: clusterDeniedCode},
}

// filteredKeys answer by taking what the subject may not see out of the response; listed
// with a response the broker might send, and what must be gone from it.
var filteredKeys = map[kmsg.Key]string{
	kmsg.ListGroups:       "groups the subject may not describe are not listed (TestResponseFiltering)",
	kmsg.ListTransactions: "transactional ids the subject may not describe are not listed (TestResponseFiltering)",
}

// passedKeys are allowed whole, with why.
var passedKeys = map[kmsg.Key]string{
	kmsg.ApiVersions:               "names no resource; the response loses the refused keys (TestApiVersionsKeepsEnforcedKeys)",
	kmsg.SASLHandshake:             "authentication, before any subject is known",
	kmsg.SASLAuthenticate:          "authentication, before any subject is known",
	kmsg.GetTelemetrySubscriptions: "KIP-714 telemetry names no resource; Kafka checks nothing",
	kmsg.PushTelemetry:             "KIP-714 telemetry names no resource; Kafka checks nothing",
	kmsg.CreateDelegationToken:     "about User resources, which the rules language has no type for",
	kmsg.RenewDelegationToken:      "about User resources, which the rules language has no type for",
	kmsg.ExpireDelegationToken:     "about User resources, which the rules language has no type for",
	kmsg.DescribeDelegationToken:   "about User resources, which the rules language has no type for",
}

// clusterKeys need an operation on the cluster and answer with a top-level error.
var clusterKeys = []kmsg.Key{kmsg.DescribeACLs, kmsg.DescribeCluster, kmsg.DescribeLogDirs, kmsg.AlterPartitionAssignments,
	kmsg.ListPartitionReassignments, kmsg.DescribeClientQuotas, kmsg.DescribeUserSCRAMCredentials, kmsg.UpdateFeatures,
	kmsg.DescribeQuorum, kmsg.ListConfigResources}

func views(t *testing.T) (alice, root *acl.View) {
	t.Helper()
	rules, err := acl.Parse("table.acl", []byte(tableRules))
	if err != nil {
		t.Fatal(err)
	}
	return rules.For("alice"), rules.For("root")
}

// TestEveryKeyHasADecision: every key kmsg knows is enforced, passed with a reason, or refused
// with a reason; an enforced key's denial carries the right error, and root passes.
func TestEveryKeyHasADecision(t *testing.T) {
	alice, root := views(t)
	for k := range int16(maxKey) {
		key := kmsg.Key(k)
		if kmsg.RequestForKey(k) == nil {
			continue
		}
		_, passed := passedKeys[key]
		_, filtered := filteredKeys[key]
		_, refused := refusedKeys[key]
		c, listed := keyCases[key]
		switch {
		case refused:
			if enforcements[k] != nil {
				t.Errorf("%s is refused and enforced", key.Name())
			}
			continue
		case enforcements[k] == nil:
			t.Errorf("%s: no decision: add an enforcement, or list it in refusedKeys with why", key.Name())
			continue
		case passed || filtered:
			continue
		case slices.Contains(clusterKeys, key) || slices.Contains(interBroker, key):
			c = keyCase{req: empty(key), code: clusterDeniedCode}
		case !listed:
			t.Errorf("%s is enforced but keyCases does not say what it checks", key.Name())
			continue
		}
		t.Run(key.Name(), func(t *testing.T) {
			codes, answered := enforce(t, c, "no", alice)
			if !slices.Contains(codes, c.code) {
				t.Errorf("denied: codes %v (answered %v), want %s", codes, answered, kerr.ErrorForCode(c.code))
			}
			if codes, _ := enforce(t, c, "ok", root); len(codes) > 0 {
				t.Errorf("allowed: codes %v", codes)
			}
		})
	}
}

// enforce runs a key's enforcement and returns the error codes the merge puts into an empty
// response (what a denied subject gets from the proxy).
func enforce(t *testing.T, c keyCase, name string, v *acl.View) (codes []int16, answered bool) {
	t.Helper()
	req := c.req(name)
	if c.version > 0 {
		req.SetVersion(c.version)
	} else {
		req.SetVersion(req.MaxVersion())
	}
	x := &filter.Exchange{Key: req.Key(), Version: req.GetVersion(), Request: req}
	merge, answered := enforcements[req.Key()](x, v)
	if merge == nil {
		return nil, answered
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	merge(resp, v)
	return errorCodes(reflect.ValueOf(resp)), answered
}

// errorCodes are the non-zero ErrorCode fields anywhere in a message.
func errorCodes(v reflect.Value) []int16 {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return errorCodes(v.Elem())
	case reflect.Slice:
		var out []int16
		for i := range v.Len() {
			out = append(out, errorCodes(v.Index(i))...)
		}
		return out
	case reflect.Struct:
		var out []int16
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Name == "ErrorCode" && v.Field(i).Int() != 0 {
				out = append(out, int16(v.Field(i).Int()))
			} else if f.IsExported() {
				out = append(out, errorCodes(v.Field(i))...)
			}
		}
		return out
	}
	return nil
}

// TestInterBrokerKeysHaveTopLevelErrors: the keys clusterOp answers carry a top-level error
// code, or their denial would look like success.
func TestInterBrokerKeysHaveTopLevelErrors(t *testing.T) {
	for _, k := range append(slices.Clone(interBroker), clusterKeys...) {
		if !setTopError(kmsg.RequestForKey(k.Int16()).ResponseKind(), 1) {
			t.Errorf("%s has no top-level error code", k.Name())
		}
	}
}

func TestRefuse(t *testing.T) {
	for k := range refusedKeys {
		resp, ok := refuse(kmsg.RequestForKey(k.Int16()))
		if codes := errorCodes(reflect.ValueOf(resp)); ok != slices.Contains(codes, unsupported) {
			t.Errorf("%s: refused with %v, ok %v", k.Name(), codes, ok)
		}
	}
}
