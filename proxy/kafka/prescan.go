package kafka

// Pre-scanning requests before kmsg decodes them. kmsg (v1.15.0) checks array and string
// lengths against the bytes left but reads a tagged-field section as "count, then count times a
// key, a size and the bytes", looping on after the frame runs out (decode.go): a 25-byte
// ApiVersions v3 request whose tag count is 2^32-1 costs tens of seconds of CPU. PrescanRequest
// walks a request body along a small schema of its fields and checks every count and length,
// tagged-field counts included, against the bytes left, in at most a few steps per byte and
// without allocating; a body it accepts is one kmsg decodes without error and in time linear in
// its length.
//
// A schema is a table of fields, each with the versions that carry it, read the way kmsg's
// generated readFrom reads them (github.com/twmb/franz-go/pkg/kmsg, generated.go). Strings,
// bytes and arrays are compact (uvarint length+1) in flexible versions and int16 / int32
// lengths otherwise; every struct of a flexible version ends in a tagged-field section. Adding a
// key is writing its table in prescanSchemas; TestPrescanMatchesKmsg encodes kmsg requests of
// every version of every key in it and fails on a field the table misses.

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// prescanKind is what a schema field holds.
type prescanKind uint8

const (
	pkFixed      prescanKind = iota + 1 // size bytes: int8/16/32/64, bool, uuid
	pkString                            // string: int16 length, compact when flexible
	pkNullString                        // nullable string: also -1 (0 when compact) for null
	pkBytes                             // bytes: int32 length, compact when flexible
	pkNullBytes                         // nullable bytes, records
	pkArray                             // array of elem[0], a field of the kinds above
	pkStructs                           // array of structs of the fields elem
	pkStruct                            // one struct of the fields elem (tagged fields' content)
	pkTagged                            // a tagged field: tag, content elem[0]
)

// prescanAny is the upper end of a field's versions when it has none.
const prescanAny int16 = 1<<15 - 1

// prescanField is one field of a schema.
type prescanField struct {
	kind     prescanKind
	size     uint8  // pkFixed
	tag      uint32 // pkTagged
	from, to int16  // versions that carry the field; kmsg reads known tagged fields at every flexible version
	elem     []prescanField
}

// prescanSchema is a request body of one API key.
type prescanSchema struct {
	min, max int16 // versions known
	fields   []prescanField
}

func pFixed(size uint8, from, to int16) prescanField {
	return prescanField{kind: pkFixed, size: size, from: from, to: to}
}
func pInt8(from, to int16) prescanField  { return pFixed(1, from, to) }
func pBool(from, to int16) prescanField  { return pFixed(1, from, to) }
func pInt16(from, to int16) prescanField { return pFixed(2, from, to) }
func pInt32(from, to int16) prescanField { return pFixed(4, from, to) }
func pInt64(from, to int16) prescanField { return pFixed(8, from, to) }
func pUUID(from, to int16) prescanField  { return pFixed(16, from, to) }
func pString(from, to int16) prescanField {
	return prescanField{kind: pkString, from: from, to: to}
}
func pNullString(from, to int16) prescanField {
	return prescanField{kind: pkNullString, from: from, to: to}
}
func pBytes(from, to int16) prescanField { return prescanField{kind: pkBytes, from: from, to: to} }
func pNullBytes(from, to int16) prescanField {
	return prescanField{kind: pkNullBytes, from: from, to: to}
}
func pArray(from, to int16, elem prescanField) prescanField {
	return prescanField{kind: pkArray, from: from, to: to, elem: []prescanField{elem}}
}
func pStructs(from, to int16, fields ...prescanField) prescanField {
	return prescanField{kind: pkStructs, from: from, to: to, elem: fields}
}
func pStruct(fields ...prescanField) prescanField {
	return prescanField{kind: pkStruct, from: 0, to: prescanAny, elem: fields}
}
func pTagged(tag uint32, content prescanField) prescanField {
	return prescanField{kind: pkTagged, tag: tag, from: 0, to: prescanAny, elem: []prescanField{content}}
}

