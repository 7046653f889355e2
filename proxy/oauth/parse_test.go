package oauth

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestParseJWKSSkipsKeysItCannotUse(t *testing.T) {
	good := newTestKey(t, "ES256", "good")
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	offCurve := good.jwk()
	offCurve["kid"], offCurve["y"] = "off-curve", offCurve["x"]
	tests := map[string]map[string]any{
		"an encryption key":           with2(good.jwk(), "use", "enc"),
		"an RSA key of 1024 bits":     {"kty": "RSA", "kid": "weak", "n": b64.EncodeToString(weak.N.Bytes()), "e": "AQAB"},
		"an RSA key of exponent 2":    {"kty": "RSA", "kid": "e2", "n": newTestKey(t, "RS256", "").jwk()["n"], "e": b64.EncodeToString(big.NewInt(2).Bytes())},
		"an EC point off the curve":   offCurve,
		"an EC coordinate too short":  with2(good.jwk(), "x", "AAAA"),
		"an unknown curve":            with2(good.jwk(), "crv", "P-192"),
		"a symmetric key":             {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
		"a key for alg none":          with2(good.jwk(), "alg", "none"),
		"a key for HS256":             with2(good.jwk(), "alg", "HS256"),
		"an Ed448 key":                {"kty": "OKP", "crv": "Ed448", "x": "AAAA"},
		"a key that is not an object": nil,
	}
	for name, bad := range tests {
		t.Run(name, func(t *testing.T) {
			var raw json.RawMessage = []byte("7")
			if bad != nil {
				raw = mustJSON(bad)
			}
			doc := []byte(`{"keys":[` + string(raw) + `,` + string(mustJSON(good.jwk())) + `]}`)
			keys, err := parseJWKS(doc)
			if err != nil || len(keys) != 1 || keys[0].kid != "good" {
				t.Fatalf("got %v %v, want only the good key", keys, err)
			}
			if _, err := parseJWKS([]byte(`{"keys":[` + string(raw) + `]}`)); err == nil || !strings.Contains(err.Error(), "no usable signature key") {
				t.Fatalf("alone: %v", err)
			}
		})
	}
}

func with2(m map[string]any, k string, v any) map[string]any {
	m[k] = v
	return m
}

func TestNumericDates(t *testing.T) {
	tests := map[string]struct {
		exp  string
		want time.Time
		ok   bool
	}{
		"seconds":              {exp: "1800000000", want: time.Unix(1800000000, 0), ok: true},
		"fractional seconds":   {exp: "1800000000.5", want: time.Unix(1800000000, 5e8), ok: true},
		"a string":             {exp: `"1800000000"`},
		"negative":             {exp: "-1"},
		"far beyond year 5000": {exp: "1e300"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := parseClaims([]byte(`{"sub":"a","exp":`+tc.exp+`}`), "sub", "scope")
			if tc.ok != (err == nil) || tc.ok && !c.Expires.Equal(tc.want) {
				t.Fatalf("got %v %v", c.Expires, err)
			}
		})
	}
}

// FuzzParseJWT feeds arbitrary tokens to the parser and the claims reader: they must not
// panic, and stay within the size bounds.
func FuzzParseJWT(f *testing.F) {
	k := newTestKey(f, "ES256", "k1")
	f.Add(k.sign(f, goodClaims(), nil))
	f.Add(b64.EncodeToString([]byte(`{"alg":"none"}`)) + "." + b64.EncodeToString([]byte(`{"sub":"a","exp":1e30}`)) + ".")
	f.Add(b64.EncodeToString([]byte(`{"alg":"RS256","crit":["x"]}`)) + ".e30.")
	f.Add(b64.EncodeToString([]byte(`{"alg":"ES256","kid":`+strings.Repeat("[", 5000)+`}`)) + ".e30.AA")
	f.Add(b64.EncodeToString([]byte(`{"alg":"EdDSA"}`)) + "." + b64.EncodeToString([]byte(`{"sub":"a","exp":1,"aud":[1,2],"scope":{"a":1}}`)) + ".AA")
	f.Add("..")
	f.Add("a.b.c.d")
	f.Add("====.====.====")
	f.Add(strings.Repeat("A", MaxTokenBytes+1))
	f.Fuzz(func(t *testing.T, token string) {
		j, err := parseJWS(token)
		if err != nil {
			return
		}
		if len(token) > MaxTokenBytes {
			t.Fatalf("a token of %d bytes parsed", len(token))
		}
		if _, ok := algorithms[j.header.Alg]; !ok {
			t.Fatalf("alg %q passed the parser", j.header.Alg)
		}
		_ = j.verify(k.keyOf(t))
		_, _ = parseClaims(j.payload, "sub", "scope")
	})
}

// keyOf is the key as parsed from its JWK.
func (k testKey) keyOf(t testing.TB) key {
	keys, err := parseJWKS(jwksOf(k))
	if err != nil {
		t.Fatal(err)
	}
	return keys[0]
}

// FuzzParseJWKS feeds arbitrary documents to the JWKS parser: it must not panic, and a set it
// accepts holds at most MaxKeys keys, each with a public key.
func FuzzParseJWKS(f *testing.F) {
	f.Add(jwksOf(newTestKey(f, "RS256", "r"), newTestKey(f, "ES512", "e"), newTestKey(f, "EdDSA", "d")))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"` + strings.Repeat("A", 3000) + `","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"` + strings.Repeat("_", 100) + `"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-521","x":"","y":""}]}`))
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]}`))
	f.Add([]byte(`{"keys":` + strings.Repeat("[", 10000) + `}`))
	f.Add([]byte(`{"keys":[` + strings.Repeat(`{},`, MaxKeys) + `{}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		keys, err := parseJWKS(doc)
		if err != nil {
			return
		}
		if len(keys) == 0 || len(keys) > MaxKeys {
			t.Fatalf("%d keys accepted", len(keys))
		}
		for _, k := range keys {
			if k.pub == nil {
				t.Fatalf("key %q without public key", k.kid)
			}
		}
	})
}
