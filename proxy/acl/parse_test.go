package acl

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const imports = "from io.kroxylicious.filter.authorization import TopicResource as Topic, GroupResource as Group, TransactionalIdResource as TxnId, ClusterResource as Cluster;\n"

func TestParseGoodFiles(t *testing.T) {
	tests := map[string]struct {
		src   string
		rules int
	}{
		"the docs' outline": {src: `// Comment
from io.kroxylicious.filter.authorization import TopicResource as Topic;

deny User with name = "alice" to * Topic with name = "payments-received";
allow User with name = "alice" to * Topic with name like "payments-*";

otherwise deny;`, rules: 2},
		"only otherwise deny":                 {src: "otherwise deny;", rules: 0},
		"imports without alias":               {src: "from io.kroxylicious.filter.authorization import TopicResource;\nallow User with name = \"a\" to READ TopicResource with name = \"t\";\notherwise deny;", rules: 1},
		"the User principal imported by name": {src: "from io.kroxylicious.proxy.authentication import User as U;\n" + imports + `allow U with name = "a" to READ Topic with name *; otherwise deny;`, rules: 1},
		"operation sets, in sets, regex and block comments": {src: imports + `/* a
block */ allow User with name in {"alice", "bob"} to {READ, DESCRIBE} Group with name matching /team-[a-z]+/;
allow User with name like "svc-*" to {WRITE} TxnId with name like "*";
allow User with name * to DESCRIBE Cluster with name = "kafka-cluster";
otherwise deny;`, rules: 3},
		"keywords as names of imports": {src: "from io.kroxylicious.filter.authorization import TopicResource as name;\nallow User with name = \"a\" to READ name with name = \"t\";\notherwise deny;", rules: 1},
		"escaped quotes and stars":     {src: imports + `allow User with name = "a\"b" to READ Topic with name like "x\*";` + "\notherwise deny; // trailing comment without a newline", rules: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := Parse("rules.acl", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if r.Len() != tc.rules {
				t.Errorf("%d rules, want %d", r.Len(), tc.rules)
			}
		})
	}
}

func TestParseBadFiles(t *testing.T) {
	tests := map[string]struct {
		src, err string
	}{
		"empty":                   {src: "", err: `rules.acl:1:1: expected "allow", "deny" or "otherwise deny;", found end of file`},
		"no otherwise deny":       {src: imports + `allow User with name = "a" to READ Topic with name = "t";`, err: `rules.acl:2:58: expected "allow", "deny" or "otherwise deny;", found end of file`},
		"deny after allow":        {src: imports + "allow User with name = \"a\" to READ Topic with name = \"t\";\n  deny User with name = \"a\" to READ Topic with name = \"t\";\notherwise deny;", err: "rules.acl:3:3: deny rules must come before allow rules"},
		"missing to":              {src: imports + `allow User with name = "a" READ Topic with name = "t"; otherwise deny;`, err: `rules.acl:2:28: expected "to", found "READ"`},
		"unknown operation":       {src: imports + `allow User with name = "a" to {READ, FLY} Topic with name = "t"; otherwise deny;`, err: "rules.acl:2:38: FLY is not an operation of TopicResource (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)"},
		"operation of other type": {src: imports + `allow User with name = "a" to WRITE Group with name = "g"; otherwise deny;`, err: "rules.acl:2:31: WRITE is not an operation of GroupResource"},
		"resource not imported":   {src: `allow User with name = "a" to READ Topic with name = "t"; otherwise deny;`, err: `rules.acl:1:36: resource type "Topic" has not been imported`},
		"unknown class":           {src: "from io.kroxylicious.filter.authorization import NopeResource;\notherwise deny;", err: "rules.acl:1:50: class io.kroxylicious.filter.authorization.NopeResource was not found"},
		"duplicate import":        {src: "from io.kroxylicious.filter.authorization import TopicResource as T, GroupResource as T;\notherwise deny;", err: `rules.acl:1:87: local name "T" is already imported`},
		"matching on principals":  {src: imports + `allow User with name matching /a.*/ to READ Topic with name = "t"; otherwise deny;`, err: "rules.acl:2:22: 'matching' operation not supported on principals"},
		"bad regex":               {src: imports + `allow User with name = "a" to READ Topic with name matching /a(/; otherwise deny;`, err: "rules.acl:2:61: regex provided for 'matching' operation is not valid"},
		"star inside like":        {src: imports + `allow User with name = "a" to READ Topic with name like "a*b"; otherwise deny;`, err: "rules.acl:2:57: wildcard '*' only supported as last character in 'like'"},
		"unclosed string":         {src: imports + "allow User with name = \"a to READ", err: "rules.acl:2:24: string not closed"},
		"unclosed comment":        {src: "/* never closed\notherwise deny;", err: "rules.acl:1:1: comment not closed"},
		"stray character":         {src: "otherwise deny; #", err: "rules.acl:1:17: unexpected character '#'"},
		"text after the end":      {src: "otherwise deny; allow", err: `rules.acl:1:17: expected end of file after "otherwise deny;", found "allow"`},
		"imports after rules":     {src: imports + `allow User with name = "a" to READ Topic with name = "t"; from a import B; otherwise deny;`, err: "rules.acl:2:59: imports must come before the rules"},
		"unknown principal type":  {src: imports + `allow Group with name = "a" to READ Topic with name = "t"; otherwise deny;`, err: `rules.acl:2:7: principal type "Group" is not known`},
		"empty in set":            {src: imports + `allow User with name in {} to READ Topic with name = "t"; otherwise deny;`, err: `rules.acl:2:26: expected a string in double quotes, found '}'`},
		"several errors at once":  {src: imports + "allow User with name = \"a\" to FLY Topic with name = \"t\";\nallow User with name = \"a\" to SWIM Topic with name = \"t\";\notherwise deny;", err: "rules.acl:2:31: FLY is not an operation of TopicResource (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)\nrules.acl:3:31: SWIM"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("rules.acl", []byte(tc.src))
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Fatalf("error\n%v\nwant one starting with\n%s", err, tc.err)
			}
		})
	}
}