// prescanSchemas are the request bodies PrescanRequest knows, field by field as kmsg v1.15.0
// reads them (comments name Kafka's fields).
var prescanSchemas = map[kmsg.Key]*prescanSchema{
	kmsg.Produce: {min: 0, max: 13, fields: []prescanField{
		pNullString(3, prescanAny), // TransactionalId
		pInt16(0, prescanAny),      // Acks
		pInt32(0, prescanAny),      // TimeoutMs
		pStructs(0, prescanAny, // TopicData
			pString(0, 12),        // Name
			pUUID(13, prescanAny), // TopicId
			pStructs(0, prescanAny, // PartitionData
				pInt32(0, prescanAny),     // Index
				pNullBytes(0, prescanAny), // Records
			),
		),
	}},
	kmsg.Fetch: {min: 0, max: 18, fields: []prescanField{
		pInt32(0, 14),         // ReplicaId (a tagged ReplicaState from v15)
		pInt32(0, prescanAny), // MaxWaitMs
		pInt32(0, prescanAny), // MinBytes
		pInt32(3, prescanAny), // MaxBytes
		pInt8(4, prescanAny),  // IsolationLevel
		pInt32(7, prescanAny), // SessionId
		pInt32(7, prescanAny), // SessionEpoch
		pStructs(0, prescanAny, // Topics
			pString(0, 12),        // Topic
			pUUID(13, prescanAny), // TopicId
			pStructs(0, prescanAny, // Partitions
				pInt32(0, prescanAny),             // Partition
				pInt32(9, prescanAny),             // CurrentLeaderEpoch
				pInt64(0, prescanAny),             // FetchOffset
				pInt32(12, prescanAny),            // LastFetchedEpoch
				pInt64(5, prescanAny),             // LogStartOffset
				pInt32(0, prescanAny),             // PartitionMaxBytes
				pTagged(0, pUUID(0, prescanAny)),  // ReplicaDirectoryId (v17+ in Kafka)
				pTagged(1, pInt64(0, prescanAny)), // HighWatermark
			),
		),
		pStructs(7, prescanAny, // ForgottenTopicsData
			pString(7, 12),        // Topic
			pUUID(13, prescanAny), // TopicId
			pArray(0, prescanAny, pInt32(0, prescanAny)), // Partitions
		),
		pString(11, prescanAny),                // RackId
		pTagged(0, pNullString(0, prescanAny)), // ClusterId
		pTagged(1, pStruct( // ReplicaState
			pInt32(0, prescanAny), // ReplicaId
			pInt64(0, prescanAny), // ReplicaEpoch
		)),
	}},
	kmsg.ListOffsets: {min: 0, max: 11, fields: []prescanField{
		pInt32(0, prescanAny), // ReplicaId
		pInt8(2, prescanAny),  // IsolationLevel
		pStructs(0, prescanAny, // Topics
			pString(0, prescanAny), // Name
			pStructs(0, prescanAny, // Partitions
				pInt32(0, prescanAny), // PartitionIndex
				pInt32(4, prescanAny), // CurrentLeaderEpoch
				pInt64(0, prescanAny), // Timestamp
				pInt32(0, 0),          // MaxNumOffsets
			),
		),
		pInt32(10, prescanAny), // TimeoutMs
	}},
	kmsg.Metadata: {min: 0, max: 13, fields: []prescanField{
		pStructs(0, prescanAny, // Topics (null: all topics)
			pUUID(10, prescanAny),       // TopicId
			pString(0, 9),               // Name
			pNullString(10, prescanAny), // Name
		),
		pBool(4, prescanAny), // AllowAutoTopicCreation
		pBool(8, 10),         // IncludeClusterAuthorizedOperations
		pBool(8, prescanAny), // IncludeTopicAuthorizedOperations
	}},
	kmsg.OffsetCommit: {min: 0, max: 10, fields: []prescanField{
		pString(0, prescanAny),     // GroupId
		pInt32(1, prescanAny),      // GenerationIdOrMemberEpoch
		pString(1, prescanAny),     // MemberId
		pNullString(7, prescanAny), // GroupInstanceId
		pInt64(2, 4),               // RetentionTimeMs
		pStructs(0, prescanAny, // Topics
			pString(0, 9),         // Name
			pUUID(10, prescanAny), // TopicId
			pStructs(0, prescanAny, // Partitions
				pInt32(0, prescanAny),      // PartitionIndex
				pInt64(0, prescanAny),      // CommittedOffset
				pInt64(1, 1),               // CommitTimestamp
				pInt32(6, prescanAny),      // CommittedLeaderEpoch
				pNullString(0, prescanAny), // CommittedMetadata
			),
		),
	}},
	kmsg.OffsetFetch: {min: 0, max: 10, fields: []prescanField{
		pString(0, 7), // GroupId
		pStructs(0, 7, // Topics (null from v2: all topics)
			pString(0, prescanAny),                       // Name
			pArray(0, prescanAny, pInt32(0, prescanAny)), // PartitionIndexes
		),
		pStructs(8, prescanAny, // Groups
			pString(0, prescanAny),     // GroupId
			pNullString(9, prescanAny), // MemberId
			pInt32(9, prescanAny),      // MemberEpoch
			pStructs(0, prescanAny, // Topics
				pString(8, 9),         // Name
				pUUID(10, prescanAny), // TopicId
				pArray(0, prescanAny, pInt32(0, prescanAny)), // PartitionIndexes
			),
		),
		pBool(7, prescanAny), // RequireStable
	}},
	kmsg.FindCoordinator: {min: 0, max: 6, fields: []prescanField{
		pString(0, 3),        // Key
		pInt8(1, prescanAny), // KeyType
		pArray(4, prescanAny, pString(0, prescanAny)), // CoordinatorKeys
	}},
	kmsg.JoinGroup: {min: 0, max: 9, fields: []prescanField{
		pString(0, prescanAny),     // GroupId
		pInt32(0, prescanAny),      // SessionTimeoutMs
		pInt32(1, prescanAny),      // RebalanceTimeoutMs
		pString(0, prescanAny),     // MemberId
		pNullString(5, prescanAny), // GroupInstanceId
		pString(0, prescanAny),     // ProtocolType
		pStructs(0, prescanAny, // Protocols
			pString(0, prescanAny), // Name
			pBytes(0, prescanAny),  // Metadata
		),
		pNullString(8, prescanAny), // Reason
	}},
	kmsg.Heartbeat: {min: 0, max: 4, fields: []prescanField{
		pString(0, prescanAny),     // GroupId
		pInt32(0, prescanAny),      // GenerationId
		pString(0, prescanAny),     // MemberId
		pNullString(3, prescanAny), // GroupInstanceId
	}},
	kmsg.LeaveGroup: {min: 0, max: 5, fields: []prescanField{
		pString(0, prescanAny), // GroupId
		pString(0, 2),          // MemberId
		pStructs(3, prescanAny, // Members
			pString(0, prescanAny),     // MemberId
			pNullString(0, prescanAny), // GroupInstanceId
			pNullString(5, prescanAny), // Reason
		),
	}},
	kmsg.SyncGroup: {min: 0, max: 5, fields: []prescanField{
		pString(0, prescanAny),     // GroupId
		pInt32(0, prescanAny),      // GenerationId
		pString(0, prescanAny),     // MemberId
		pNullString(3, prescanAny), // GroupInstanceId
		pNullString(5, prescanAny), // ProtocolType
		pNullString(5, prescanAny), // ProtocolName
		pStructs(0, prescanAny, // Assignments
			pString(0, prescanAny), // MemberId
			pBytes(0, prescanAny),  // Assignment
		),
	}},
	kmsg.DescribeGroups: {min: 0, max: 6, fields: []prescanField{
		pArray(0, prescanAny, pString(0, prescanAny)), // Groups
		pBool(3, prescanAny),                          // IncludeAuthorizedOperations
	}},
	kmsg.ListGroups: {min: 0, max: 5, fields: []prescanField{
		pArray(4, prescanAny, pString(0, prescanAny)), // StatesFilter
		pArray(5, prescanAny, pString(0, prescanAny)), // TypesFilter
	}},
	kmsg.SASLHandshake: {min: 0, max: 1, fields: []prescanField{
		pString(0, prescanAny), // Mechanism
	}},
	kmsg.ApiVersions: {min: 0, max: 5, fields: []prescanField{
		pString(3, prescanAny),     // ClientSoftwareName
		pString(3, prescanAny),     // ClientSoftwareVersion
		pNullString(5, prescanAny), // ClusterId
		pInt32(5, prescanAny),      // NodeId
	}},
	kmsg.CreateTopics: {min: 0, max: 7, fields: []prescanField{
		pStructs(0, prescanAny, // Topics
			pString(0, prescanAny), // Name
			pInt32(0, prescanAny),  // NumPartitions
			pInt16(0, prescanAny),  // ReplicationFactor
			pStructs(0, prescanAny, // Assignments
				pInt32(0, prescanAny),                        // PartitionIndex
				pArray(0, prescanAny, pInt32(0, prescanAny)), // BrokerIds
			),
			pStructs(0, prescanAny, // Configs
				pString(0, prescanAny),     // Name
				pNullString(0, prescanAny), // Value
			),
		),
		pInt32(0, prescanAny), // TimeoutMs
		pBool(1, prescanAny),  // ValidateOnly
	}},
	kmsg.DeleteTopics: {min: 0, max: 6, fields: []prescanField{
		pArray(0, 5, pString(0, prescanAny)), // TopicNames
		pStructs(6, prescanAny, // Topics
			pNullString(0, prescanAny), // Name
			pUUID(0, prescanAny),       // TopicId
		),
		pInt32(0, prescanAny), // TimeoutMs
	}},
	kmsg.DeleteRecords: {min: 0, max: 2, fields: []prescanField{
		pStructs(0, prescanAny, // Topics
			pString(0, prescanAny), // Name
			pStructs(0, prescanAny, // Partitions
				pInt32(0, prescanAny), // PartitionIndex
				pInt64(0, prescanAny), // Offset
			),
		),
		pInt32(0, prescanAny), // TimeoutMs
	}},
	kmsg.InitProducerID: {min: 0, max: 5, fields: []prescanField{
		pNullString(0, prescanAny), // TransactionalId
		pInt32(0, prescanAny),      // TransactionTimeoutMs
		pInt64(3, prescanAny),      // ProducerId
		pInt16(3, prescanAny),      // ProducerEpoch
	}},
	kmsg.OffsetForLeaderEpoch: {min: 0, max: 4, fields: []prescanField{
		pInt32(3, prescanAny), // ReplicaId
		pStructs(0, prescanAny, // Topics
			pString(0, prescanAny), // Topic
			pStructs(0, prescanAny, // Partitions
				pInt32(0, prescanAny), // Partition
				pInt32(2, prescanAny), // CurrentLeaderEpoch
				pInt32(0, prescanAny), // LeaderEpoch
			),
		),
	}},
	kmsg.AddPartitionsToTxn: {min: 0, max: 5, fields: []prescanField{
		pString(0, 3), // V3AndBelowTransactionalId
		pInt64(0, 3),  // V3AndBelowProducerId
		pInt16(0, 3),  // V3AndBelowProducerEpoch
		pStructs(0, 3, // V3AndBelowTopics
			pString(0, prescanAny),                       // Name
			pArray(0, prescanAny, pInt32(0, prescanAny)), // Partitions
		),
		pStructs(4, prescanAny, // Transactions
			pString(0, prescanAny), // TransactionalId
			pInt64(0, prescanAny),  // ProducerId
			pInt16(0, prescanAny),  // ProducerEpoch
			pBool(0, prescanAny),   // VerifyOnly
			pStructs(0, prescanAny, // Topics
				pString(0, prescanAny),                       // Name
				pArray(0, prescanAny, pInt32(0, prescanAny)), // Partitions
			),
		),
	}},
	kmsg.AddOffsetsToTxn: {min: 0, max: 4, fields: []prescanField{
		pString(0, prescanAny), // TransactionalId
		pInt64(0, prescanAny),  // ProducerId
		pInt16(0, prescanAny),  // ProducerEpoch
		pString(0, prescanAny), // GroupId
	}},
	kmsg.EndTxn: {min: 0, max: 5, fields: []prescanField{
		pString(0, prescanAny), // TransactionalId
		pInt64(0, prescanAny),  // ProducerId
		pInt16(0, prescanAny),  // ProducerEpoch
		pBool(0, prescanAny),   // Committed
	}},
	kmsg.TxnOffsetCommit: {min: 0, max: 6, fields: []prescanField{
		pString(0, prescanAny),     // TransactionalId
		pString(0, prescanAny),     // GroupId
		pInt64(0, prescanAny),      // ProducerId
		pInt16(0, prescanAny),      // ProducerEpoch
		pInt32(3, prescanAny),      // GenerationId
		pString(3, prescanAny),     // MemberId
		pNullString(3, prescanAny), // GroupInstanceId
		pStructs(0, prescanAny, // Topics
			pString(0, 5),        // Name
			pUUID(6, prescanAny), // TopicId
			pStructs(0, prescanAny, // Partitions
				pInt32(0, prescanAny),      // PartitionIndex
				pInt64(0, prescanAny),      // CommittedOffset
				pInt32(2, prescanAny),      // CommittedLeaderEpoch
				pNullString(0, prescanAny), // CommittedMetadata
			),
		),
	}},
	kmsg.DescribeConfigs: {min: 0, max: 4, fields: []prescanField{
		pStructs(0, prescanAny, // Resources
			pInt8(0, prescanAny),                          // ResourceType
			pString(0, prescanAny),                        // ResourceName
			pArray(0, prescanAny, pString(0, prescanAny)), // ConfigurationKeys
		),
		pBool(1, prescanAny), // IncludeSynonyms
		pBool(3, prescanAny), // IncludeDocumentation
	}},
	kmsg.SASLAuthenticate: {min: 0, max: 2, fields: []prescanField{
		pBytes(0, prescanAny), // AuthBytes
	}},
	kmsg.CreatePartitions: {min: 0, max: 3, fields: []prescanField{
		pStructs(0, prescanAny, // Topics
			pString(0, prescanAny), // Name
			pInt32(0, prescanAny),  // Count
			pStructs(0, prescanAny, // Assignments (null: the broker's choice)
				pArray(0, prescanAny, pInt32(0, prescanAny)), // BrokerIds
			),
		),
		pInt32(0, prescanAny), // TimeoutMs
		pBool(0, prescanAny),  // ValidateOnly
	}},
	kmsg.DeleteGroups: {min: 0, max: 3, fields: []prescanField{
		pArray(0, prescanAny, pString(0, prescanAny)), // GroupsNames
	}},
	kmsg.IncrementalAlterConfigs: {min: 0, max: 1, fields: []prescanField{
		pStructs(0, prescanAny, // Resources
			pInt8(0, prescanAny),   // ResourceType
			pString(0, prescanAny), // ResourceName
			pStructs(0, prescanAny, // Configs
				pString(0, prescanAny),     // Name
				pInt8(0, prescanAny),       // ConfigOperation
				pNullString(0, prescanAny), // Value
			),
		),
		pBool(0, prescanAny), // ValidateOnly
	}},
	kmsg.OffsetDelete: {min: 0, max: 0, fields: []prescanField{
		pString(0, prescanAny), // GroupId
		pStructs(0, prescanAny, // Topics
			pString(0, prescanAny), // Name
			pStructs(0, prescanAny, // Partitions
				pInt32(0, prescanAny), // PartitionIndex
			),
		),
	}},
	kmsg.DescribeCluster: {min: 0, max: 2, fields: []prescanField{
		pBool(0, prescanAny), // IncludeClusterAuthorizedOperations
		pInt8(1, prescanAny), // EndpointType
		pBool(2, prescanAny), // IncludeFencedBrokers
	}},
	kmsg.DescribeProducers: {min: 0, max: 0, fields: []prescanField{
		pStructs(0, prescanAny, // Topics
			pString(0, prescanAny),                       // Name
			pArray(0, prescanAny, pInt32(0, prescanAny)), // PartitionIndexes
		),
	}},
	kmsg.DescribeTransactions: {min: 0, max: 0, fields: []prescanField{
		pArray(0, prescanAny, pString(0, prescanAny)), // TransactionalIds
	}},
	kmsg.ListTransactions: {min: 0, max: 2, fields: []prescanField{
		pArray(0, prescanAny, pString(0, prescanAny)), // StateFilters
		pArray(0, prescanAny, pInt64(0, prescanAny)),  // ProducerIdFilters
		pInt64(1, prescanAny),                         // DurationFilter
		pNullString(2, prescanAny),                    // TransactionalIdPattern
	}},
	kmsg.ShareFetch: {min: 0, max: 2, fields: []prescanField{
		pNullString(0, prescanAny), // GroupId
		pNullString(0, prescanAny), // MemberId
		pInt32(0, prescanAny),      // ShareSessionEpoch
		pInt32(0, prescanAny),      // MaxWaitMs
		pInt32(0, prescanAny),      // MinBytes
		pInt32(0, prescanAny),      // MaxBytes
		pInt32(1, prescanAny),      // MaxRecords
		pInt32(1, prescanAny),      // BatchSize
		pInt8(2, prescanAny),       // ShareAcquireMode
		pBool(2, prescanAny),       // IsRenewAck
		pStructs(0, prescanAny, // Topics
			pUUID(0, prescanAny), // TopicId
			pStructs(0, prescanAny, // Partitions
				pInt32(0, prescanAny), // PartitionIndex
				pInt32(0, 0),          // PartitionMaxBytes
				pStructs(0, prescanAny, // AcknowledgementBatches
					pInt64(0, prescanAny),                       // FirstOffset
					pInt64(0, prescanAny),                       // LastOffset
					pArray(0, prescanAny, pInt8(0, prescanAny)), // AcknowledgeTypes
				),
			),
		),
		pStructs(0, prescanAny, // ForgottenTopicsData
			pUUID(0, prescanAny),                         // TopicId
			pArray(0, prescanAny, pInt32(0, prescanAny)), // Partitions
		),
	}},
	kmsg.ConsumerGroupHeartbeat: {min: 0, max: 1, fields: []prescanField{
		pString(0, prescanAny),                        // GroupId
		pString(0, prescanAny),                        // MemberId
		pInt32(0, prescanAny),                         // MemberEpoch
		pNullString(0, prescanAny),                    // InstanceId
		pNullString(0, prescanAny),                    // RackId
		pInt32(0, prescanAny),                         // RebalanceTimeoutMs
		pArray(0, prescanAny, pString(0, prescanAny)), // SubscribedTopicNames
		pNullString(1, prescanAny),                    // SubscribedTopicRegex
		pNullString(0, prescanAny),                    // ServerAssignor
		pStructs(0, prescanAny, // TopicPartitions
			pUUID(0, prescanAny),                         // TopicId
			pArray(0, prescanAny, pInt32(0, prescanAny)), // Partitions
		),
	}},
}

