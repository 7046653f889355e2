package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// Bounds of a JWKS document: it comes from a server the configuration names, but a proxy must
// not be made to hold or scan an unbounded one.
const (
	// MaxJWKSBytes is the largest JWKS document read.
	MaxJWKSBytes = 1 << 20
	// MaxKeys is the most keys a JWKS may hold; a larger set is refused as a whole.
	MaxKeys = 100
	// minRSABits and maxRSABits bound an RSA key's modulus: smaller is too weak to trust, larger
	// makes each verification needlessly slow.
	minRSABits = 2048
	maxRSABits = 8192
)

// key is one usable signature key of a JWKS.
type key struct {
	kid string
	alg string // the key's "alg", empty when it names none
	pub crypto.PublicKey
}

// jwk is a JSON Web Key (RFC 7517) as far as signature verification needs it.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// errJWKS marks a JWKS document that cannot be used.
var errJWKS = errors.New("invalid JWKS")

// parseJWKS reads a JWKS document. Keys it cannot use for signatures (encryption keys, other key
// types or curves, weak RSA keys) are skipped, so that a provider publishing them alongside does
// not stop validation; a set with no usable key is an error.
func parseJWKS(b []byte) ([]key, error) {
	if len(b) > MaxJWKSBytes {
		return nil, fmt.Errorf("%w: %d bytes, over %d", errJWKS, len(b), MaxJWKSBytes)
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%w: %w", errJWKS, err)
	}
	if len(doc.Keys) > MaxKeys {
		return nil, fmt.Errorf("%w: %d keys, over %d", errJWKS, len(doc.Keys), MaxKeys)
	}
	var keys []key
	var skipped []error
	for i, raw := range doc.Keys {
		var j jwk
		if err := json.Unmarshal(raw, &j); err != nil {
			skipped = append(skipped, fmt.Errorf("keys[%d]: %w", i, err))
			continue
		}
		k, err := j.signatureKey()
		if err != nil {
			skipped = append(skipped, fmt.Errorf("keys[%d] (kid %q): %w", i, j.Kid, err))
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no usable signature key: %w", errJWKS, errors.Join(skipped...))
	}
	return keys, nil
}

// signatureKey is the public key of a JWK meant for signatures.
func (j jwk) signatureKey() (key, error) {
	if j.Use != "" && j.Use != "sig" {
		return key{}, fmt.Errorf("use %q is not sig", j.Use)
	}
	k := key{kid: j.Kid, alg: j.Alg}
	var err error
	switch j.Kty {
	case "RSA":
		k.pub, err = j.rsaKey()
	case "EC":
		k.pub, err = j.ecKey()
	case "OKP":
		k.pub, err = j.okpKey()
	default:
		err = fmt.Errorf("key type %q is not supported", j.Kty)
	}
	if err == nil && k.alg != "" {
		if _, ok := algorithms[k.alg]; !ok {
			err = fmt.Errorf("alg %q is not an accepted signature algorithm", k.alg)
		}
	}
	return k, err
}

func (j jwk) rsaKey() (*rsa.PublicKey, error) {
	n, err := b64Int(j.N, maxRSABits/8)
	if err != nil {
		return nil, fmt.Errorf("n: %w", err)
	}
	e, err := b64Int(j.E, 4)
	if err != nil {
		return nil, fmt.Errorf("e: %w", err)
	}
	if bits := n.BitLen(); bits < minRSABits {
		return nil, fmt.Errorf("RSA modulus of %d bits, under %d", bits, minRSABits)
	}
	if !e.IsInt64() || e.Int64() < 3 || e.Int64()%2 == 0 || e.Int64() > 1<<31-1 {
		return nil, errors.New("RSA exponent out of range")
	}
	return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
}

func (j jwk) ecKey() (*ecdsa.PublicKey, error) {
	var curve elliptic.Curve
	switch j.Crv {
	case "P-256":
		curve = elliptic.P256()
	case "P-384":
		curve = elliptic.P384()
	case "P-521":
		curve = elliptic.P521()
	default:
		return nil, fmt.Errorf("curve %q is not supported", j.Crv)
	}
	size := (curve.Params().BitSize + 7) / 8
	x, err := b64Fixed(j.X, size)
	if err != nil {
		return nil, fmt.Errorf("x: %w", err)
	}
	y, err := b64Fixed(j.Y, size)
	if err != nil {
		return nil, fmt.Errorf("y: %w", err)
	}
	point := append(append([]byte{4}, x...), y...)
	return ecdsa.ParseUncompressedPublicKey(curve, point) // checks the point is on the curve
}

func (j jwk) okpKey() (ed25519.PublicKey, error) {
	if j.Crv != "Ed25519" {
		return nil, fmt.Errorf("OKP curve %q is not supported", j.Crv)
	}
	x, err := b64Fixed(j.X, ed25519.PublicKeySize)
	if err != nil {
		return nil, fmt.Errorf("x: %w", err)
	}
	return ed25519.PublicKey(x), nil
}

// b64Int decodes a base64url unsigned big-endian integer of at most maxBytes bytes.
func b64Int(s string, maxBytes int) (*big.Int, error) {
	if s == "" {
		return nil, errors.New("missing")
	}
	if base64.RawURLEncoding.DecodedLen(len(s)) > maxBytes+1 { // +1: a leading zero byte
		return nil, fmt.Errorf("longer than %d bytes", maxBytes)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	return new(big.Int).SetBytes(b), nil
}

// b64Fixed decodes a base64url value that must be exactly size bytes (RFC 7518 6.2.1.2).
func b64Fixed(s string, size int) ([]byte, error) {
	if base64.RawURLEncoding.DecodedLen(len(s)) != size {
		return nil, fmt.Errorf("not %d bytes", size)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if len(b) != size {
		return nil, fmt.Errorf("not %d bytes", size)
	}
	return b, nil
}
