package sasltermination

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// fastScram is a SCRAM-SHA-512 client that salts its password once, as a client that keeps
// its SaltedPassword may: the benchmark then measures the proxy's side of each handshake,
// not the client's PBKDF2.
type fastScram struct {
	user, pass string
	salted     []byte
	saltedFor  string // the salt and iterations salted was made for
}

func hmac512(key, msg []byte) []byte {
	m := hmac.New(sha512.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

// first is the client-first message with a fresh nonce.
func (c *fastScram) first() (msg, bare string) {
	var n [18]byte
	_, _ = rand.Read(n[:])
	bare = "n=" + c.user + ",r=" + base64.RawStdEncoding.EncodeToString(n[:])
	return "n,," + bare, bare
}

// final answers server-first with the proof.
func (c *fastScram) final(bare string, serverFirst []byte) ([]byte, error) {
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
		if c.salted, err = pbkdf2.Key(sha512.New, c.pass, salt, iter, sha512.Size); err != nil {
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

// handshakeOnce is what a client does on a new connection to a terminating proxy: ApiVersions,
// SaslHandshake and the two SaslAuthenticate rounds, each through the connection's chain.
func handshakeOnce(b testing.TB, c *filter.Conn, client *fastScram) error {
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	if _, err := send(b, c, av); err != nil {
		return err
	}
	handshake(b, c, sasl.ScramSHA512)
	msg, bare := client.first()
	resp, err := saslAuthenticate(b, c, []byte(msg))
	if err != nil || resp.ErrorCode != 0 {
		return fmt.Errorf("client-first: %v, code %v", err, resp)
	}
	final, err := client.final(bare, resp.SASLAuthBytes)
	if err != nil {
		return err
	}
	if resp, err = saslAuthenticate(b, c, final); err != nil || resp.ErrorCode != 0 {
		return fmt.Errorf("client-final: %v, code %v", err, resp)
	}
	if c.Subject().User != client.user {
		return fmt.Errorf("subject %+v", c.Subject())
	}
	return nil
}

// BenchmarkScramSHA512Handshake is the proxy's CPU for one SCRAM-SHA-512 authentication of a
// new connection (ApiVersions, SaslHandshake, two SaslAuthenticate rounds through the chain),
// on one core: handshakes/s is the rate one core sustains, TLS and TCP aside.
func BenchmarkScramSHA512Handshake(b *testing.B) {
	store := storeFile(b, map[string]string{"alice": "alice-pw"})
	chain := newChain(b, Type, scramConfig(store, ""))
	client := &fastScram{user: "alice", pass: "alice-pw"}
	if err := handshakeOnce(b, chain.ForConnection(), client); err != nil { // salts the password
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		c := chain.ForConnection()
		if err := handshakeOnce(b, c, client); err != nil {
			b.Fatal(err)
		}
		c.End()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "handshakes/s")
}