// HasPrescanner reports whether PrescanRequest knows key.
func HasPrescanner(key int16) bool {
	return prescanSchemas[kmsg.Key(key)] != nil
}

// PrescanRequest checks a request body (the bytes after the request header, i.e. after the
// client id and, for flexible versions, the header's tag section) of key at version: every count
// and length, tagged-field counts included, must fit in the bytes left; it does at most
// len(body) steps (times a small constant, the fields of one struct). It returns nil when kmsg
// can decode the body without unbounded work, and an error wrapping ErrMalformed otherwise, or
// when it does not know key or version (HasPrescanner). Bytes after the last field are allowed,
// as kmsg ignores them. It does not allocate unless it refuses the body.
func PrescanRequest(key, version int16, body []byte) error {
	_, err := PrescanValues(key, version, body)
	return err
}

// PrescanValues is PrescanRequest, also counting the values kmsg will make of body: its array
// elements and tagged fields. Each takes tens of bytes once decoded (a Produce partition 40, a
// Fetch partition 72, an unknown tagged field a map entry) where it took as few as 2 on the
// wire, so a caller bounds the decoded request's memory by this count, not by the body's size.
func PrescanValues(key, version int16, body []byte) (values int, err error) {
	s, err := prescan(key, version, body)
	return s.values, err
}

