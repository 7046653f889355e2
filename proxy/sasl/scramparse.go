package sasl

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxMessageBytes bounds a PLAIN message and each SCRAM message: real ones are well under
// 1 KiB, and the proxy reads them before the client has authenticated.
const MaxMessageBytes = 8 << 10

// maxExtensions bounds the extensions of a SCRAM message or OAUTHBEARER response.
const maxExtensions = 32

// ScramClientFirst is a SCRAM client-first message (RFC 5802 section 7).
type ScramClientFirst struct {
	// GS2Header is the message's header ("n,," or "y,," with an optional a=authzid), which
	// the client-final's channel binding repeats.
	GS2Header string
	// Authzid is the authorization identity the client asked for, unescaped; empty when none.
	Authzid string
	// User is the user name (n=), unescaped.
	User string
	// Nonce is the client's nonce (r=).
	Nonce string
	// Extensions are the attributes after the nonce (Kafka's tokenauth), by name.
	Extensions map[string]string
	// Bare is the message without its GS2 header, part of what the proofs sign.
	Bare []byte
}

// Identity is who the client authenticates as: the authorization identity when it named one
// (Kafka refuses one that is not the user), else the user.
func (f ScramClientFirst) Identity() string {
	if f.Authzid != "" {
		return f.Authzid
	}
	return f.User
}

// ParseScramClientFirst reads a client-first message. A client that asks for channel binding
// (p=) or a mandatory extension (m=) is refused: neither Kafka nor the proxy supports them.
func ParseScramClientFirst(msg []byte) (ScramClientFirst, error) {
	var f ScramClientFirst
	if err := checkMessage("SCRAM client-first", msg, MaxMessageBytes); err != nil {
		return f, err
	}
	header, authzid, rest, err := parseGS2Header(string(msg), "ny")
	if err != nil {
		return f, fmt.Errorf("SCRAM client-first: %w", err)
	}
	f.GS2Header, f.Authzid, f.Bare = header, authzid, []byte(rest)
	attrs := strings.Split(rest, ",")
	if len(attrs) < 2 || len(attrs) > 2+maxExtensions {
		return f, fmt.Errorf("SCRAM client-first: %d attributes, want n=, r= and at most %d extensions", len(attrs), maxExtensions)
	}
	if strings.HasPrefix(attrs[0], "m=") {
		return f, errors.New("SCRAM client-first: mandatory extensions (m=) are not supported")
	}
	user, ok := strings.CutPrefix(attrs[0], "n=")
	if !ok {
		return f, errors.New("SCRAM client-first: no user name (n=)")
	}
	if f.User, err = decodeSaslName(user); err != nil {
		return f, fmt.Errorf("SCRAM client-first: user name: %w", err)
	}
	if f.Nonce, ok = strings.CutPrefix(attrs[1], "r="); !ok || !printable(f.Nonce) {
		return f, errors.New("SCRAM client-first: no nonce (r=) of printable characters")
	}
	if f.Extensions, err = parseExtensions(attrs[2:]); err != nil {
		return f, fmt.Errorf("SCRAM client-first: %w", err)
	}
	return f, nil
}

// parseGS2Header reads a GS2 header (RFC 5801 section 4) with one of the channel-binding flags
// in flags ("p=" is refused), and an optional authorization identity.
func parseGS2Header(msg, flags string) (header, authzid, rest string, err error) {
	if strings.HasPrefix(msg, "p=") {
		return "", "", "", errors.New("channel binding (p=) is not supported")
	}
	if len(msg) < 2 || !strings.Contains(flags, msg[:1]) || msg[1] != ',' {
		return "", "", "", fmt.Errorf("GS2 header does not start with one of %q and a comma", flags)
	}
	a, after, ok := strings.Cut(msg[2:], ",")
	if !ok {
		return "", "", "", errors.New("GS2 header without its second comma")
	}
	if a != "" {
		name, ok := strings.CutPrefix(a, "a=")
		if !ok {
			return "", "", "", errors.New("GS2 header: authorization identity without a=")
		}
		if authzid, err = decodeSaslName(name); err != nil {
			return "", "", "", fmt.Errorf("GS2 header: authorization identity: %w", err)
		}
	}
	return msg[:len(msg)-len(after)], authzid, after, nil
}

