package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// The SCRAM mechanisms, as Kafka names them.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Iteration bounds of a SCRAM credential: Kafka's minimum (RFC 7677's recommendation), and a
// maximum that keeps a handshake's PBKDF2 (done by the client) and a store's check reasonable.
const (
	MinIterations = 4096
	MaxIterations = 1_000_000
	// DefaultPhantomIterations is the iteration count of phantom challenges (Kroxylicious'
	// phantomIterations default): it should be the count of the real credentials.
	DefaultPhantomIterations = 10_000
	// SaltBytes is the length of the salts NewSalt makes and of phantom salts (Kroxylicious').
	SaltBytes = 20
)

// ErrAuthenticationFailed is the error of an exchange whose proof did not match, or whose user
// the lookup does not know: the two are told apart by no message, reply or timing.
var ErrAuthenticationFailed = errors.New("authentication failed: invalid credentials")

// IsScram reports whether mech is one of the SCRAM mechanisms ScramServer serves.
func IsScram(mech string) bool { return mech == ScramSHA256 || mech == ScramSHA512 }

// scramHash is the hash of a SCRAM mechanism.
func scramHash(mech string) (func() hash.Hash, error) {
	switch mech {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("mechanism %q is not %s or %s", mech, ScramSHA256, ScramSHA512)
}

// ScramCredential is what a server keeps of a SCRAM user (RFC 5802 section 3): enough to check
// a proof and sign the answer, not to authenticate as the user elsewhere.
type ScramCredential struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte
	ServerKey  []byte
}

