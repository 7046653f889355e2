package sasltermination

import (
	"context"
	"errors"
	"fmt"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/oauth"
	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// scramMech is SCRAM-SHA-256 or -512 over the credential store file, read when the filter is built
// (a changed file rebuilds the chain).
type scramMech struct {
	mech    string
	lookup  func(user string) (sasl.ScramCredential, bool)
	phantom *sasl.PhantomSource
}

func newScram(mech string, ss scramSettings, readFile filter.ReadFile) (*scramMech, error) {
	b, err := readFile(ss.file)
	if err != nil {
		return nil, fmt.Errorf("mechanism %s: credentialStoreConfig.file: %w", mech, err)
	}
	store, err := sasl.ParseCredentialStore(b)
	if err != nil {
		return nil, fmt.Errorf("mechanism %s: credentialStoreConfig.file %s: %w", mech, ss.file, err)
	}
	phantom, err := sasl.NewPhantomSource(ss.iterations)
	if err != nil {
		return nil, fmt.Errorf("mechanism %s: %w", mech, err)
	}
	return &scramMech{mech: mech, lookup: store.Lookup(mech), phantom: phantom}, nil
}

func (s *scramMech) start() exchange {
	srv, err := sasl.NewScramServer(s.mech, s.lookup, s.phantom)
	if err != nil {
		return failedExchange{err}
	}
	return scramExchange{srv}
}

func (s *scramMech) close() error { return nil }

type scramExchange struct{ srv *sasl.ScramServer }

func (e scramExchange) step(_ context.Context, msg []byte) ([]byte, bool, identity, error) {
	reply, done, user, err := e.srv.Step(msg)
	return reply, done, identity{user: user}, err
}

// failedExchange fails its first step.
type failedExchange struct{ err error }

func (e failedExchange) step(context.Context, []byte) ([]byte, bool, identity, error) {
	return nil, true, identity{}, e.err
}

// oauthBearer is OAUTHBEARER: a JWT validated against the issuer's JWKS.
type oauthBearer struct {
	v        *oauth.Validator
	maxBytes int
}

func (o *oauthBearer) start() exchange { return oauthExchange{o} }

func (o *oauthBearer) close() error { return o.v.Close() }

type oauthExchange struct{ o *oauthBearer }

// errTokenRefused is the reason given for any token that does not validate: why it did not is
// logged at verbosity 2, not told to the client.
var errTokenRefused = errors.New("the bearer token did not validate")

// step validates the one message of the exchange (RFC 7628's client initial response); the
// reply to a valid one is empty. An authorization id, when given, must be the token's subject.
func (e oauthExchange) step(ctx context.Context, msg []byte) ([]byte, bool, identity, error) {
	if len(msg) > e.o.maxBytes {
		return nil, true, identity{}, fmt.Errorf("an OAUTHBEARER message of %d bytes, over maxAuthBytes (%d)", len(msg), e.o.maxBytes)
	}
	initial, err := sasl.ParseOAuthBearerInitial(msg)
	if err != nil {
		return nil, true, identity{}, err
	}
	claims, err := e.o.v.Validate(ctx, initial.Token)
	if err != nil {
		return nil, true, identity{}, fmt.Errorf("%w: %w", errTokenRefused, err)
	}
	if initial.Authzid != "" && initial.Authzid != claims.Subject {
		return nil, true, identity{}, errors.New("the authorization id is not the token's subject")
	}
	return nil, true, identity{user: claims.Subject, scopes: claims.Scopes, expires: claims.Expires}, nil
}