// decodeSaslName unescapes a SCRAM saslname (RFC 5802 section 5.1): "=2C" is ",", "=3D" is
// "=", any other "=" is an error, as are an empty name, NUL and invalid UTF-8.
func decodeSaslName(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty")
	}
	if !utf8.ValidString(s) || strings.ContainsAny(s, "\x00,") {
		return "", errors.New("not UTF-8 without NUL and commas")
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", errors.New("'=' not followed by 2C or 3D")
		}
		i += 2
	}
	return b.String(), nil
}

// EncodeSaslName escapes a name for a SCRAM message (the inverse of the parsers' unescaping).
func EncodeSaslName(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}

// printable reports whether s is a non-empty run of printable ASCII without commas (a nonce).
func printable(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e || s[i] == ',' {
			return false
		}
	}
	return true
}

// parseExtensions reads name=value attributes, each name once.
func parseExtensions(attrs []string) (map[string]string, error) {
	if len(attrs) == 0 {
		return nil, nil
	}
	ext := make(map[string]string, len(attrs))
	for _, a := range attrs {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" || !alpha(k) {
			return nil, errors.New("an extension is not name=value")
		}
		if _, dup := ext[k]; dup {
			return nil, fmt.Errorf("extension %q given twice", k)
		}
		ext[k] = v
	}
	return ext, nil
}

func alpha(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// checkMessage refuses an empty or oversized message.
func checkMessage(what string, msg []byte, limit int) error {
	if len(msg) == 0 {
		return fmt.Errorf("%s: empty", what)
	}
	if len(msg) > limit {
		return fmt.Errorf("%s: %d bytes, over the %d a client may send", what, len(msg), limit)
	}
	return nil
}

// ScramClientFinal is a SCRAM client-final message.
type ScramClientFinal struct {
	// ChannelBinding is the c= attribute as sent (base64 of the GS2 header without binding).
	ChannelBinding string
	// Nonce is the combined nonce (r=).
	Nonce string
	// Proof is the decoded client proof (p=).
	Proof []byte
	// WithoutProof is the message up to the proof, part of what the proofs sign.
	WithoutProof []byte
}

// ParseScramClientFinal reads a client-final message: c=, r=, any extensions, and p= last.
func ParseScramClientFinal(msg []byte) (ScramClientFinal, error) {
	var f ScramClientFinal
	if err := checkMessage("SCRAM client-final", msg, MaxMessageBytes); err != nil {
		return f, err
	}
	i := bytes.LastIndex(msg, []byte(",p="))
	if i < 0 {
		return f, errors.New("SCRAM client-final: no proof (p=) at its end")
	}
	f.WithoutProof = msg[:i]
	proof, err := base64.StdEncoding.DecodeString(string(msg[i+3:]))
	if err != nil || len(proof) == 0 {
		return f, errors.New("SCRAM client-final: the proof is not base64")
	}
	f.Proof = proof
	attrs := strings.Split(string(f.WithoutProof), ",")
	if len(attrs) < 2 || len(attrs) > 2+maxExtensions {
		return f, fmt.Errorf("SCRAM client-final: %d attributes before the proof, want c=, r= and at most %d extensions", len(attrs), maxExtensions)
	}
	var ok bool
	if f.ChannelBinding, ok = strings.CutPrefix(attrs[0], "c="); !ok || f.ChannelBinding == "" {
		return f, errors.New("SCRAM client-final: no channel binding (c=)")
	}
	if f.Nonce, ok = strings.CutPrefix(attrs[1], "r="); !ok || !printable(f.Nonce) {
		return f, errors.New("SCRAM client-final: no nonce (r=) of printable characters")
	}
	if _, err := parseExtensions(attrs[2:]); err != nil {
		return f, fmt.Errorf("SCRAM client-final: %w", err)
	}
	return f, nil
}

// IsScramServerFinal reports whether a server's SCRAM message ends the exchange: a verifier
// (v=) or an error (e=), as opposed to server-first.
func IsScramServerFinal(msg []byte) bool {
	return bytes.HasPrefix(msg, []byte("v=")) || bytes.HasPrefix(msg, []byte("e="))
}
