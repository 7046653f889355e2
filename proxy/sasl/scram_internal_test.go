package sasl

import (
	"encoding/base64"
	"testing"
)

// TestScramRFC7677Vector: the credential of "pencil" and the server's check of the client's
// proof and its signature match RFC 7677's SCRAM-SHA-256 example.
func TestScramRFC7677Vector(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := NewScramCredential(ScramSHA256, []byte("pencil"), salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	phantom, _ := NewPhantomSource(0)
	srv, err := NewScramServer(ScramSHA256, func(u string) (ScramCredential, bool) { return cred, u == "user" }, phantom)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := srv.Step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO")); err != nil {
		t.Fatal(err)
	}
	// The server's nonce is random: put the RFC's in its place.
	serverFirst := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	srv.nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	srv.authMsg = []byte("n=user,r=rOprNGfwEbeRWgbNEkqO," + serverFirst)
	reply, done, user, err := srv.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil || !done || user != "user" || string(reply) != "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Fatalf("reply %q done %v user %q err %v", reply, done, user, err)
	}
}
