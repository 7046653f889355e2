package oauthbearer

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/kafkalink/kafkalink/proxy/oauth"
)

// errInitialResponse marks a SaslAuthenticate that is not an OAUTHBEARER initial response.
var errInitialResponse = errors.New("not an OAUTHBEARER initial client response (RFC 7628)")

// Bounds of an initial response, which a client sends before it is authenticated.
const (
	maxInitialResponse = oauth.MaxTokenBytes + 16<<10 // the token, and room for extensions
	maxKVPairs         = 64
)

// initialResponse is what the proxy needs of a client's OAUTHBEARER initial response.
type initialResponse struct {
	authzid string
	token   string
}

// parseInitialResponse reads an RFC 7628 initial client response:
//
//	gs2-header %x01 *(key "=" value %x01) %x01
//
// with the gs2 header "n,," or "y,," or with an authzid "n,a=NAME,"; the token is in
// "auth=Bearer TOKEN". Channel binding ("p=") is not supported, as in Kafka.
func parseInitialResponse(b []byte) (initialResponse, error) {
	var r initialResponse
	if len(b) > maxInitialResponse {
		return r, fmt.Errorf("%w: %d bytes, over %d", errInitialResponse, len(b), maxInitialResponse)
	}
	gs2, rest, ok := bytes.Cut(b, []byte{1})
	if !ok {
		return r, fmt.Errorf("%w: no kvsep after the GS2 header", errInitialResponse)
	}
	authzid, err := parseGS2Header(string(gs2))
	if err != nil {
		return r, err
	}
	r.authzid = authzid
	body, ok := bytes.CutSuffix(rest, []byte{1, 1})
	if !ok {
		return r, fmt.Errorf("%w: no key-value pair ended by two kvseps", errInitialResponse)
	}
	if bytes.Count(body, []byte{1}) >= maxKVPairs {
		return r, fmt.Errorf("%w: over %d key-value pairs", errInitialResponse, maxKVPairs)
	}
	for kv := range bytes.SplitSeq(body, []byte{1}) {
		k, v, ok := strings.Cut(string(kv), "=")
		if !ok || k == "" {
			return r, fmt.Errorf("%w: a key-value pair without key or '='", errInitialResponse)
		}
		if k == "auth" {
			if r.token != "" {
				return r, fmt.Errorf("%w: auth given twice", errInitialResponse)
			}
			scheme, token, ok := strings.Cut(v, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || !isB64Token(token) {
				return r, fmt.Errorf("%w: auth is not \"Bearer <token>\"", errInitialResponse)
			}
			r.token = token
		}
	}
	if r.token == "" {
		return r, fmt.Errorf("%w: no auth=Bearer token", errInitialResponse)
	}
	return r, nil
}

// parseGS2Header reads "n,," "y,," or "n,a=authzid," and returns the authzid (RFC 5801, its
// "=2C" and "=3D" escapes undone).
func parseGS2Header(h string) (string, error) {
	flag, rest, ok := strings.Cut(h, ",")
	if !ok || (flag != "n" && flag != "y") {
		return "", fmt.Errorf("%w: GS2 header flag must be n or y (channel binding is not supported)", errInitialResponse)
	}
	authz, tail, ok := strings.Cut(rest, ",")
	if !ok || tail != "" {
		return "", fmt.Errorf("%w: malformed GS2 header", errInitialResponse)
	}
	if authz == "" {
		return "", nil
	}
	name, ok := strings.CutPrefix(authz, "a=")
	if !ok || name == "" {
		return "", fmt.Errorf("%w: malformed GS2 authzid", errInitialResponse)
	}
	return strings.NewReplacer("=2C", ",", "=3D", "=").Replace(name), nil
}

// isB64Token reports whether s is an RFC 6750 b64token: 1*(ALPHA / DIGIT / "-" / "." / "_" /
// "~" / "+" / "/") *"=".
func isB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for _, c := range []byte(body) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/':
		default:
			return false
		}
	}
	return true
}
