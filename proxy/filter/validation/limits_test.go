package validation

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
)

// allocated is how many bytes f allocates on the heap (all goroutines: tests here run one at
// a time).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// jsonArray is a JSON array of zeros of about n bytes: the cheapest value to send and the
// dearest to build as Go values.
func jsonArray(n int) []byte {
	b := make([]byte, 0, n)
	b = append(b, '[', '0')
	for len(b)+3 <= n {
		b = append(b, ',', '0')
	}
	for len(b) < n-1 {
		b = append(b, ' ')
	}
	return append(b, ']')
}

// valueCheck builds a configuration and returns its default rule's value check.
func valueCheck(t *testing.T, cfg string) *check {
	t.Helper()
	v, err := build([]byte(cfg), os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	return v.def[1]
}

const (
	syntaxOnly = `{"defaultRule":{"valueRule":{"syntacticallyCorrectJson":{}}}}`
	withSchema = `{"defaultRule":{"valueRule":{"syntacticallyCorrectJson":{},"jsonSchema":{"type":"array"}}}}`
)

// A value over the cap (1 MiB by default) is refused, saying the cap, before any of it is parsed.
func TestValidationRefusesAValueOverMaxBytesUnread(t *testing.T) {
	value := jsonArray(60 << 20)
	for _, cfg := range []string{syntaxOnly, withSchema} {
		c := valueCheck(t, cfg)
		var msg string
		if n := allocated(func() { msg = c.validate(value) }); n > 64<<10 {
			t.Errorf("%s: checking a %d-byte value allocated %d bytes", cfg, len(value), n)
		}
		if want := fmt.Sprintf("%d bytes, more than the rule's maxBytes (1048576)", len(value)); msg != want {
			t.Errorf("%s: %q, want %q", cfg, msg, want)
		}
	}
}

// The syntax check builds no Go values: a value of half a million elements costs nothing.
func TestValidationSyntaxCheckBuildsNoValues(t *testing.T) {
	c := valueCheck(t, syntaxOnly)
	value := jsonArray(1<<20 - 10)
	var msg string
	if n := allocated(func() { msg = c.validate(value) }); n > 16<<10 {
		t.Errorf("checking a %d-byte array allocated %d bytes", len(value), n)
	}
	if msg != "" {
		t.Errorf("a valid array: %q", msg)
	}
}

// deep is n opening brackets then n closing ones.
func deep(n int) []byte {
	return append(bytes.Repeat([]byte{'['}, n), bytes.Repeat([]byte{']'}, n)...)
}

// Nesting is bounded before any value is built, for the syntax and the schema checks.
func TestValidationRefusesDeepNesting(t *testing.T) {
	for _, cfg := range []string{syntaxOnly, withSchema} {
		c := valueCheck(t, cfg)
		if msg := c.validate(deep(128)); msg != "" {
			t.Errorf("%s: 128 deep: %q", cfg, msg)
		}
		if msg := c.validate(deep(129)); !strings.Contains(msg, "not valid JSON: arrays and objects nested more than 128 deep at byte 128") {
			t.Errorf("%s: 129 deep: %q", cfg, msg)
		}
		// Within the default maxBytes: half a million deep.
		value := deep(500_000)
		var msg string
		if n := allocated(func() { msg = c.validate(value) }); n > 16<<10 {
			t.Errorf("%s: checking %d-deep nesting allocated %d bytes", cfg, len(value)/2, n)
		}
		if !strings.Contains(msg, "nested more than 128 deep") {
			t.Errorf("%s: %q", cfg, msg)
		}
	}
	// A million deep, with the cap raised for it.
	c := valueCheck(t, `{"defaultRule":{"valueRule":{"syntacticallyCorrectJson":{},"maxBytes":4194304}}}`)
	value := deep(1_000_000)
	var msg string
	if n := allocated(func() { msg = c.validate(value) }); n > 16<<10 || !strings.Contains(msg, "nested more than 128 deep") {
		t.Errorf("a million deep: %q, allocated %d bytes", msg, n)
	}
}

// Kroxylicious' syntacticallyCorrectJson: {validateObjectKeysUnique: true} is honoured.
func TestValidationObjectKeysUnique(t *testing.T) {
	for _, cfg := range []string{
		`{"defaultRule":{"valueRule":{"syntacticallyCorrectJson":{"validateObjectKeysUnique":true}}}}`,
		`{"defaultRule":{"valueRule":{"syntacticallyCorrectJson":{"validateObjectKeysUnique":true},"jsonSchema":{"type":["object","array"]}}}}`,
	} {
		c := valueCheck(t, cfg)
		for value, want := range map[string]string{
			`{"a":1,"b":2}`:                   "",
			`{"a":{"b":1},"c":{"b":1}}`:       "",
			`[{"a":1},{"a":1}]`:               "",
			`{"a":1,"a":2}`:                   `not valid JSON: object member name "a" appears twice at byte 7`,
			`{"a":1,"\u0061":2}`:              `not valid JSON: object member name "a" appears twice at byte 7`,
			`[{"x":{"y":1,"z":2,"y":3}}]`:     `not valid JSON: object member name "y" appears twice at byte 19`,
			`{"\ud83d\ude00":1,"😀":2}`:        `not valid JSON: object member name "😀" appears twice at byte 18`,
			`{"k":1,"a":{"k":2},"b":1,"k":3}`: `not valid JSON: object member name "k" appears twice at byte 25`,
		} {
			if msg := c.validate([]byte(value)); msg != want {
				t.Errorf("%s: %s: %q, want %q", cfg, value, msg, want)
			}
		}
	}
	// Without it, duplicates pass (as in Kroxylicious).
	if msg := valueCheck(t, syntaxOnly).validate([]byte(`{"a":1,"a":2}`)); msg != "" {
		t.Errorf("without validateObjectKeysUnique: %q", msg)
	}
	// A misspelt field is refused rather than ignored.
	_, err := build([]byte(`{"defaultRule":{"valueRule":{"syntacticallyCorrectJson":{"validateObjectKeyUnique":true}}}}`), os.ReadFile)
	if err == nil || !strings.Contains(err.Error(), `unknown field "validateObjectKeyUnique"`) {
		t.Errorf("a misspelt field: %v", err)
	}
}

// A schema's $ref resolves only within its own document: a file is never read, an HTTP server
// never asked, and the error says why, in the proxy and in the operator's check.
func TestValidationSchemaLoadsNoURL(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `{"type":"string"}`)
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "string.json")
	if err := os.WriteFile(file, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, schema := range []string{
		`{"$ref":"file:///etc/passwd"}`,
		`{"$ref":"file://` + file + `"}`,
		`{"$id":"file://` + filepath.Dir(file) + `/","$ref":"string.json"}`,
		`{"properties":{"a":{"$ref":"` + srv.URL + `/string.json"}}}`,
		`{"$ref":"` + strings.Replace(srv.URL, "http:", "https:", 1) + `/string.json"}`,
		`{"$schema":"` + srv.URL + `/meta.json"}`,
		`{"$ref":"string.json"}`,
	} {
		cfg := `{"defaultRule":{"valueRule":{"jsonSchema":` + schema + `}}}`
		_, err := build([]byte(cfg), os.ReadFile)
		if err == nil || !strings.Contains(err.Error(), "loads no schema from a URL") {
			t.Errorf("%s: %v", schema, err)
		}
		err = filter.Check(Type, []byte(cfg), filter.Env{ReadFile: func(string) ([]byte, error) { return nil, os.ErrNotExist }})
		if err == nil || !strings.Contains(err.Error(), "loads no schema from a URL") {
			t.Errorf("the operator's check of %s: %v", schema, err)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the schema server was asked %d times", hits.Load())
	}
}

// The standard metaschemas are built in, and references within the schema work.
func TestValidationSchemaRefsWithinTheDocument(t *testing.T) {
	for _, meta := range []string{
		"http://json-schema.org/draft-04/schema#",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft/2020-12/schema",
	} {
		defs := "$defs"
		if strings.Contains(meta, "draft-0") {
			defs = "definitions"
		}
		c := valueCheck(t, `{"defaultRule":{"valueRule":{"jsonSchema":{"$schema":"`+meta+`",
			"`+defs+`":{"id":{"type":"integer"}},
			"properties":{"id":{"$ref":"#/`+defs+`/id"}}}}}}`)
		if msg := c.validate([]byte(`{"id":1}`)); msg != "" {
			t.Errorf("%s: %q", meta, msg)
		}
		if msg := c.validate([]byte(`{"id":"x"}`)); !strings.Contains(msg, "does not match the JSON Schema") {
			t.Errorf("%s: %q", meta, msg)
		}
	}
	// A subschema with its own $id, referred to by it.
	c := valueCheck(t, `{"defaultRule":{"valueRule":{"jsonSchema":{
		"$defs":{"n":{"$id":"urn:example:n","type":"integer"}},
		"items":{"$ref":"urn:example:n"}}}}}`)
	if msg := c.validate([]byte(`[1,2]`)); msg != "" {
		t.Errorf("$id ref: %q", msg)
	}
	if msg := c.validate([]byte(`[1,"2"]`)); !strings.Contains(msg, "does not match") {
		t.Errorf("$id ref: %q", msg)
	}
}

// Through the filter: a produced value over the cap is refused with INVALID_RECORD naming the
// record and the cap; the key has its own cap.
func TestValidationMaxBytesInAProduceRequest(t *testing.T) {
	c := chain(t, `{"rules":[{"topicNames":["orders"],"valueRule":{"syntacticallyCorrectJson":{}}},
		{"topicNames":["small"],"valueRule":{"syntacticallyCorrectJson":{},"maxBytes":8}}]}`)
	for topic, tc := range map[string]struct {
		value, want string
	}{
		"orders": {string(jsonArray(3 << 20)), "RecordValidation refused record 0 of orders-0: value: 3145728 bytes, more than the rule's maxBytes (1048576)"},
		"small":  {`[1,2,3,4]`, "RecordValidation refused record 0 of small-0: value: 9 bytes, more than the rule's maxBytes (8)"},
	} {
		forward, answer, _, err := c.Request(produceFrame(t, 9, map[string]string{topic: tc.value}))
		if err != nil || forward != nil || answer == nil {
			t.Fatalf("%s: forward %d bytes, answer %d bytes, %v", topic, len(forward), len(answer), err)
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		if err := resp.ReadFrom(answer[9:]); err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.InvalidRecord.Code || p.ErrorMessage == nil || *p.ErrorMessage != tc.want {
			t.Errorf("%s: %d %v, want %q", topic, p.ErrorCode, p.ErrorMessage, tc.want)
		}
	}
	// Within the cap: forwarded.
	in := produceFrame(t, 9, map[string]string{"orders": string(jsonArray(1 << 20)), "small": "[1,2,34]"})
	if forward, answer, _, err := c.Request(in); err != nil || answer != nil || len(forward) != len(in) {
		t.Fatalf("within the caps: forward %d bytes of %d, answer %v, %v", len(forward), len(in), answer != nil, err)
	}
}

func TestValidationMaxBytesConfig(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"defaultRule":{"valueRule":{"syntacticallyCorrectJson":{},"maxBytes":0}}}`:        "defaultRule.valueRule.maxBytes: 0: must be from 1 to 67108864",
		`{"defaultRule":{"keyRule":{"syntacticallyCorrectJson":{},"maxBytes":-1}}}`:         "defaultRule.keyRule.maxBytes: -1: must be from 1 to 67108864",
		`{"rules":[{"topicNames":["a"],"valueRule":{"maxBytes":67108865}}]}`:                "rules[0].valueRule.maxBytes: 67108865: must be from 1 to 67108864",
		`{"defaultRule":{"valueRule":{"syntacticallyCorrectJson":{},"maxBytes":"1Mi"}}}`:    "cannot unmarshal string",
		`{"defaultRule":{"valueRule":{"syntacticallyCorrectJson":{},"maxBytes":67108864}}}`: "",
	} {
		_, err := build([]byte(cfg), os.ReadFile)
		if (want == "" && err != nil) || (want != "" && (err == nil || !strings.Contains(err.Error(), want))) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
	// Keys have their own cap; a rule that checks nothing has none unless given one.
	v, err := build([]byte(`{"defaultRule":{"keyRule":{"syntacticallyCorrectJson":{},"maxBytes":3},"valueRule":{"allowNulls":false}},
		"rules":[{"topicNames":["capped"],"valueRule":{"maxBytes":3}}]}`), os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	big := jsonArray(2 << 20)
	for _, tc := range []struct {
		c     *check
		value []byte
		want  string
	}{
		{v.def[0], []byte(`"a"`), ""},
		{v.def[0], []byte(`[1]`), ""},
		{v.def[0], []byte(`"ab"`), "4 bytes, more than the rule's maxBytes (3)"},
		{v.def[1], big, ""},
		{v.topics["capped"][1], []byte("abc"), ""},
		{v.topics["capped"][1], []byte("abcd"), "4 bytes, more than the rule's maxBytes (3)"},
	} {
		if msg := tc.c.validate(tc.value); msg != tc.want {
			t.Errorf("%.20s: %q, want %q", tc.value, msg, tc.want)
		}
	}
}
