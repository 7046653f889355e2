// Package termtest helps tests and benchmarks of SaslTermination: credential stores (Store), a
// SCRAM-SHA-512 client that salts its password once, so that a handshake measures the proxy's
// side, and a whole client handshake (ApiVersions, SaslHandshake, two SaslAuthenticate rounds)
// over any request function.
package termtest

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// ScramClient is a SCRAM-SHA-512 client that keeps its SaltedPassword, as RFC 5802 allows a
// client to: only the first handshake (or one with another salt) runs PBKDF2. Not safe for
// concurrent use; take one per goroutine.
type ScramClient struct {
	User, Pass string
	salted     []byte
	saltedFor  string // the salt and iterations salted was made for
}

func hmac512(key, msg []byte) []byte {
	m := hmac.New(sha512.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

// First is the client-first message with a fresh nonce, and its bare part.
func (c *ScramClient) First() (msg []byte, bare string) {
	var n [18]byte
	_, _ = rand.Read(n[:])
	bare = "n=" + c.User + ",r=" + base64.RawStdEncoding.EncodeToString(n[:])
	return []byte("n,," + bare), bare
}

// Final answers server-first with the client's proof.
func (c *ScramClient) Final(bare string, serverFirst []byte) ([]byte, error) {
	attrs := map[string]string{}
	for _, kv := range strings.Split(string(serverFirst), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			attrs[k] = v
		}
	}
	if key := attrs["s"] + "/" + attrs["i"]; c.salted == nil || c.saltedFor != key {
		salt, err := base64.StdEncoding.DecodeString(attrs["s"])
		if err != nil {
			return nil, err
		}
		iter, err := strconv.Atoi(attrs["i"])
		if err != nil {
			return nil, err
		}
		if c.salted, err = pbkdf2.Key(sha512.New, c.Pass, salt, iter, sha512.Size); err != nil {
			return nil, err
		}
		c.saltedFor = key
	}
	without := "c=biws,r=" + attrs["r"]
	authMsg := bare + "," + string(serverFirst) + "," + without
	clientKey := hmac512(c.salted, []byte("Client Key"))
	stored := sha512.Sum512(clientKey)
	sig := hmac512(stored[:], []byte(authMsg))
	for i := range clientKey {
		clientKey[i] ^= sig[i]
	}
	return []byte(without + ",p=" + base64.StdEncoding.EncodeToString(clientKey)), nil
}

// RoundTrip sends a request and returns its response.
type RoundTrip func(req kmsg.Request) (kmsg.Response, error)

// Handshake is what a client does on a new connection to a terminating proxy: ApiVersions,
// SaslHandshake, and the two SaslAuthenticate rounds of SCRAM-SHA-512.
func Handshake(rt RoundTrip, c *ScramClient) error {
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "termtest", "1"
	if _, err := rt(av); err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "SCRAM-SHA-512"
	resp, err := rt(hs)
	if err != nil {
		return fmt.Errorf("SaslHandshake: %w", err)
	}
	if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		return fmt.Errorf("SaslHandshake: error %d", code)
	}
	first, bare := c.First()
	serverFirst, err := authenticate(rt, first)
	if err != nil {
		return fmt.Errorf("client-first: %w", err)
	}
	final, err := c.Final(bare, serverFirst)
	if err != nil {
		return err
	}
	if _, err := authenticate(rt, final); err != nil {
		return fmt.Errorf("client-final: %w", err)
	}
	return nil
}

func authenticate(rt RoundTrip, msg []byte) ([]byte, error) {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(2)
	req.SASLAuthBytes = msg
	resp, err := rt(req)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode != 0 {
		return nil, fmt.Errorf("error %d", r.ErrorCode)
	}
	return r.SASLAuthBytes, nil
}

// Store is a SCRAM-SHA-512 credential store (the ScramCredentialFile format) of users, name to
// password, salted with the fewest iterations allowed so tests stay fast.
func Store(users map[string]string) ([]byte, error) {
	st := sasl.NewCredentialStore()
	for u, p := range users {
		c, err := sasl.NewScramCredential(sasl.ScramSHA512, []byte(p), sasl.NewSalt(), sasl.MinIterations)
		if err != nil {
			return nil, err
		}
		if err := st.Set(u, sasl.ScramSHA512, c); err != nil {
			return nil, err
		}
	}
	return st.Marshal()
}
