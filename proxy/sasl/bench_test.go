package sasl_test

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha512"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// BenchmarkScramServerSHA512 is the server's side of one SCRAM-SHA-512 exchange (both steps),
// with a client whose salted password is computed once: the server does no PBKDF2 (the store
// keeps StoredKey and ServerKey), so this is what a terminating proxy spends per handshake.
func BenchmarkScramServerSHA512(b *testing.B) {
	salt := []byte("0123456789abcdefghij")
	cred, err := sasl.NewScramCredential(sasl.ScramSHA512, []byte("pencil"), salt, 10000)
	if err != nil {
		b.Fatal(err)
	}
	salted, _ := pbkdf2.Key(sha512.New, "pencil", salt, 10000, 64)
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(sha512.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	storedKey := sha512.Sum512(clientKey)
	phantom, _ := sasl.NewPhantomSource(10000)
	lookup := func(string) (sasl.ScramCredential, bool) { return cred, true }
	for b.Loop() {
		srv, _ := sasl.NewScramServer(sasl.ScramSHA512, lookup, phantom)
		serverFirst, _, _, err := srv.Step([]byte("n,,n=alice,r=abcdefgh"))
		if err != nil {
			b.Fatal(err)
		}
		nonce := strings.TrimPrefix(strings.Split(string(serverFirst), ",")[0], "r=")
		withoutProof := "c=biws,r=" + nonce
		sig := mac(storedKey[:], "n=alice,r=abcdefgh,"+string(serverFirst)+","+withoutProof)
		proof := make([]byte, len(sig))
		for i := range sig {
			proof[i] = clientKey[i] ^ sig[i]
		}
		if _, done, _, err := srv.Step([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof))); err != nil || !done {
			b.Fatal(err)
		}
	}
}
