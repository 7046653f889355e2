package sasl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// MaxTokenBytes bounds an OAUTHBEARER message (Kroxylicious' maxAuthBytes): real tokens are a
// few KiB.
const MaxTokenBytes = 128 << 10

// OAuthBearerInitial is an OAUTHBEARER client initial response (RFC 7628 section 3.1).
type OAuthBearerInitial struct {
	// Authzid is the authorization identity of the GS2 header, unescaped; empty when none.
	Authzid string
	// Token is the bearer token of the auth pair.
	Token string
	// Extensions are the other key=value pairs (Kafka's SASL extensions), by key.
	Extensions map[string]string
}

// ParseOAuthBearerInitial reads an initial response: "n," [a=authzid] "," 0x01, then key=value
// pairs each ended by 0x01, then a last 0x01; auth=Bearer <token> among them.
func ParseOAuthBearerInitial(msg []byte) (OAuthBearerInitial, error) {
	var r OAuthBearerInitial
	if err := checkMessage("OAUTHBEARER initial response", msg, MaxTokenBytes); err != nil {
		return r, err
	}
	_, authzid, rest, err := parseGS2Header(string(msg), "n")
	if err != nil {
		return r, fmt.Errorf("OAUTHBEARER: %w", err)
	}
	r.Authzid = authzid
	if len(rest) < 3 || rest[0] != 1 || !strings.HasSuffix(rest, "\x01\x01") {
		return r, errors.New("OAUTHBEARER: key=value pairs not framed by 0x01")
	}
	pairs := strings.Split(rest[1:len(rest)-2], "\x01")
	if len(pairs) > maxExtensions {
		return r, fmt.Errorf("OAUTHBEARER: %d key=value pairs, over %d", len(pairs), maxExtensions)
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" || !alpha(k) {
			return r, errors.New("OAUTHBEARER: a pair is not key=value")
		}
		if k == "auth" {
			if r.Token != "" {
				return r, errors.New("OAUTHBEARER: auth given twice")
			}
			if r.Token, err = bearerToken(v); err != nil {
				return r, err
			}
			continue
		}
		if r.Extensions == nil {
			r.Extensions = map[string]string{}
		}
		if _, dup := r.Extensions[k]; dup {
			return r, fmt.Errorf("OAUTHBEARER: key %q given twice", k)
		}
		r.Extensions[k] = v
	}
	if r.Token == "" {
		return r, errors.New("OAUTHBEARER: no auth=Bearer pair")
	}
	return r, nil
}

// bearerToken reads "Bearer <token>" (the scheme in any case, RFC 6750's b64token).
func bearerToken(v string) (string, error) {
	scheme, token, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", errors.New("OAUTHBEARER: auth is not Bearer <token>")
	}
	token = strings.TrimLeft(token, " ")
	if !b64token(token) {
		return "", errors.New("OAUTHBEARER: the token has characters a bearer token does not")
	}
	return token, nil
}

// b64token reports whether s is an RFC 6750 b64token.
func b64token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		if !tokenChar(body[i]) {
			return false
		}
	}
	return true
}

// tokenChar reports whether c may be in a b64token.
func tokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0
}

// IsOAuthBearerErrorAck reports whether a client's message is the 0x01 a client sends after the
// server's error challenge (RFC 7628 section 3.2.3), which ends a failed exchange.
func IsOAuthBearerErrorAck(msg []byte) bool { return len(msg) == 1 && msg[0] == 1 }

// JWTClaims is what the identity filters read of a JWT's claims.
type JWTClaims struct {
	// Subject is the subject claim's value (the claim named by the caller, "sub" by default).
	Subject string
	// Scopes are the scope claim's values: a space-separated string, or an array of strings.
	Scopes []string
	// Expires is the exp claim; zero when absent.
	Expires time.Time
}

// DefaultSubjectClaim is the claim a token's subject is read from unless configured otherwise.
const DefaultSubjectClaim = "sub"

// ReadJWTClaims reads the claims of a compact JWS without verifying it: for inspection of a
// token that the broker (or OauthBearerValidation) verifies. The subject is taken from
// subjectClaim (DefaultSubjectClaim when empty) and the scopes from scopeClaim ("scope" when
// empty); the subject must be a non-empty string.
func ReadJWTClaims(token, subjectClaim, scopeClaim string) (JWTClaims, error) {
	var c JWTClaims
	if len(token) > MaxTokenBytes {
		return c, fmt.Errorf("JWT of %d bytes, over %d", len(token), MaxTokenBytes)
	}
	subjectClaim = cmpOr(subjectClaim, DefaultSubjectClaim)
	scopeClaim = cmpOr(scopeClaim, "scope")
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return c, fmt.Errorf("JWT of %d parts, want header.payload.signature", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return c, errors.New("JWT payload is not base64url")
	}
	var claims map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&claims); err != nil || claims == nil {
		return c, errors.New("JWT payload is not a JSON object")
	}
	if err := json.Unmarshal(claims[subjectClaim], &c.Subject); err != nil || c.Subject == "" {
		return c, fmt.Errorf("JWT has no string claim %q for its subject", subjectClaim)
	}
	if c.Scopes, err = readScopes(claims[scopeClaim]); err != nil {
		return c, fmt.Errorf("JWT claim %q: %w", scopeClaim, err)
	}
	if c.Expires, err = readExpiry(claims["exp"]); err != nil {
		return c, err
	}
	return c, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// readScopes reads a scope claim: absent, a space-separated string, or an array of strings.
func readScopes(raw json.RawMessage) ([]string, error) {
	if raw == nil {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return strings.Fields(s), nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New("neither a string nor an array of strings")
	}
	return list, nil
}

// readExpiry reads an exp claim, seconds since the epoch; absent is zero.
func readExpiry(raw json.RawMessage) (time.Time, error) {
	if raw == nil {
		return time.Time{}, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return time.Time{}, errors.New("JWT claim exp is not a number")
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f > math.MaxInt32*100 {
		return time.Time{}, errors.New("JWT claim exp is out of range")
	}
	return time.Unix(int64(f), 0), nil
}
