package sasl

import (
	"bytes"
	"errors"
	"unicode/utf8"
)

// Plain is what a PLAIN message (RFC 4616) says of who the client is; its password is checked
// for presence and not kept.
type Plain struct {
	// Authzid is the authorization identity, empty when the client named none.
	Authzid string
	// Authcid is the authentication identity: the user name.
	Authcid string
}

// Identity is who the client authenticates as: the authorization identity when set (Kafka
// refuses one that is not the user name; Kroxylicious takes it), else the user name.
func (p Plain) Identity() string {
	if p.Authzid != "" {
		return p.Authzid
	}
	return p.Authcid
}

// ParsePlain reads a PLAIN message: authzid NUL authcid NUL passwd, the user name and the
// password not empty (Kafka's PlainSaslServer refuses either empty), all UTF-8.
func ParsePlain(msg []byte) (Plain, error) {
	if err := checkMessage("PLAIN", msg, MaxMessageBytes); err != nil {
		return Plain{}, err
	}
	parts := bytes.SplitN(msg, []byte{0}, 4)
	if len(parts) != 3 {
		return Plain{}, errors.New("PLAIN: not authzid NUL authcid NUL password")
	}
	if len(parts[1]) == 0 || len(parts[2]) == 0 {
		return Plain{}, errors.New("PLAIN: empty user name or password")
	}
	if !utf8.Valid(parts[0]) || !utf8.Valid(parts[1]) {
		return Plain{}, errors.New("PLAIN: identity not UTF-8")
	}
	return Plain{Authzid: string(parts[0]), Authcid: string(parts[1])}, nil
}
