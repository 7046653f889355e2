package tenant

import "github.com/twmb/franz-go/pkg/kmsg"

// kind is what a request names that a tenant owns, as a bit set.
type kind uint8

const (
	topics  kind = 1 << iota // topic names
	groups                   // group ids
	txns                     // transactional ids
	cluster                  // the shared cluster itself: its id, its brokers' settings, its users
)

// rule is what the filters do with one API key: rewrite the kinds it names (those a filter
// isolates), or refuse it when it names one of them (refuse: the key leaves the ApiVersions
// answer, and a client sending it anyway is disconnected). capKind and maxVersion lower the
// versions offered when the filter isolates capKind: versions above name that kind by id only,
// which the filter cannot check.
type rule struct {
	names      kind
	refuse     bool
	capKind    kind
	maxVersion int16
	why        string
}

// rules is the audit of every API key kmsg knows (the proxy forwards exactly those; any other
// key is refused by the chain, which cannot decode it). TestEveryKeyHasARule fails on a key
// missing here.
var rules = map[int16]rule{
	kmsg.Produce.Int16():                               {names: topics | txns, why: "topic names prefixed; v13 names topics by id: ids of other tenants' topics are refused"},
	kmsg.Fetch.Int16():                                 {names: topics, why: "topic names prefixed and stripped; v13+ by id: other tenants' partitions lose their records"},
	kmsg.ListOffsets.Int16():                           {names: topics, why: "topic names"},
	kmsg.Metadata.Int16():                              {names: topics | cluster, why: "topic names; other tenants' topics removed; the cluster id is the tenant's"},
	kmsg.LeaderAndISR.Int16():                          {names: cluster, refuse: true, why: "controller to broker"},
	kmsg.StopReplica.Int16():                           {names: cluster, refuse: true, why: "controller to broker"},
	kmsg.UpdateMetadata.Int16():                        {names: cluster, refuse: true, why: "controller to broker"},
	kmsg.ControlledShutdown.Int16():                    {names: cluster, refuse: true, why: "broker to controller"},
	kmsg.OffsetCommit.Int16():                          {names: groups | topics, capKind: topics, maxVersion: 9, why: "group id and topic names; v10 names topics by id"},
	kmsg.OffsetFetch.Int16():                           {names: groups | topics, capKind: topics, maxVersion: 9, why: "group ids and topic names; v10 names topics by id"},
	kmsg.FindCoordinator.Int16():                       {names: groups | txns, why: "group or transactional id keys (a share group's key starts with its group id)"},
	kmsg.JoinGroup.Int16():                             {names: groups, why: "group id (the protocol metadata's topic names are the client's own, opaque to the broker)"},
	kmsg.Heartbeat.Int16():                             {names: groups, why: "group id"},
	kmsg.LeaveGroup.Int16():                            {names: groups, why: "group id"},
	kmsg.SyncGroup.Int16():                             {names: groups, why: "group id"},
	kmsg.DescribeGroups.Int16():                        {names: groups, why: "group ids"},
	kmsg.ListGroups.Int16():                            {names: groups, why: "other tenants' groups removed"},
	kmsg.SASLHandshake.Int16():                         {why: "names no resource"},
	kmsg.ApiVersions.Int16():                           {names: topics | groups | txns | cluster, why: "refused keys removed, versions capped"},
	kmsg.CreateTopics.Int16():                          {names: topics, why: "topic names"},
	kmsg.DeleteTopics.Int16():                          {names: topics, capKind: topics, maxVersion: 5, why: "topic names; v6 may name topics by id"},
	kmsg.DeleteRecords.Int16():                         {names: topics, why: "topic names"},
	kmsg.InitProducerID.Int16():                        {names: txns, why: "transactional id"},
	kmsg.OffsetForLeaderEpoch.Int16():                  {names: topics, why: "topic names"},
	kmsg.AddPartitionsToTxn.Int16():                    {names: txns | topics, why: "transactional ids and topic names"},
	kmsg.AddOffsetsToTxn.Int16():                       {names: txns | groups, why: "transactional id and group id"},
	kmsg.EndTxn.Int16():                                {names: txns, why: "transactional id"},
	kmsg.WriteTxnMarkers.Int16():                       {names: cluster, refuse: true, why: "broker to broker"},
	kmsg.TxnOffsetCommit.Int16():                       {names: txns | groups | topics, why: "transactional id, group id and topic names"},
	kmsg.DescribeACLs.Int16():                          {names: topics | groups | txns | cluster, refuse: true, why: "ACL resource patterns are not rewritten"},
	kmsg.CreateACLs.Int16():                            {names: topics | groups | txns | cluster, refuse: true, why: "ACL resource patterns are not rewritten"},
	kmsg.DeleteACLs.Int16():                            {names: topics | groups | txns | cluster, refuse: true, why: "ACL resource patterns are not rewritten"},
	kmsg.DescribeConfigs.Int16():                       {names: topics | groups, why: "topic and group resource names; broker configs as the broker shows them"},
	kmsg.AlterConfigs.Int16():                          {names: topics | groups, why: "topic and group resource names; broker configs as the broker authorizes them"},
	kmsg.AlterReplicaLogDirs.Int16():                   {names: topics | cluster, refuse: true, why: "the cluster operator's"},
	kmsg.DescribeLogDirs.Int16():                       {names: topics, why: "topic names; other tenants' topics removed"},
	kmsg.SASLAuthenticate.Int16():                      {why: "names no resource"},
	kmsg.CreatePartitions.Int16():                      {names: topics, why: "topic names"},
	kmsg.CreateDelegationToken.Int16():                 {why: "tokens are the principal's, not the tenant's resources"},
	kmsg.RenewDelegationToken.Int16():                  {why: "tokens are the principal's"},
	kmsg.ExpireDelegationToken.Int16():                 {why: "tokens are the principal's"},
	kmsg.DescribeDelegationToken.Int16():               {why: "tokens are the principal's"},
	kmsg.DeleteGroups.Int16():                          {names: groups, why: "group ids"},
	kmsg.ElectLeaders.Int16():                          {names: topics | cluster, refuse: true, why: "the cluster operator's (null topics: every topic)"},
	kmsg.IncrementalAlterConfigs.Int16():               {names: topics | groups, why: "topic and group resource names"},
	kmsg.AlterPartitionAssignments.Int16():             {names: topics | cluster, refuse: true, why: "the cluster operator's"},
	kmsg.ListPartitionReassignments.Int16():            {names: topics | cluster, refuse: true, why: "the cluster operator's (null topics: every topic)"},
	kmsg.OffsetDelete.Int16():                          {names: groups | topics, why: "group id and topic names"},
	kmsg.DescribeClientQuotas.Int16():                  {names: cluster, refuse: true, why: "quota entities are the cluster's"},
	kmsg.AlterClientQuotas.Int16():                     {names: cluster, refuse: true, why: "quota entities are the cluster's"},
	kmsg.DescribeUserSCRAMCredentials.Int16():          {names: cluster, refuse: true, why: "users are the cluster's"},
	kmsg.AlterUserSCRAMCredentials.Int16():             {names: cluster, refuse: true, why: "users are the cluster's"},
	kmsg.Vote.Int16():                                  {names: cluster, refuse: true, why: "controller to controller"},
	kmsg.BeginQuorumEpoch.Int16():                      {names: cluster, refuse: true, why: "controller to controller"},
	kmsg.EndQuorumEpoch.Int16():                        {names: cluster, refuse: true, why: "controller to controller"},
	kmsg.DescribeQuorum.Int16():                        {names: cluster, refuse: true, why: "the cluster operator's"},
	kmsg.AlterPartition.Int16():                        {names: cluster, refuse: true, why: "broker to controller"},
	kmsg.UpdateFeatures.Int16():                        {names: cluster, refuse: true, why: "the cluster operator's"},
	kmsg.Envelope.Int16():                              {names: topics | groups | txns | cluster, refuse: true, why: "broker to controller, wraps any request"},
	kmsg.FetchSnapshot.Int16():                         {names: cluster, refuse: true, why: "controller to controller"},
	kmsg.DescribeCluster.Int16():                       {names: cluster, why: "the cluster id is the tenant's"},
	kmsg.DescribeProducers.Int16():                     {names: topics, why: "topic names"},
	kmsg.BrokerRegistration.Int16():                    {names: cluster, refuse: true, why: "broker to controller"},
	kmsg.BrokerHeartbeat.Int16():                       {names: cluster, refuse: true, why: "broker to controller"},
	kmsg.UnregisterBroker.Int16():                      {names: cluster, refuse: true, why: "the cluster operator's"},
	kmsg.DescribeTransactions.Int16():                  {names: txns | topics, why: "transactional ids and topic names"},
	kmsg.ListTransactions.Int16():                      {names: txns, capKind: txns, maxVersion: 1, why: "other tenants' transactions removed; v2's id pattern is a regular expression on names"},
	kmsg.AllocateProducerIDs.Int16():                   {names: cluster, refuse: true, why: "broker to controller"},
	kmsg.ConsumerGroupHeartbeat.Int16():                {names: groups | topics, why: "group id and subscribed topic names; a topic regex is refused (it would match other tenants' names)"},
	kmsg.ConsumerGroupDescribe.Int16():                 {names: groups | topics, why: "group ids and topic names"},
	kmsg.ControllerRegistration.Int16():                {names: cluster, refuse: true, why: "controller to controller"},
	kmsg.GetTelemetrySubscriptions.Int16():             {why: "names no resource"},
	kmsg.PushTelemetry.Int16():                         {why: "names no resource"},
	kmsg.AssignReplicasToDirs.Int16():                  {names: cluster, refuse: true, why: "broker to controller"},
	kmsg.ListConfigResources.Int16():                   {names: topics | groups | cluster, refuse: true, why: "lists every tenant's resources; not rewritten"},
	kmsg.DescribeTopicPartitions.Int16():               {names: topics, why: "topic names and cursor; other tenants' topics removed"},
	kmsg.ShareGroupHeartbeat.Int16():                   {names: groups | topics, refuse: true, why: "share groups are not rewritten"},
	kmsg.ShareGroupDescribe.Int16():                    {names: groups | topics, refuse: true, why: "share groups are not rewritten"},
	kmsg.ShareFetch.Int16():                            {names: groups | topics, refuse: true, why: "share groups are not rewritten"},
	kmsg.ShareAcknowledge.Int16():                      {names: groups | topics, refuse: true, why: "share groups are not rewritten"},
	kmsg.AddRaftVoter.Int16():                          {names: cluster, refuse: true, why: "the cluster operator's"},
	kmsg.RemoveRaftVoter.Int16():                       {names: cluster, refuse: true, why: "the cluster operator's"},
	kmsg.UpdateRaftVoter.Int16():                       {names: cluster, refuse: true, why: "controller to controller"},
	kmsg.InitializeShareGroupState.Int16():             {names: groups | topics, refuse: true, why: "broker to share coordinator"},
	kmsg.ReadShareGroupState.Int16():                   {names: groups | topics, refuse: true, why: "broker to share coordinator"},
	kmsg.WriteShareGroupState.Int16():                  {names: groups | topics, refuse: true, why: "broker to share coordinator"},
	kmsg.DeleteShareGroupState.Int16():                 {names: groups | topics, refuse: true, why: "broker to share coordinator"},
	kmsg.ReadShareGroupStateSummary.Int16():            {names: groups | topics, refuse: true, why: "broker to share coordinator"},
	kmsg.StreamsGroupHeartbeat.Int16():                 {names: groups | topics, refuse: true, why: "streams groups are not rewritten"},
	kmsg.StreamsGroupDescribe.Int16():                  {names: groups | topics, refuse: true, why: "streams groups are not rewritten"},
	kmsg.DescribeShareGroupOffsets.Int16():             {names: groups | topics, refuse: true, why: "share groups are not rewritten"},
	kmsg.AlterShareGroupOffsets.Int16():                {names: groups | topics, refuse: true, why: "share groups are not rewritten"},
	kmsg.DeleteShareGroupOffsets.Int16():               {names: groups | topics, refuse: true, why: "share groups are not rewritten"},
	kmsg.StreamsGroupTopologyDescriptionUpdate.Int16(): {names: groups | topics, refuse: true, why: "streams groups are not rewritten"},
	kmsg.UnregisterController.Int16():                  {names: cluster, refuse: true, why: "the cluster operator's"},
}

// action is what a filter isolating kinds does with key: "rewrite", "refuse" or "pass".
func action(key int16, isolates kind) string {
	r, ok := rules[key]
	switch {
	case !ok:
		return "refuse" // a key kmsg does not know: the chain cannot decode it
	case r.names&isolates == 0:
		return "pass"
	case r.refuse:
		return "refuse"
	}
	return "rewrite"
}