// NewSalt is a random salt of SaltBytes.
func NewSalt() []byte {
	b := make([]byte, SaltBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return b
}

// NewScramCredential derives the credential of password for mech (SaltedPassword by PBKDF2,
// then the client and server keys), as Kafka's kafka-configs --add-config 'SCRAM-SHA-512=…'
// does: the password's UTF-8 bytes, without SASLprep, as Kafka's and franz-go's clients send it.
func NewScramCredential(mech string, password []byte, salt []byte, iterations int) (ScramCredential, error) {
	h, err := scramHash(mech)
	if err != nil {
		return ScramCredential{}, err
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return ScramCredential{}, fmt.Errorf("iterations %d: must be %d..%d", iterations, MinIterations, MaxIterations)
	}
	if len(salt) == 0 {
		return ScramCredential{}, errors.New("empty salt")
	}
	salted, err := pbkdf2.Key(h, string(password), salt, iterations, h().Size())
	if err != nil {
		return ScramCredential{}, fmt.Errorf("PBKDF2: %w", err)
	}
	clientKey := hmacOf(h, salted, []byte("Client Key"))
	return ScramCredential{
		Salt:       append([]byte(nil), salt...),
		Iterations: iterations,
		StoredKey:  hashOf(h, clientKey),
		ServerKey:  hmacOf(h, salted, []byte("Server Key")),
	}, nil
}

// check reports whether the credential's keys fit mech's hash.
func (c ScramCredential) check(h func() hash.Hash) error {
	n := h().Size()
	switch {
	case len(c.Salt) == 0:
		return errors.New("empty salt")
	case c.Iterations < MinIterations || c.Iterations > MaxIterations:
		return fmt.Errorf("iterations %d: must be %d..%d", c.Iterations, MinIterations, MaxIterations)
	case len(c.StoredKey) != n:
		return fmt.Errorf("storedKey of %d bytes, the hash makes %d", len(c.StoredKey), n)
	case len(c.ServerKey) != n:
		return fmt.Errorf("serverKey of %d bytes, the hash makes %d", len(c.ServerKey), n)
	}
	return nil
}

func hmacOf(h func() hash.Hash, key, msg []byte) []byte {
	m := hmac.New(h, key)
	m.Write(msg)
	return m.Sum(nil)
}

func hashOf(h func() hash.Hash, b []byte) []byte {
	d := h()
	d.Write(b)
	return d.Sum(nil)
}

// PhantomSource makes the credentials of users a server does not know, so that their challenge
// looks like a real one (RFC 5802 section 9: a server should not reveal whether a user exists):
// the salt is derived from the user name with a per-process secret, so asking twice gives the
// same salt, and the keys are random, so no proof matches.
type PhantomSource struct {
	secret     [32]byte
	iterations int
}

// NewPhantomSource makes a source with a fresh secret whose phantom challenges carry iterations
// (DefaultPhantomIterations when 0).
func NewPhantomSource(iterations int) (*PhantomSource, error) {
	if iterations == 0 {
		iterations = DefaultPhantomIterations
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return nil, fmt.Errorf("phantomIterations %d: must be %d..%d", iterations, MinIterations, MaxIterations)
	}
	p := &PhantomSource{iterations: iterations}
	_, _ = rand.Read(p.secret[:])
	return p, nil
}

// credential is the phantom credential of user for mech.
func (p *PhantomSource) credential(h func() hash.Hash, mech, user string) ScramCredential {
	salt := hmacOf(sha256.New, p.secret[:], []byte(mech+"\x00"+user))[:SaltBytes]
	n := h().Size()
	keys := make([]byte, 2*n)
	_, _ = rand.Read(keys)
	return ScramCredential{Salt: salt, Iterations: p.iterations, StoredKey: keys[:n], ServerKey: keys[n:]}
}

// scramStep is where a ScramServer is in the exchange.
type scramStep int

const (
	expectClientFirst scramStep = iota
	expectClientFinal
	scramDone
)

// ScramServer is the server side of one SCRAM exchange (one client connection's authentication;
// a re-authentication takes a new one). It is not safe for concurrent use.
type ScramServer struct {
	mech    string
	h       func() hash.Hash
	lookup  func(user string) (ScramCredential, bool)
	phantom *PhantomSource

	step    scramStep
	first   ScramClientFirst
	cred    ScramCredential
	known   bool
	nonce   string // client nonce + server nonce
	authMsg []byte // client-first-bare "," server-first: the client-final part is added later
}

// NewScramServer starts an exchange of mech (ScramSHA256 or ScramSHA512) whose users' credentials
// lookup returns; a user it does not know gets phantom's challenge.
func NewScramServer(mech string, lookup func(user string) (ScramCredential, bool), phantom *PhantomSource) (*ScramServer, error) {
	h, err := scramHash(mech)
	if err != nil {
		return nil, err
	}
	if lookup == nil || phantom == nil {
		return nil, errors.New("SCRAM server without a credential lookup or a phantom source")
	}
	return &ScramServer{mech: mech, h: h, lookup: lookup, phantom: phantom}, nil
}

// Step takes the client's next message and returns the server's reply. After client-first the
// reply is server-first; after client-final it is server-final ("v=…"), with done set and user
// the authenticated user's name. An error ends the exchange: the client is not authenticated
// (ErrAuthenticationFailed for a wrong proof or an unknown user, else a malformed message). The
// error's text is safe to log and to send: it carries no secret.
func (s *ScramServer) Step(msg []byte) (reply []byte, done bool, user string, err error) {
	switch s.step {
	case expectClientFirst:
		reply, err = s.clientFirst(msg)
		if err != nil {
			s.step = scramDone
			return nil, true, "", err
		}
		s.step = expectClientFinal
		return reply, false, "", nil
	case expectClientFinal:
		s.step = scramDone
		reply, err = s.clientFinal(msg)
		if err != nil {
			return nil, true, "", err
		}
		return reply, true, s.first.User, nil
	}
	return nil, true, "", errors.New("SCRAM exchange already over")
}

// Mechanism is the exchange's mechanism.
func (s *ScramServer) Mechanism() string { return s.mech }

func (s *ScramServer) clientFirst(msg []byte) ([]byte, error) {
	first, err := ParseScramClientFirst(msg)
	if err != nil {
		return nil, err
	}
	if first.Extensions["tokenauth"] != "" {
		return nil, errors.New("SCRAM delegation tokens (tokenauth) are not supported")
	}
	if first.Authzid != "" && first.Authzid != first.User {
		// As Kafka's ScramSaslServer: a client may not act for another user.
		return nil, errors.New("SCRAM client-first: the authorization id is not the user name")
	}
	s.first = first
	cred, ok := s.lookup(first.User)
	if ok && cred.check(s.h) != nil {
		ok = false // a credential of the wrong size never matches; treated as unknown
	}
	if !ok {
		cred = s.phantom.credential(s.h, s.mech, first.User)
	}
	s.cred, s.known = cred, ok
	var nonce [24]byte
	_, _ = rand.Read(nonce[:])
	s.nonce = first.Nonce + base64.RawURLEncoding.EncodeToString(nonce[:])
	serverFirst := fmt.Appendf(nil, "r=%s,s=%s,i=%d", s.nonce, base64.StdEncoding.EncodeToString(cred.Salt), cred.Iterations)
	s.authMsg = append(append(append([]byte(nil), first.Bare...), ','), serverFirst...)
	return serverFirst, nil
}

func (s *ScramServer) clientFinal(msg []byte) ([]byte, error) {
	final, err := ParseScramClientFinal(msg)
	if err != nil {
		return nil, err
	}
	if final.ChannelBinding != base64.StdEncoding.EncodeToString([]byte(s.first.GS2Header)) {
		return nil, errors.New("SCRAM client-final: channel binding does not match the client-first header")
	}
	// Kafka's broker checks that the nonce ends with the server's, not that it equals it:
	// librdkafka sends its own nonce again in front of the combined one (seen with kcat).
	if !strings.HasSuffix(final.Nonce, s.nonce) {
		return nil, errors.New("SCRAM client-final: nonce does not match")
	}
	authMsg := append(append(s.authMsg, ','), final.WithoutProof...)
	clientSig := hmacOf(s.h, s.cred.StoredKey, authMsg)
	if len(final.Proof) != len(clientSig) {
		return nil, ErrAuthenticationFailed
	}
	clientKey := make([]byte, len(clientSig))
	subtle.XORBytes(clientKey, final.Proof, clientSig)
	match := subtle.ConstantTimeCompare(hashOf(s.h, clientKey), s.cred.StoredKey) == 1
	if !match || !s.known {
		return nil, ErrAuthenticationFailed
	}
	return append([]byte("v="), base64.StdEncoding.EncodeToString(hmacOf(s.h, s.cred.ServerKey, authMsg))...), nil
}
