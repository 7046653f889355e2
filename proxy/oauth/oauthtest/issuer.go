// Package oauthtest holds test support for OAuth bearer tokens: an issuer of its own (keys, a
// JWKS served over TLS, signed tokens) for exact control of claims and time, and Ory Hydra, a
// real OAuth 2.0 server (hack/tools/hydra), for tokens as a provider issues them.
package oauthtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

var b64 = base64.RawURLEncoding

// Issuer signs tokens with an RSA key (RS256, kid "test-key") and serves its JWKS over TLS.
type Issuer struct {
	// URL is the JWKS endpoint.
	URL string
	// CAPEM is the CA of the endpoint's certificate.
	CAPEM []byte
	key   *rsa.PrivateKey
}

// KID is the kid of the Issuer's key.
const KID = "test-key"

// NewIssuer starts an Issuer, stopped when the test ends.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwks := JWKS(KID, &k.PublicKey)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	}))
	t.Cleanup(srv.Close)
	return &Issuer{URL: srv.URL + "/.well-known/jwks.json", key: k,
		CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
}

// JWKS is the JWKS document of one RSA public key.
func JWKS(kid string, pub *rsa.PublicKey) []byte {
	b, _ := json.Marshal(map[string]any{"keys": []map[string]any{{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
		"n": b64.EncodeToString(pub.N.Bytes()), "e": b64.EncodeToString(big.NewInt(int64(pub.E)).Bytes())}}})
	return b
}

// Token signs claims with the Issuer's key.
func (i *Issuer) Token(t testing.TB, claims map[string]any) string {
	t.Helper()
	return SignRS256(t, i.key, KID, claims)
}

// SignRS256 makes a compact JWS of claims signed with key under kid.
func SignRS256(t testing.TB, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	signed := encodePart(map[string]any{"alg": "RS256", "typ": "JWT", "kid": kid}) + "." + encodePart(claims)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b64.EncodeToString(sig)
}

func encodePart(v any) string {
	b, _ := json.Marshal(v)
	return b64.EncodeToString(b)
}

// Claims decodes a token's claims without verifying it.
func Claims(t testing.TB, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWS: %d parts", len(parts))
	}
	b, err := b64.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// Forge re-signs a token's claims (changed by edit) with a key of the attacker's under the
// token's own kid: what a forger can make without the issuer's key.
func Forge(t testing.TB, token string, edit func(map[string]any)) string {
	t.Helper()
	var h struct {
		Kid string `json:"kid"`
	}
	hb, err := b64.DecodeString(strings.Split(token, ".")[0])
	if err != nil || json.Unmarshal(hb, &h) != nil {
		t.Fatalf("token header: %v", err)
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	c := Claims(t, token)
	if edit != nil {
		edit(c)
	}
	return SignRS256(t, k, h.Kid, c)
}

// AlgNone is a token's claims, changed by edit, under alg "none" with no signature.
func AlgNone(t testing.TB, token string, edit func(map[string]any)) string {
	t.Helper()
	c := Claims(t, token)
	if edit != nil {
		edit(c)
	}
	return encodePart(map[string]any{"alg": "none", "typ": "JWT"}) + "." + encodePart(c) + "."
}