// prescan is PrescanRequest, returning the scanner: where the body's fields end, and the values.
func prescan(key, version int16, body []byte) (scanner, error) {
	sc := prescanSchemas[kmsg.Key(key)]
	if sc == nil {
		return scanner{}, malformed("no pre-scanner for API key %d", key)
	}
	if version < sc.min || version > sc.max {
		return scanner{}, malformed("no pre-scanner for API key %d version %d", key, version)
	}
	s := scanner{b: body}
	s.preFields(sc.fields, version, Flexible(key, version))
	if s.err != nil {
		return scanner{}, malformed("API key %d version %d request: a count, length or tagged field does not fit the body at byte %d of %d",
			key, version, s.off, len(body))
	}
	return s, nil
}

// preFields reads a struct of fields at version, and its tagged-field section when flexible.
func (s *scanner) preFields(fields []prescanField, version int16, flexible bool) {
	for i := range fields {
		f := &fields[i]
		if f.kind == pkTagged || version < f.from || version > f.to {
			continue
		}
		s.preField(f, version, flexible)
		if s.err != nil {
			return
		}
	}
	if flexible {
		s.preTags(fields, version)
	}
}

// preField reads one field.
func (s *scanner) preField(f *prescanField, version int16, flexible bool) {
	switch f.kind {
	case pkFixed:
		s.skip(int(f.size))
	case pkString, pkNullString, pkBytes, pkNullBytes:
		var n int
		switch {
		case flexible:
			n = int(s.preUvarint()) - 1
		case f.kind == pkString || f.kind == pkNullString:
			n = int(int16(s.preBig(2)))
		default:
			n = int(int32(s.preBig(4)))
		}
		if n == -1 && (f.kind == pkNullString || f.kind == pkNullBytes) {
			return
		}
		s.skip(n) // refuses n < 0 and n > bytes left
	case pkArray, pkStructs:
		var n int
		if flexible {
			n = int(s.preUvarint()) - 1
		} else {
			n = int(int32(s.preBig(4)))
		}
		if n == -1 || s.err != nil { // null, read as empty
			return
		}
		if n < 0 || n > len(s.b)-s.off { // each element takes a byte at least
			s.err = errScan
			return
		}
		s.values += n
		for ; n > 0 && s.err == nil; n-- {
			start := s.off
			if f.kind == pkArray {
				s.preField(&f.elem[0], version, flexible)
			} else {
				s.preFields(f.elem, version, flexible)
			}
			if s.off == start { // keeps the walk within len(body) elements
				s.err = errScan
			}
		}
	case pkStruct:
		s.preFields(f.elem, version, flexible)
	default:
		s.err = errScan
	}
}

