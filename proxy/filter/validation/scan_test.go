package validation

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

var jsonCases = []string{
	``, ` `, `0`, `-0`, `-`, `01`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-1.5e10`,
	`true`, `tru`, `truee`, `false`, `null`, `nul`, `NULL`,
	`""`, `"`, `"a`, `"\"`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\x"`, `"\u00e9"`, `"\u00g9"`, `"\u12"`,
	`"\ud83d\ude00"`, `"\ud83d"`, "\"\t\"", "\"\x7f\"", "\"é\"", "\"\xff\"", "\"\xc3\"", "\"\xed\xa0\x80\"",
	`[]`, `[`, `]`, `[1,]`, `[,1]`, `[1 2]`, `[1,2]`, ` [ 1 , 2 ] `, `[[]]`, `[[]`, `[]]`,
	`{}`, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1}`, `{"a":1,}`, `{a:1}`, `{"a" : 1 , "b" : [ ] }`, `{1:1}`,
	`{"a":1]`, `[1}`, `{"a":{"b":{"c":[1,{"d":null}]}}}`, `1 2`, `{} {}`, `"a" x`, "\ufeff1", "1\x00",
	`[1,2,3]x`, `[-]`, `[-a]`, `[+1]`, `[0x1]`, `[Infinity]`, `[NaN]`,
}

// checkJSON agrees with encoding/json on what is JSON, except that it also requires UTF-8.
func TestCheckJSONAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range jsonCases {
		want := json.Valid([]byte(c)) && utf8.ValidString(c)
		if err := checkJSON([]byte(c), false); (err == nil) != want {
			t.Errorf("%q: %v, want valid %v", c, err, want)
		}
	}
}

func TestCheckJSONErrors(t *testing.T) {
	for in, want := range map[string]string{
		``:              "unexpected end of JSON input, looking for a value at byte 0",
		`not json`:      "invalid character 'o' looking for \"null\" at byte 1",
		`[1,]`:          "invalid character ']' looking for a value at byte 3",
		`{"a" 1}`:       "invalid character '1' looking for ':' after an object member's name at byte 5",
		`[1 2]`:         "invalid character '2' looking for ',' or ']' after an array element at byte 3",
		`{"a":1 "b":2}`: "invalid character '\"' looking for ',' or '}' after an object member at byte 7",
		"\"\x01\"":      "control character '\\x01' in a string at byte 1",
		"\"\xff\"":      "invalid UTF-8 in a string at byte 1",
		`"\q"`:          "invalid escape 'q' in a string at byte 2",
		`{} x`:          "invalid character 'x' after the top-level value at byte 3",
		"[\x80]":        "invalid character byte 0x80 looking for a value at byte 1",
		`"abc`:          "unexpected end of JSON input, looking for the end of a string at byte 4",
	} {
		if err := checkJSON([]byte(in), false); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// refDuplicate is a slow reference: whether some object of a valid JSON text names a member
// twice.
func refDuplicate(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type level struct {
		names  map[string]bool
		object bool
		key    bool // the next string token is a name
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil {
			return false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.object && top.key {
			if top.names[s] {
				return true
			}
			top.names[s] = true
			top.key = false
			continue
		}
		if top != nil && top.object {
			top.key = true // after a member's value
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{names: map[string]bool{}, object: true, key: true})
		case json.Delim('['):
			stack = append(stack, &level{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].key = true
			}
		}
	}
}

// FuzzCheckJSON: checkJSON agrees with encoding/json (for UTF-8 input nested at most maxDepth
// deep), and validateObjectKeysUnique with a map-based reference.
func FuzzCheckJSON(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c))
	}
	f.Add([]byte(`{"a":1,"\u0061":2}`))
	f.Add([]byte(`[{"a":{"b":1,"c":2},"d":{"b":1}},{"a":1}]`))
	f.Add([]byte(`{"\ud800":1,"\udfff":2,"\ufffd":3}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := checkJSON(b, false)
		if utf8.Valid(b) && bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) <= maxDepth {
			if want := json.Valid(b); (err == nil) != want {
				t.Fatalf("%q: %v, encoding/json says valid %v", b, err, want)
			}
		}
		uerr := checkJSON(b, true)
		if err != nil {
			if uerr == nil {
				t.Fatalf("%q: valid with unique keys only", b)
			}
			return
		}
		if dup := refDuplicate(b); (uerr != nil) != dup || (dup && !strings.Contains(uerr.Error(), "appears twice")) {
			t.Fatalf("%q: %v, reference says duplicate %v", b, uerr, dup)
		}
	})
}