// TestParseLimits: oversized files, too many rules, names or regexes are refused with an error
// saying which limit, and a file as large as allowed parses in time linear in its size.
func TestParseLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString(imports)
	for i := range 1_000_000 {
		fmt.Fprintf(&b, "allow User with name = \"user-%d\" to READ Topic with name = \"topic-%d\";\n", i, i)
	}
	b.WriteString("otherwise deny;\n")
	million := b.String()
	start := time.Now()
	_, err := Parse("million.acl", []byte(million))
	t.Logf("a million rules (%d MiB): refused in %v: %v", len(million)>>20, time.Since(start), err)
	if err == nil || !strings.Contains(err.Error(), "a rules file may have at most 8388608") {
		t.Fatalf("a million-rule file: %v", err)
	}

	// As many rules as fit in the size limit: refused by the count, after reading that many.
	cut := million[:strings.Index(million[MaxFileBytes-200:], "\n")+MaxFileBytes-200+1] + "otherwise deny;\n"
	start = time.Now()
	_, err = Parse("big.acl", []byte(cut))
	t.Logf("%d bytes of rules: %v in %v", len(cut), err, time.Since(start))
	if err == nil || !strings.Contains(err.Error(), "more than 100000 rules and names") {
		t.Fatalf("too many rules: %v", err)
	}

	b.Reset()
	b.WriteString(imports)
	for i := range MaxEntries - 1 {
		fmt.Fprintf(&b, "allow User with name like \"u%d*\" to READ Topic with name like \"t%d*\";\n", i, i)
	}
	b.WriteString("otherwise deny;\n")
	start = time.Now()
	r, err := Parse("max.acl", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d prefix rules (%d bytes) parsed in %v; a view built in %v", r.Len(), b.Len(), time.Since(start), timed(func() { r.For("u12345") }))
	if !r.For("u12345").Allows(Topic, "t12345-x", Read) || r.For("u12345").Allows(Topic, "t2-x", Read) {
		t.Error("prefix rules do not match as written")
	}

	in := imports + "allow User with name in {" + strings.Repeat(`"a", "b", `, 1) + strings.Join(names(MaxEntries+1), ", ") + "} to READ Topic with name *; otherwise deny;"
	if _, err := Parse("in.acl", []byte(in)); err == nil || !strings.Contains(err.Error(), "more than 100000") {
		t.Errorf("a large in set: %v", err)
	}
	re := imports + strings.Repeat(`allow User with name * to READ Topic with name matching /a+/;`, MaxRegexRules+1) + "otherwise deny;"
	if _, err := Parse("re.acl", []byte(re)); err == nil || !strings.Contains(err.Error(), "more than 1024 'matching' rules") {
		t.Errorf("many regexes: %v", err)
	}
}

func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%q", fmt.Sprint("n", i))
	}
	return out
}

// TestParseDeepOrGarbage: nesting, long tokens and bytes that are no language fail with a
// position, without running away (the parser has no recursion that input can deepen).
func TestParseDeepOrGarbage(t *testing.T) {
	for name, src := range map[string]string{
		"deep braces":    imports + "allow User with name in " + strings.Repeat("{", 100000),
		"long ident":     strings.Repeat("a", 1<<20),
		"binary":         "\x00\xff\xfe otherwise",
		"comment opener": strings.Repeat("/*", 100000),
		"many slashes":   strings.Repeat("/", 100001),
		"only quotes":    strings.Repeat(`"`, 100001),
	} {
		_, err := Parse("g.acl", []byte(src))
		if err == nil || !strings.HasPrefix(err.Error(), "g.acl:") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(imports + `deny User with name = "m" to * Topic with name = "p"; allow User with name like "*" to {READ, WRITE} Topic with name like "o-*"; otherwise deny;`))
	f.Add([]byte(imports + `allow User with name in {"a","b"} to READ Group with name matching /g[0-9]+/; otherwise deny;`))
	f.Add([]byte("otherwise deny;"))
	f.Add([]byte(`"\`))
	f.Add([]byte("/*"))
	f.Add([]byte("from a.b import C as D, E; otherwise deny;"))
	f.Fuzz(func(t *testing.T, src []byte) {
		r, err := Parse("f.acl", src)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.acl") {
				t.Fatalf("error without the file's name: %v", err)
			}
			return
		}
		v := r.For("a")
		for ty := range numTypes {
			if v.Allowed(ty, "o-1")&^AllOps(ty) != 0 {
				t.Fatal("an operation the type does not have")
			}
		}
	})
}
