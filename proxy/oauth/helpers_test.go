package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

var b64 = base64.RawURLEncoding

// testKey is a signing key of one algorithm with its public JWK.
type testKey struct {
	alg, kid string
	priv     crypto.Signer
}

var (
	keyOnce sync.Once
	rsaKey  *rsa.PrivateKey
	ecKeys  map[int]*ecdsa.PrivateKey
	edKey   ed25519.PrivateKey
)

// keys are generated once per test binary: RSA generation is slow.
func testKeys(t testing.TB) {
	t.Helper()
	keyOnce.Do(func() {
		var err error
		if rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		ecKeys = map[int]*ecdsa.PrivateKey{}
		for bits, c := range map[int]elliptic.Curve{256: elliptic.P256(), 384: elliptic.P384(), 521: elliptic.P521()} {
			if ecKeys[bits], err = ecdsa.GenerateKey(c, rand.Reader); err != nil {
				panic(err)
			}
		}
		if _, edKey, err = ed25519.GenerateKey(rand.Reader); err != nil {
			panic(err)
		}
	})
}

func newTestKey(t testing.TB, alg, kid string) testKey {
	testKeys(t)
	k := testKey{alg: alg, kid: kid}
	switch alg[:2] {
	case "RS", "PS":
		k.priv = rsaKey
	case "ES":
		k.priv = ecKeys[algorithms[alg].curveBits]
	case "Ed":
		k.priv = edKey
	}
	return k
}

// freshRSA is an RSA key of its own, for rotation tests.
func freshRSA(t testing.TB, kid string) testKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{alg: "RS256", kid: kid, priv: k}
}

// jwk is the key's public JWK.
func (k testKey) jwk() map[string]any {
	m := map[string]any{"kid": k.kid, "use": "sig", "alg": k.alg}
	switch pub := k.priv.Public().(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", b64.EncodeToString(pub.N.Bytes()), b64.EncodeToString(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		size := (pub.Curve.Params().BitSize + 7) / 8
		m["kty"], m["crv"] = "EC", pub.Curve.Params().Name
		point, _ := pub.Bytes() // 0x04 || x || y
		m["x"], m["y"] = b64.EncodeToString(point[1:1+size]), b64.EncodeToString(point[1+size:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64.EncodeToString(pub)
	}
	return m
}

func jwksOf(keys ...testKey) []byte {
	var list []map[string]any
	for _, k := range keys {
		list = append(list, k.jwk())
	}
	b, _ := json.Marshal(map[string]any{"keys": list})
	return b
}

// sign makes a compact JWS of claims with header h (alg and kid of k unless h sets them).
func (k testKey) sign(t testing.TB, claims map[string]any, h map[string]any) string {
	t.Helper()
	if h == nil {
		h = map[string]any{}
	}
	if _, ok := h["alg"]; !ok {
		h["alg"] = k.alg
	}
	if _, ok := h["kid"]; !ok && k.kid != "" {
		h["kid"] = k.kid
	}
	hb, _ := json.Marshal(h)
	cb, _ := json.Marshal(claims)
	signed := b64.EncodeToString(hb) + "." + b64.EncodeToString(cb)
	return signed + "." + b64.EncodeToString(k.signature(t, []byte(signed)))
}

func (k testKey) signature(t testing.TB, signed []byte) []byte {
	t.Helper()
	a := algorithms[k.alg]
	var digest []byte
	if a.hash != 0 {
		h := a.hash.New()
		h.Write(signed)
		digest = h.Sum(nil)
	}
	var sig []byte
	var err error
	switch a.kind {
	case "RSA":
		sig, err = rsa.SignPKCS1v15(rand.Reader, k.priv.(*rsa.PrivateKey), a.hash, digest)
	case "PSS":
		sig, err = rsa.SignPSS(rand.Reader, k.priv.(*rsa.PrivateKey), a.hash, digest, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	case "EC":
		var r, s *big.Int
		priv := k.priv.(*ecdsa.PrivateKey)
		if r, s, err = ecdsa.Sign(rand.Reader, priv, digest); err == nil {
			size := (priv.Curve.Params().BitSize + 7) / 8
			sig = append(r.FillBytes(make([]byte, size)), s.FillBytes(make([]byte, size))...)
		}
	case "EdDSA":
		sig = ed25519.Sign(k.priv.(ed25519.PrivateKey), signed)
	}
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// hmacToken is the classic forgery: HS256 keyed with the issuer's public key.
func hmacToken(claims map[string]any, kid string, secret []byte) string {
	hb, _ := json.Marshal(map[string]any{"alg": "HS256", "kid": kid})
	cb, _ := json.Marshal(claims)
	signed := b64.EncodeToString(hb) + "." + b64.EncodeToString(cb)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(signed))
	return signed + "." + b64.EncodeToString(m.Sum(nil))
}

// jwksServer serves a JWKS over TLS and counts requests.
type jwksServer struct {
	*httptest.Server
	doc      atomic.Pointer[[]byte]
	status   atomic.Int32
	requests atomic.Int32
}

func newJWKSServer(t testing.TB, doc []byte) *jwksServer {
	t.Helper()
	s := &jwksServer{}
	s.set(doc)
	s.status.Store(http.StatusOK)
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if code := int(s.status.Load()); code != http.StatusOK {
			w.WriteHeader(code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*s.doc.Load())
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(doc []byte) { s.doc.Store(&doc) }

// readCA is a ReadFile that knows the server's CA as "ca.pem".
func (s *jwksServer) readCA(path string) ([]byte, error) {
	if path != "ca.pem" {
		return nil, &mapErr{path}
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), nil
}

type mapErr struct{ path string }

func (e *mapErr) Error() string { return "no file " + e.path }

func ms(v int64) *int64 { return &v }