// preTags reads a tagged-field section: a count, then count times a key, a size and the bytes.
// The count must fit the bytes left (a field takes two at least); the tagged fields among fields
// are read within their bytes, as kmsg decodes them, and must fill them exactly.
func (s *scanner) preTags(fields []prescanField, version int16) {
	n := s.preUvarint()
	if s.err == nil && uint64(n) > uint64(len(s.b)-s.off)/2 {
		s.err = errScan
	}
	s.values += int(n)
	for ; n > 0 && s.err == nil; n-- {
		key := s.preUvarint()
		size := int(s.preUvarint())
		start := s.off
		s.skip(size)
		if s.err != nil {
			return
		}
		end, all, known := s.off, s.b, false
		for i := range fields {
			if f := &fields[i]; f.kind == pkTagged && f.tag == key {
				known = true
				// The field's content, within its bytes (a scanner of its own would escape).
				s.b, s.off = all[:end], start
				s.preField(&f.elem[0], version, true)
				if s.err == nil && s.off != end { // kmsg would ignore the rest; a client sends none
					s.err = errScan
				}
				s.b, s.off = all, end
				if s.err != nil {
					return
				}
			}
		}
		if !known && prescanUnknownTag != nil {
			prescanUnknownTag(key)
		}
	}
}

// prescanUnknownTag, when set (by a test), is called with the key of every tagged field the
// schema does not know.
var prescanUnknownTag func(key uint32)

// preUvarint reads a uvarint as kmsg does: at most 5 bytes, fitting 32 bits.
func (s *scanner) preUvarint() uint32 {
	if s.err != nil {
		return 0
	}
	var x uint32
	for i := 0; i < 5; i++ {
		if s.off+i >= len(s.b) {
			break
		}
		c := s.b[s.off+i]
		if i == 4 {
			if c > 0x0f {
				break
			}
			s.off += 5
			return x | uint32(c)<<28
		}
		x |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			s.off += i + 1
			return x
		}
	}
	s.err = errScan
	return 0
}

// preBig reads a big-endian unsigned integer of n (2 or 4) bytes.
func (s *scanner) preBig(n int) uint32 {
	start := s.off
	s.skip(n)
	if s.err != nil {
		return 0
	}
	if n == 2 {
		return uint32(binary.BigEndian.Uint16(s.b[start:]))
	}
	return binary.BigEndian.Uint32(s.b[start:])
}
