package acl

import (
	"fmt"
	"testing"
)

const matcherRules = imports + `
deny User with name = "alice" to * Topic with name = "payments-received";
deny User with name like "temp-*" to WRITE Topic with name *;
deny User with name = "carol" to READ Topic with name like "orders-secret*";
allow User with name = "alice" to * Topic with name like "payments-*";
allow User with name like "*" to {READ, WRITE} Topic with name like "orders-*";
allow User with name in {"bob", "carol"} to DESCRIBE Topic with name in {"audit", "ledger"};
allow User with name like "temp-*" to * Topic with name like "temp";
allow User with name = "dave" to READ Topic with name matching /team-[a-z]+/;
allow User with name = "dave" to ALTER_CONFIGS Topic with name like "ord*";
allow User with name = "erin" to READ Group with name = "g1";
allow User with name = "erin" to WRITE TxnId with name like "tx-*";
otherwise deny;
`

func TestMatcher(t *testing.T) {
	r, err := Parse("m.acl", []byte(matcherRules))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		user string
		typ  Type
		name string
		op   Op
		want bool
	}{
		{"alice", Topic, "payments-in", Write, true},
		{"alice", Topic, "payments-received", Read, false}, // deny beats allow
		{"alice", Topic, "payments-received", Describe, false},
		{"alice", Topic, "payments", Read, false}, // the prefix is "payments-"
		{"alice", Topic, "orders-1", Write, true}, // like "*": every user
		{"alice", Topic, "orders-1", Describe, true},
		{"alice", Topic, "orders-1", Delete, false},
		{"carol", Topic, "orders-secret-1", Read, false},
		{"carol", Topic, "orders-secret-1", Describe, false}, // a denied READ denies the DESCRIBE it implies (Kroxylicious)
		{"carol", Topic, "orders-secret-1", Write, true},
		{"carol", Topic, "ledger", Describe, true},
		{"carol", Topic, "ledger", Read, false},
		{"bob", Topic, "audit", Describe, true},
		{"temp-1", Topic, "temp", Read, true}, // like without '*': that name only
		{"temp-1", Topic, "temp", Write, false},
		{"temp-1", Topic, "temp2", Read, false},
		{"temp-1", Topic, "orders-2", Write, false},
		{"dave", Topic, "team-blue", Read, true},
		{"dave", Topic, "team-blue2", Read, false}, // the regex matches the whole name
		{"dave", Topic, "xteam-blue", Read, false},
		{"dave", Topic, "orders-3", DescribeConfigs, true}, // implied by ALTER_CONFIGS
		{"erin", Group, "g1", Read, true},
		{"erin", Group, "g1", Describe, true},
		{"erin", Group, "g2", Read, false},
		{"alice", Group, "g1", Read, false},
		{"erin", TransactionalID, "tx-1", Write, true},
		{"erin", TransactionalID, "tx-1", Describe, true},
		{"erin", TransactionalID, "ty-1", Describe, false},
		{"erin", Cluster, "kafka-cluster", Alter, true}, // no rule names the cluster: not checked
		{"", Topic, "orders-1", Read, false},            // the anonymous subject matches no rule, not even like "*"
		{"", Cluster, "kafka-cluster", Describe, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s %s %s %s", tc.user, tc.op, tc.typ, tc.name), func(t *testing.T) {
			if got := r.For(tc.user).Allows(tc.typ, tc.name, tc.op); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMatcherPrefixes: every prefix rule that matches a name counts, not only the longest (a
// name under "a" and "ab" gets both rules' operations).
func TestMatcherPrefixes(t *testing.T) {
	r, err := Parse("p.acl", []byte(imports+`
allow User with name like "u*" to READ Topic with name like "a*";
allow User with name like "us*" to WRITE Topic with name like "ab*";
allow User with name like "user*" to DELETE Topic with name like "abc*";
otherwise deny;`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user, topic string
		want        Ops
	}{
		{"user", "abcd", opsOf(Read, Write, Delete, Describe)},
		{"user", "ac", opsOf(Read, Describe)},
		{"us", "abcd", opsOf(Read, Write, Describe)},
		{"x", "abcd", 0},
		{"user", "", 0},
	} {
		if got := r.For(tc.user).Allowed(Topic, tc.topic); got != tc.want {
			t.Errorf("%s on %s: %s, want %s", tc.user, tc.topic, opList(got), opList(tc.want))
		}
	}
}

func BenchmarkAllowed100Rules(b *testing.B) {
	src := imports
	for i := range 50 {
		src += fmt.Sprintf("deny User with name = \"u%d\" to WRITE Topic with name like \"secret-%d-*\";\n", i, i)
	}
	for i := range 50 {
		src += fmt.Sprintf("allow User with name like \"*\" to {READ, WRITE} Topic with name like \"orders-%d-*\";\n", i)
	}
	r, err := Parse("b.acl", []byte(src+"otherwise deny;"))
	if err != nil {
		b.Fatal(err)
	}
	v := r.For("CN=alice")
	for b.Loop() {
		if !v.Allows(Topic, "orders-7-x", Write) {
			b.Fatal("denied")
		}
	}
}
