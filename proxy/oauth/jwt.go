package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	_ "crypto/sha256" // the hashes of the accepted algorithms
	_ "crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
)

// Bounds of a token: it comes from clients that have not authenticated.
const (
	// MaxTokenBytes is the longest token accepted.
	MaxTokenBytes = 128 << 10
	// maxHeaderBytes is the longest decoded JOSE header accepted.
	maxHeaderBytes = 8 << 10
)

// algorithm is how one JWS "alg" verifies.
type algorithm struct {
	hash crypto.Hash
	kind string // "RSA", "PSS", "EC", "EdDSA"
	// curveBits is the EC curve an ES algorithm requires.
	curveBits int
}

// algorithms are the accepted signature algorithms (RFC 7518, RFC 8037). "none" and the HMAC
// algorithms are absent on purpose: a token must be signed by a key only its issuer holds, and
// HMAC with a public key as its secret is the classic forgery.
var algorithms = map[string]algorithm{
	"RS256": {hash: crypto.SHA256, kind: "RSA"},
	"RS384": {hash: crypto.SHA384, kind: "RSA"},
	"RS512": {hash: crypto.SHA512, kind: "RSA"},
	"PS256": {hash: crypto.SHA256, kind: "PSS"},
	"PS384": {hash: crypto.SHA384, kind: "PSS"},
	"PS512": {hash: crypto.SHA512, kind: "PSS"},
	"ES256": {hash: crypto.SHA256, kind: "EC", curveBits: 256},
	"ES384": {hash: crypto.SHA384, kind: "EC", curveBits: 384},
	"ES512": {hash: crypto.SHA512, kind: "EC", curveBits: 521},
	"EdDSA": {kind: "EdDSA"},
}

// ErrInvalidToken marks a token that is refused; the message says why, never the token.
var ErrInvalidToken = errors.New("invalid token")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidToken, fmt.Sprintf(format, args...))
}

// header is the JOSE header of a JWS.
type header struct {
	Alg  string          `json:"alg"`
	Kid  string          `json:"kid"`
	Crit json.RawMessage `json:"crit"`
}

// jws is a parsed JWS in compact serialization, not yet verified.
type jws struct {
	header    header
	signed    string // header.payload, what the signature covers
	payload   []byte
	signature []byte
}

// parseJWS splits and decodes a compact JWS. It checks sizes and the algorithm, not the
// signature.
func parseJWS(token string) (*jws, error) {
	if len(token) > MaxTokenBytes {
		return nil, invalid("token of %d bytes, over %d", len(token), MaxTokenBytes)
	}
	h, rest, ok := strings.Cut(token, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || strings.Contains(s, ".") {
		return nil, invalid("not a JWS in compact serialization (three base64url parts)")
	}
	if base64.RawURLEncoding.DecodedLen(len(h)) > maxHeaderBytes {
		return nil, invalid("header over %d bytes", maxHeaderBytes)
	}
	hb, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return nil, invalid("header is not base64url")
	}
	var j jws
	if err := json.Unmarshal(hb, &j.header); err != nil {
		return nil, invalid("header is not a JSON object")
	}
	if _, ok := algorithms[j.header.Alg]; !ok {
		return nil, invalid("alg %q is not accepted", truncate(j.header.Alg))
	}
	if len(j.header.Crit) > 0 {
		return nil, invalid("crit header parameters are not supported")
	}
	if j.payload, err = base64.RawURLEncoding.DecodeString(p); err != nil {
		return nil, invalid("payload is not base64url")
	}
	if j.signature, err = base64.RawURLEncoding.DecodeString(s); err != nil {
		return nil, invalid("signature is not base64url")
	}
	j.signed = token[:len(h)+1+len(p)]
	return &j, nil
}

