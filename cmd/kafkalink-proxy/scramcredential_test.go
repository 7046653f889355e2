package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// TestScramCredentialStore: the command writes a store whose credential verifies the password
// (a SCRAM exchange with franz-go's client is in proxy/sasl; here the derived keys are compared),
// adds a second user and replaces the first one's, and never writes the password.
func TestScramCredentialStore(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	store := filepath.Join(dir, "store.json")
	if err := os.WriteFile(pw, []byte("pencil\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) error {
		return scramCredential(args, &bytes.Buffer{}, &bytes.Buffer{})
	}
	for _, user := range []string{"alice", "bob", "alice"} {
		if err := run("--user", user, "--password-file", pw, "--iterations", "4096", "--store", store); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "pencil") {
		t.Fatal("the store holds the password")
	}
	s, err := sasl.ParseCredentialStore(b)
	if err != nil || s.Users() != 2 {
		t.Fatalf("store of %d users, err %v:\n%s", s.Users(), err, b)
	}
	got, ok := s.Lookup(sasl.ScramSHA512)("alice")
	if !ok {
		t.Fatal("alice has no SCRAM-SHA-512 credential")
	}
	want, err := sasl.NewScramCredential(sasl.ScramSHA512, []byte("pencil"), got.Salt, got.Iterations)
	if err != nil || !bytes.Equal(want.StoredKey, got.StoredKey) || !bytes.Equal(want.ServerKey, got.ServerKey) {
		t.Fatalf("alice's credential is not that of \"pencil\" without its newline: %v", err)
	}
	if info, err := os.Stat(store); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("store mode %v, err %v", info.Mode(), err)
	}
}

func TestScramCredentialRefuses(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	empty := filepath.Join(dir, "empty")
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(pw, []byte("pencil"), 0o600)
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	_ = os.WriteFile(bad, []byte(`{"users": {"x": {"SCRAM-SHA-512": {"iterations": 1}}}}`), 0o600)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no user":             {[]string{"--password-file", pw}, "--user and --password-file are required"},
		"empty password":      {[]string{"--user", "a", "--password-file", empty}, "the password must be"},
		"missing password":    {[]string{"--user", "a", "--password-file", filepath.Join(dir, "none")}, "password file"},
		"unknown mechanism":   {[]string{"--user", "a", "--password-file", pw, "--mechanism", "SCRAM-SHA-1"}, "SCRAM-SHA-1"},
		"too few iterations":  {[]string{"--user", "a", "--password-file", pw, "--iterations", "1000"}, "iterations 1000"},
		"a store that is bad": {[]string{"--user", "a", "--password-file", pw, "--store", bad}, `user "x"`},
	} {
		err := scramCredential(tc.args, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", name, err, tc.want)
		}
	}
}

// TestBinaryScramCredential: the binary's scram-credential subcommand prints a store.
func TestBinaryScramCredential(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("pencil"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), os.Args[0], "scram-credential", "--user", "alice", "--password-file", pw, "--mechanism", "SCRAM-SHA-256", "--iterations", "4096")
	cmd.Env = append(os.Environ(), "KAFKALINK_PROXY_RUN_MAIN=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	s, err := sasl.ParseCredentialStore(out)
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if _, ok := s.Lookup(sasl.ScramSHA256)("alice"); !ok {
		t.Fatalf("no SCRAM-SHA-256 credential for alice:\n%s", out)
	}
}
