package sasl_test

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// TestCredentialStoreRoundTrip: a store written by Marshal parses back, and its lookup finds
// the credential per mechanism.
func TestCredentialStoreRoundTrip(t *testing.T) {
	s := sasl.NewCredentialStore()
	cred, err := sasl.NewScramCredential(sasl.ScramSHA512, []byte("pencil"), sasl.NewSalt(), sasl.MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set("alice", sasl.ScramSHA512, cred); err != nil {
		t.Fatal(err)
	}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "pencil") {
		t.Fatal("the store holds the password")
	}
	back, err := sasl.ParseCredentialStore(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	got, ok := back.Lookup(sasl.ScramSHA512)("alice")
	if !ok || string(got.StoredKey) != string(cred.StoredKey) || got.Iterations != cred.Iterations {
		t.Fatalf("lookup: %+v %v", got, ok)
	}
	if _, ok := back.Lookup(sasl.ScramSHA256)("alice"); ok {
		t.Fatal("alice has a SCRAM-SHA-256 credential she was not given")
	}
}

// storeDoc is a store of one user alice with a SCRAM-SHA-256 credential whose fields may be
// replaced by a JSON fragment.
func storeDoc(iterations, salt, storedKey, extra string) string {
	key := `"` + base64.StdEncoding.EncodeToString(make([]byte, 32)) + `"`
	if storedKey == "" {
		storedKey = key
	}
	return `{"users": {"alice": {"SCRAM-SHA-256": {"salt": ` + salt + `, "iterations": ` + iterations +
		`, "storedKey": ` + storedKey + `, "serverKey": ` + key + extra + `}}}}`
}

// TestParseCredentialStoreErrors: each error names the user and the field that is wrong.
func TestParseCredentialStoreErrors(t *testing.T) {
	tests := map[string]struct {
		doc  string
		want string // in the error; empty: accepted
	}{
		"valid":                  {doc: storeDoc("4096", `"c2FsdA=="`, "", "")},
		"empty store":            {doc: `{"users": {}}`},
		"too few iterations":     {doc: storeDoc("100", `"c2FsdA=="`, "", ""), want: `user "alice", SCRAM-SHA-256: iterations 100`},
		"too many iterations":    {doc: storeDoc("2000000", `"c2FsdA=="`, "", ""), want: "iterations 2000000"},
		"salt not base64":        {doc: storeDoc("4096", `"!!"`, "", ""), want: `user "alice", SCRAM-SHA-256`},
		"empty salt":             {doc: storeDoc("4096", `""`, "", ""), want: "empty salt"},
		"storedKey of SHA-512":   {doc: storeDoc("4096", `"c2FsdA=="`, `"`+base64.StdEncoding.EncodeToString(make([]byte, 64))+`"`, ""), want: "storedKey of 64 bytes"},
		"unknown field":          {doc: storeDoc("4096", `"c2FsdA=="`, "", `, "password": "x"`), want: `unknown field "password"`},
		"unknown mechanism":      {doc: `{"users": {"alice": {"SCRAM-SHA-1": {}}}}`, want: `user "alice": mechanism "SCRAM-SHA-1"`},
		"user twice":             {doc: `{"users": {"alice": {}, "alice": {}}}`, want: `user "alice"`},
		"user without mechanism": {doc: `{"users": {"alice": {}}}`, want: `user "alice" has no credential`},
		"unknown top field":      {doc: `{"people": {}}`, want: "people"},
		"not an object":          {doc: `[]`, want: "want {"},
		"trailing data":          {doc: `{"users": {}} {}`, want: "after the document"},
		"cut short":              {doc: `{"users": {"alice": `, want: "alice"},
		"empty user name":        {doc: strings.Replace(storeDoc("4096", `"c2FsdA=="`, "", ""), `"alice"`, `""`, 1), want: "the name must be"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := sasl.ParseCredentialStore([]byte(tc.doc))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// TestParseCredentialStoreUserBound: more than MaxStoreUsers users are refused.
func TestParseCredentialStoreUserBound(t *testing.T) {
	one := storeDoc("4096", `"c2FsdA=="`, "", "")
	cred := one[strings.Index(one, `{"SCRAM`) : len(one)-2]
	var b strings.Builder
	b.WriteString(`{"users": {`)
	for i := range sasl.MaxStoreUsers + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"u` + strconv.Itoa(i) + `": ` + cred)
	}
	b.WriteString(`}}`)
	if _, err := sasl.ParseCredentialStore([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "more than 100000 users") {
		t.Fatalf("error %v", err)
	}
}
