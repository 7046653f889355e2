// Package acl is the rules language of Kroxylicious' AclAuthorizerService, parsed by a
// hand-written lexer and recursive-descent parser (no parser generator), and compiled into a
// matcher for the data path: exact names in maps, prefixes by length in maps, regular
// expressions (Go's RE2, linear in the name) compiled once.
//
// A file, as Kroxylicious reads it:
//
//	// comments: line and /* block */
//	from io.kroxylicious.filter.authorization import TopicResource as Topic, GroupResource as Group;
//	deny User with name = "mallory" to * Topic with name = "payments";
//	allow User with name like "*" to {READ, WRITE} Topic with name like "orders-*";
//	allow User with name in {"alice", "bob"} to READ Group with name matching /team-[a-z]+/;
//	otherwise deny;
//
// Imports come first, then every deny rule, then every allow rule, then `otherwise deny;`. A
// request is denied when a deny rule matches it, else allowed when an allow rule does, else
// denied. Operations imply others as in Kafka (READ, WRITE, DELETE and ALTER imply DESCRIBE;
// ALTER_CONFIGS implies DESCRIBE_CONFIGS), on deny rules as well as allow rules, as in
// Kroxylicious. A resource type that no rule names is not checked at all (Kroxylicious: the
// authorizer supports only the types its rules use). The anonymous subject has no User
// principal, so no rule matches it: it is denied every resource type the rules name.
package acl

// Type is a resource type.
type Type uint8

// The resource types, with the class names Kroxylicious imports them by.
const (
	Topic Type = iota
	Group
	TransactionalID
	Cluster
	numTypes
)

// kroxyliciousPackage is the package rules import resource types from.
const kroxyliciousPackage = "io.kroxylicious.filter.authorization"

// principalClass is the qualified name of the User principal (imported by default as User).
const principalClass = "io.kroxylicious.proxy.authentication.User"

var typeClasses = [numTypes]string{Topic: "TopicResource", Group: "GroupResource", TransactionalID: "TransactionalIdResource", Cluster: "ClusterResource"}

// String is the type's name as the docs write it.
func (t Type) String() string {
	return [...]string{"Topic", "Group", "TransactionalId", "Cluster", "?"}[min(t, numTypes)]
}

// Op is an operation on a resource.
type Op uint8

// The operations, as Kafka's AclOperation names them.
const (
	Read Op = iota
	Write
	Create
	Delete
	Alter
	Describe
	DescribeConfigs
	AlterConfigs
	ClusterAction
	IdempotentWrite
	TwoPhaseCommit
	Connect
	numOps
)

var opNames = [numOps]string{Read: "READ", Write: "WRITE", Create: "CREATE", Delete: "DELETE", Alter: "ALTER",
	Describe: "DESCRIBE", DescribeConfigs: "DESCRIBE_CONFIGS", AlterConfigs: "ALTER_CONFIGS",
	ClusterAction: "CLUSTER_ACTION", IdempotentWrite: "IDEMPOTENT_WRITE", TwoPhaseCommit: "TWO_PHASE_COMMIT", Connect: "CONNECT"}

// String is the operation's name in rules.
func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return "?"
}

// Ops is a set of operations.
type Ops uint16

// Has reports whether o is in the set.
func (s Ops) Has(o Op) bool { return s&(1<<o) != 0 }

func opsOf(ops ...Op) Ops {
	var s Ops
	for _, o := range ops {
		s |= 1 << o
	}
	return s
}

// typeOps are the operations of each resource type, as Kroxylicious' enums list them
// (TopicResource, GroupResource, TransactionalIdResource, ClusterResource); IDEMPOTENT_WRITE on
// the cluster is kafkalink's, from Kafka.
var typeOps = [numTypes]Ops{
	Topic:           opsOf(Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, AlterConfigs),
	Group:           opsOf(Read, Delete, Describe, DescribeConfigs, AlterConfigs),
	TransactionalID: opsOf(Write, Describe, TwoPhaseCommit),
	Cluster:         opsOf(Create, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, Connect),
}

// AllOps are every operation of t ("*" in a rule).
func AllOps(t Type) Ops { return typeOps[t] }

// withImplied adds the operations that those of s imply on a resource of type t.
func withImplied(t Type, s Ops) Ops {
	switch t {
	case Topic, Group:
		if s&opsOf(Read, Write, Delete, Alter) != 0 {
			s |= opsOf(Describe)
		}
		if s.Has(AlterConfigs) {
			s |= opsOf(DescribeConfigs)
		}
	case TransactionalID:
		if s.Has(Write) {
			s |= opsOf(Describe)
		}
	case Cluster:
		if s.Has(Alter) {
			s |= opsOf(Describe)
		}
		if s.Has(AlterConfigs) {
			s |= opsOf(DescribeConfigs)
		}
	}
	return s & typeOps[t]
}

func opByName(name string) (Op, bool) {
	for i, n := range opNames {
		if n == name {
			return Op(i), true
		}
	}
	return 0, false
}