// truncate keeps a value from the token short enough for an error message.
func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// verify checks the signature with k, which must suit the token's algorithm.
func (j *jws) verify(k key) error {
	a := algorithms[j.header.Alg]
	if k.alg != "" && k.alg != j.header.Alg {
		return invalid("key %q is for %s, the token is signed with %s", truncate(k.kid), k.alg, j.header.Alg)
	}
	var digest []byte
	if a.hash != 0 {
		h := a.hash.New()
		h.Write([]byte(j.signed))
		digest = h.Sum(nil)
	}
	var ok bool
	switch pub := k.pub.(type) {
	case *rsa.PublicKey:
		switch a.kind {
		case "RSA":
			ok = rsa.VerifyPKCS1v15(pub, a.hash, digest, j.signature) == nil
		case "PSS":
			ok = rsa.VerifyPSS(pub, a.hash, digest, j.signature, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		default:
			return invalid("key %q is an RSA key, the token is signed with %s", truncate(k.kid), j.header.Alg)
		}
	case *ecdsa.PublicKey:
		if a.kind != "EC" || pub.Curve.Params().BitSize != a.curveBits {
			return invalid("key %q is an EC key of another curve than %s", truncate(k.kid), j.header.Alg)
		}
		ok = verifyEC(pub, digest, j.signature)
	case ed25519.PublicKey:
		if a.kind != "EdDSA" {
			return invalid("key %q is an Ed25519 key, the token is signed with %s", truncate(k.kid), j.header.Alg)
		}
		ok = ed25519.Verify(pub, []byte(j.signed), j.signature)
	}
	if !ok {
		return invalid("signature does not verify with key %q", truncate(k.kid))
	}
	return nil
}

// verifyEC checks a JWS ECDSA signature: R and S as fixed-size big-endian integers (RFC 7518
// 3.4), not ASN.1.
func verifyEC(pub *ecdsa.PublicKey, digest, sig []byte) bool {
	size := (pub.Curve.Params().BitSize + 7) / 8
	if len(sig) != 2*size {
		return false
	}
	r := new(big.Int).SetBytes(sig[:size])
	s := new(big.Int).SetBytes(sig[size:])
	return ecdsa.Verify(pub, digest, r, s)
}

// claims are the registered claims of a verified token, and the configured subject and scope.
type claims struct {
	Subject             string
	Scopes              []string
	Issuer              string
	Audience            []string
	Expires             time.Time
	NotBefore, IssuedAt time.Time
}

// parseClaims reads the claims set, taking the subject and scopes from the named claims.
func parseClaims(payload []byte, subClaim, scopeClaim string) (claims, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(payload, &raw); err != nil || raw == nil {
		return claims{}, invalid("claims are not a JSON object")
	}
	var c claims
	var err error
	if c.Expires, err = numericDate(raw, "exp"); err != nil {
		return claims{}, err
	}
	if c.Expires.IsZero() {
		return claims{}, invalid("no exp claim")
	}
	if c.NotBefore, err = numericDate(raw, "nbf"); err != nil {
		return claims{}, err
	}
	if c.IssuedAt, err = numericDate(raw, "iat"); err != nil {
		return claims{}, err
	}
	if c.Issuer, err = stringClaim(raw, "iss"); err != nil {
		return claims{}, err
	}
	if c.Audience, err = stringsClaim(raw, "aud", false); err != nil {
		return claims{}, err
	}
	if c.Subject, err = stringClaim(raw, subClaim); err != nil {
		return claims{}, err
	}
	if strings.TrimSpace(c.Subject) == "" {
		return claims{}, invalid("no %s claim (the subject)", truncate(subClaim))
	}
	if c.Scopes, err = stringsClaim(raw, scopeClaim, true); err != nil {
		return claims{}, err
	}
	return c, nil
}

// numericDate reads a NumericDate claim (seconds since the epoch, maybe fractional); zero when
// absent.
func numericDate(raw map[string]json.RawMessage, name string) (time.Time, error) {
	v, ok := raw[name]
	if !ok {
		return time.Time{}, nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || math.IsNaN(f) || f < 0 || f > 1e11 {
		return time.Time{}, invalid("%s is not a NumericDate", name)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}

func stringClaim(raw map[string]json.RawMessage, name string) (string, error) {
	v, ok := raw[name]
	if !ok {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", invalid("claim %s is not a string", truncate(name))
	}
	return s, nil
}

// stringsClaim reads a claim that is a string or an array of strings; a string is split at
// spaces when split (OAuth's scope, RFC 8693 4.2), else one value (aud, RFC 7519 4.1.3).
func stringsClaim(raw map[string]json.RawMessage, name string, split bool) ([]string, error) {
	v, ok := raw[name]
	if !ok || string(v) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		if split {
			return strings.Fields(s), nil
		}
		return []string{s}, nil
	}
	var list []string
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, invalid("claim %s is not a string or an array of strings", truncate(name))
	}
	return list, nil
}
