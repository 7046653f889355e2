package sasl_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// FuzzParsePlain: no panic; an accepted message's identity is one of its first two fields and
// the parser's result never holds the password.
func FuzzParsePlain(f *testing.F) {
	for _, s := range []string{"\x00alice\x00secret", "a\x00b\x00c", "\x00\x00", "", "\x00a\x00b\x00c", strings.Repeat("\x00", 9000)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		p, err := sasl.ParsePlain(msg)
		if err != nil {
			return
		}
		parts := bytes.SplitN(msg, []byte{0}, 3)
		if p.Authcid != string(parts[1]) || p.Authzid != string(parts[0]) || p.Identity() == "" {
			t.Fatalf("%q parsed as %+v", msg, p)
		}
	})
}

// FuzzScramClientFirst: no panic; an accepted message is its header and bare part, with a
// non-empty user and nonce.
func FuzzScramClientFirst(f *testing.F) {
	for _, s := range []string{"n,,n=alice,r=abc", "y,a=b=2C,n=a=3D,r=x,ext=1", "p=x,,n=a,r=b", "n,,m=x", "n,", "n,,n==,r=", strings.Repeat(",", 9000)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		c, err := sasl.ParseScramClientFirst(msg)
		if err != nil {
			return
		}
		if c.GS2Header+string(c.Bare) != string(msg) || c.User == "" || c.Nonce == "" {
			t.Fatalf("%q parsed as %+v", msg, c)
		}
		if strings.Contains(sasl.EncodeSaslName(c.User), ",") {
			t.Fatalf("escaped user %q holds a comma", c.User)
		}
	})
}

// FuzzScramClientFinal: no panic; an accepted message is what precedes the proof and the proof.
func FuzzScramClientFinal(f *testing.F) {
	for _, s := range []string{"c=biws,r=abc,p=AAAA", "c=biws,r=abc,e=1,p=AAAA", ",p=", "c=,r=,p=", "c=biws,r=a,p=" + strings.Repeat("A", 9000)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		c, err := sasl.ParseScramClientFinal(msg)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(msg, c.WithoutProof) || len(c.Proof) == 0 || c.Nonce == "" {
			t.Fatalf("%q parsed as %+v", msg, c)
		}
	})
}

// FuzzScramServer: any two client messages end in an error or, never without the password, in
// success; the server never panics.
func FuzzScramServer(f *testing.F) {
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add([]byte("n,,n=bob,r=abc"), []byte("c=biws,r=abcdef,p=AAAA"))
	f.Add([]byte("y,a=alice,n=alice,r=x"), []byte("c=eSxhPWFsaWNlLA==,r=x,p=AAAA"))
	cred, err := sasl.NewScramCredential(sasl.ScramSHA256, []byte("pencil"), []byte("salt"), sasl.MinIterations)
	if err != nil {
		f.Fatal(err)
	}
	phantom, err := sasl.NewPhantomSource(0)
	if err != nil {
		f.Fatal(err)
	}
	lookup := func(u string) (sasl.ScramCredential, bool) { return cred, u == "alice" }
	f.Fuzz(func(t *testing.T, first, final []byte) {
		srv, err := sasl.NewScramServer(sasl.ScramSHA256, lookup, phantom)
		if err != nil {
			t.Fatal(err)
		}
		if _, done, _, err := srv.Step(first); err != nil || done {
			return
		}
		if _, _, user, err := srv.Step(final); err == nil {
			t.Fatalf("authenticated %q without the password: %q then %q", user, first, final)
		}
	})
}

// FuzzOAuthBearerInitial: no panic; an accepted response has a token.
func FuzzOAuthBearerInitial(f *testing.F) {
	for _, s := range []string{"n,,\x01auth=Bearer abc.def.ghi\x01\x01", "n,a=x,\x01auth=Bearer a\x01k=v\x01\x01", "n,,\x01\x01", "\x01", "n,,\x01auth=Bearer " + strings.Repeat("a", 140000) + "\x01\x01"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		r, err := sasl.ParseOAuthBearerInitial(msg)
		if err == nil && (r.Token == "" || !bytes.Contains(msg, []byte(r.Token))) {
			t.Fatalf("%q parsed as %+v", msg, r)
		}
	})
}

// FuzzReadJWTClaims: no panic; an accepted token has a subject.
func FuzzReadJWTClaims(f *testing.F) {
	for _, s := range []string{jwt(`{"sub":"a","scope":"x y","exp":1}`), jwt(`{"sub":"a","scope":["x"]}`), "a..b", "..", jwt(strings.Repeat("[", 10000)), jwt(`{"sub":"a","exp":1e999}`)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		c, err := sasl.ReadJWTClaims(token, "", "")
		if err == nil && c.Subject == "" {
			t.Fatalf("%q read as %+v", token, c)
		}
	})
}

// FuzzCredentialStore: no panic; an accepted store writes out and parses back to as many users.
func FuzzCredentialStore(f *testing.F) {
	f.Add([]byte(storeDoc("4096", `"c2FsdA=="`, "", "")))
	f.Add([]byte(`{"users": {}}`))
	f.Add([]byte(`{"users": {"a": {"SCRAM-SHA-512": {"iterations": 1e99}}}}`))
	f.Add([]byte(`{"users": {"a": null}}`))
	f.Add([]byte(strings.Repeat("[", 100000)))
	f.Fuzz(func(t *testing.T, doc []byte) {
		s, err := sasl.ParseCredentialStore(doc)
		if err != nil {
			return
		}
		b, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := sasl.ParseCredentialStore(b)
		if err != nil || back.Users() != s.Users() {
			t.Fatalf("%s written as %s: %v", doc, b, err)
		}
	})
}
