package sasl_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// users is a lookup of one user per mechanism, alice with password "pencil", at the minimum
// iterations to keep tests quick.
func users(t *testing.T, mech string) func(string) (sasl.ScramCredential, bool) {
	t.Helper()
	cred, err := sasl.NewScramCredential(mech, []byte("pencil"), sasl.NewSalt(), sasl.MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	return func(user string) (sasl.ScramCredential, bool) { return cred, user == "alice" }
}

// exchange runs franz-go's SCRAM client against a ScramServer, and returns the server's user and
// the first error of either side.
func exchange(t *testing.T, mech, user, pass string) (string, error) {
	t.Helper()
	phantom, err := sasl.NewPhantomSource(sasl.MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sasl.NewScramServer(mech, users(t, mech), phantom)
	if err != nil {
		t.Fatal(err)
	}
	auth := scram.Auth{User: user, Pass: pass}
	m := auth.AsSha512Mechanism()
	if mech == sasl.ScramSHA256 {
		m = auth.AsSha256Mechanism()
	}
	session, msg, err := m.Authenticate(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		reply, done, who, err := srv.Step(msg)
		if err != nil {
			return "", err
		}
		clientDone, next, err := session.Challenge(reply)
		if err != nil {
			return "", errors.Join(errors.New("client"), err)
		}
		if done != clientDone {
			t.Fatalf("server done %v, client done %v", done, clientDone)
		}
		if done {
			return who, nil
		}
		msg = next
	}
	t.Fatal("the exchange did not end in 3 rounds")
	return "", nil
}

// TestScramServerWithFranzGo: franz-go's SCRAM client authenticates against the server with the
// right password (and checks the server's signature), and fails with a wrong one or as a user
// the server does not know, with the same error.
func TestScramServerWithFranzGo(t *testing.T) {
	for _, mech := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			who, err := exchange(t, mech, "alice", "pencil")
			if err != nil || who != "alice" {
				t.Fatalf("right password: user %q, err %v", who, err)
			}
			if _, err := exchange(t, mech, "alice", "crayon"); !errors.Is(err, sasl.ErrAuthenticationFailed) {
				t.Fatalf("wrong password: %v", err)
			}
			if _, err := exchange(t, mech, "bob", "pencil"); !errors.Is(err, sasl.ErrAuthenticationFailed) {
				t.Fatalf("unknown user: %v", err)
			}
		})
	}
}

// TestPhantomChallengeLooksReal: an unknown user's server-first has the shape of a real one
// (salt length, the configured iterations), and the same salt each time it is asked.
func TestPhantomChallengeLooksReal(t *testing.T) {
	phantom, err := sasl.NewPhantomSource(0)
	if err != nil {
		t.Fatal(err)
	}
	first := func(user string) string {
		srv, err := sasl.NewScramServer(sasl.ScramSHA512, users(t, sasl.ScramSHA512), phantom)
		if err != nil {
			t.Fatal(err)
		}
		reply, done, _, err := srv.Step([]byte("n,,n=" + user + ",r=abc"))
		if err != nil || done {
			t.Fatalf("client-first of %s: done %v err %v", user, done, err)
		}
		return string(reply)
	}
	a, b := strings.Split(first("mallory"), ","), strings.Split(first("mallory"), ",")
	if a[1] != b[1] || a[2] != "i=10000" || len(a[1]) != len("s=")+28 {
		t.Fatalf("phantom server-first %v then %v", a, b)
	}
	if c := strings.Split(first("trudy"), ","); c[1] == a[1] {
		t.Fatal("two unknown users got the same salt")
	}
	if _, err := sasl.NewPhantomSource(100); err == nil {
		t.Fatal("phantomIterations under the minimum accepted")
	}
}

// TestScramServerRefuses: messages out of order or malformed end the exchange with an error.
func TestScramServerRefuses(t *testing.T) {
	tests := map[string]struct {
		first, final string
	}{
		"channel binding asked":         {first: "p=tls-unique,,n=alice,r=abc"},
		"no user":                       {first: "n,,r=abc"},
		"user with a bad escape":        {first: "n,,n=al=ice,r=abc"},
		"delegation token":              {first: "n,,n=alice,r=abc,tokenauth=true"},
		"authzid of another user":       {first: "n,a=bob,n=alice,r=abc"},
		"final with another binding":    {first: "n,,n=alice,r=abc", final: "c=eSws,r=abc,p=AAAA"},
		"final with another nonce":      {first: "n,,n=alice,r=abc", final: "c=biws,r=abcd,p=AAAA"},
		"final without proof":           {first: "n,,n=alice,r=abc", final: "c=biws,r=abc"},
		"final with a non-base64 proof": {first: "n,,n=alice,r=abc", final: "c=biws,r=abc,p=!!"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			phantom, _ := sasl.NewPhantomSource(0)
			srv, err := sasl.NewScramServer(sasl.ScramSHA256, users(t, sasl.ScramSHA256), phantom)
			if err != nil {
				t.Fatal(err)
			}
			_, done, _, err := srv.Step([]byte(tc.first))
			if tc.final == "" {
				if err == nil || !done {
					t.Fatalf("client-first accepted: done %v err %v", done, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, done, _, err = srv.Step([]byte(tc.final)); err == nil || !done {
				t.Fatalf("client-final accepted: done %v err %v", done, err)
			}
			if _, _, _, err = srv.Step([]byte(tc.final)); err == nil {
				t.Fatal("a step after the end accepted")
			}
		})
	}
}

// TestNewScramCredentialRefuses: bounds and mechanisms of NewScramCredential.
func TestNewScramCredentialRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		mech  string
		salt  []byte
		iters int
	}{
		"unknown mechanism":   {"SCRAM-SHA-1", []byte("s"), 4096},
		"too few iterations":  {sasl.ScramSHA256, []byte("s"), 4095},
		"too many iterations": {sasl.ScramSHA256, []byte("s"), sasl.MaxIterations + 1},
		"empty salt":          {sasl.ScramSHA256, nil, 4096},
	} {
		if _, err := sasl.NewScramCredential(tc.mech, []byte("p"), tc.salt, tc.iters); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
