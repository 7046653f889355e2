// Package saslinspection is the SaslInspection filter: it watches the SASL exchange between a
// client and the broker (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER) and, once the broker
// accepts it, makes the client's user the connection's subject (filter.Conn.SetSubject) for the
// filters after it. It never authenticates anyone itself: the broker decides.
//
// Its configuration is Kroxylicious' (io.kroxylicious.filter.sasl.inspection.SaslInspection):
//
//	enabledMechanisms: [SCRAM-SHA-512, OAUTHBEARER]  # default: SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER
//	requireAuthentication: true                       # default false
//	subjectBuilder: DefaultSaslSubjectBuilderService  # optional, with subjectBuilderConfig
//	subClaimName: sub                                 # kafkalink: the OAUTHBEARER token's claim for the user
//	scopeClaimName: scope                             # kafkalink: and for its scopes
//
// Behaviour, as Kroxylicious':
//   - The user is the client's authorization id: PLAIN's authzid, else its user name; SCRAM's
//     a=, else n=; OAUTHBEARER's a=, else the token's subject claim (read, not verified: the
//     broker verifies the token). The subject builder may map it.
//   - A SaslHandshake for a mechanism not enabled is answered by the proxy with
//     UNSUPPORTED_SASL_MECHANISM and the enabled mechanisms; the broker does not see it.
//   - The subject is set when the broker's SaslAuthenticate response succeeds and ends the
//     exchange (SCRAM: the server-final message). Its Expires is the broker's session lifetime
//     (KIP-368). An OAUTHBEARER success with a session lifetime of zero (an expired token the
//     broker let through) sets no subject.
//   - Re-authentication (KIP-368: a new SaslHandshake on a connection that authenticated with
//     SaslAuthenticate v1 or later) replaces the subject when it succeeds.
//   - A failed authentication (or a handshake the broker refused) is forwarded to the client and
//     the connection is then closed at the client's next request; the subject stays as it was.
//     A client message the filter cannot read, or SASL requests out of order, close the
//     connection at once.
//   - requireAuthentication: until the first authentication succeeds, every request but
//     ApiVersions, SaslHandshake and SaslAuthenticate closes the connection, as a Kafka broker
//     does (Kroxylicious first sends an error response; the proxy's chain cannot answer and then
//     close, and a closed connection is what Kafka clients meet at a broker).
package saslinspection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// Type is the filter type, as Kroxylicious names it.
const Type = "SaslInspection"

func init() {
	filter.RegisterTyped(newInspector, Type,
		"io.kroxylicious.filter.sasl.inspection.SaslInspection",
		"io.kroxylicious.filters.sasl.inspection.SaslInspection") // Kroxylicious' name before 0.19
}

// Mechanism names.
const (
	Plain       = "PLAIN"
	OAuthBearer = "OAUTHBEARER"
)

// mechanisms are those the filter reads; defaultMechanisms those enabled by default, the ones
// that do not send a password in the clear (Kroxylicious' default).
var (
	mechanisms        = []string{OAuthBearer, Plain, sasl.ScramSHA256, sasl.ScramSHA512}
	defaultMechanisms = []string{OAuthBearer, sasl.ScramSHA256, sasl.ScramSHA512}
)

// Config is the filter's configuration.
type Config struct {
	EnabledMechanisms     []string        `json:"enabledMechanisms,omitempty"`
	RequireAuthentication *bool           `json:"requireAuthentication,omitempty"`
	SubjectBuilder        string          `json:"subjectBuilder,omitempty"`
	SubjectBuilderConfig  json.RawMessage `json:"subjectBuilderConfig,omitempty"`
	// SubClaimName and ScopeClaimName are kafkalink's (named as in Kroxylicious'
	// SaslTermination): the OAUTHBEARER token claims of the user and its scopes.
	SubClaimName   string `json:"subClaimName,omitempty"`
	ScopeClaimName string `json:"scopeClaimName,omitempty"`
}

// inspector is the filter of one virtual cluster.
type inspector struct {
	enabled    []string // sorted
	require    bool
	subjects   *sasl.SubjectBuilder
	subClaim   string
	scopeClaim string
	now        func() time.Time
}

func newInspector(cfg *Config, _ filter.Env) (filter.Filter, error) {
	f := &inspector{require: cfg.RequireAuthentication != nil && *cfg.RequireAuthentication,
		subClaim: cfg.SubClaimName, scopeClaim: cfg.ScopeClaimName, now: time.Now}
	f.enabled = slices.Clone(defaultMechanisms)
	if cfg.EnabledMechanisms != nil {
		f.enabled = nil
		for _, m := range cfg.EnabledMechanisms {
			if !slices.Contains(mechanisms, m) {
				return nil, fmt.Errorf("enabledMechanisms: %q is not one of %v", m, mechanisms)
			}
			if !slices.Contains(f.enabled, m) {
				f.enabled = append(f.enabled, m)
			}
		}
		if len(f.enabled) == 0 {
			return nil, fmt.Errorf("enabledMechanisms: empty; enable at least one of %v", mechanisms)
		}
		slices.Sort(f.enabled)
	}
	var err error
	if f.subjects, err = sasl.NewSubjectBuilder(cfg.SubjectBuilder, cfg.SubjectBuilderConfig); err != nil {
		return nil, err
	}
	return f, nil
}

// Keys are the SASL requests.
// WatchesSASL marks the filter as one that reads the client's SASL exchange with the broker
// (filter.SASLWatcher): it cannot share a chain with SaslTermination.
func (f *inspector) WatchesSASL() {}

func (f *inspector) Keys() []int16 {
	return []int16{kmsg.SASLHandshake.Int16(), kmsg.SASLAuthenticate.Int16()}
}

// Gates: with requireAuthentication, connections start closed to all but the SASL requests.
func (f *inspector) Gates() bool { return f.require }

// phase is where a connection is in its SASL exchanges.
type phase int

const (
	expectHandshake    phase = iota // nothing yet, or after a success that allows re-authentication
	awaitHandshake                  // the handshake is with the broker
	expectAuthenticate              // the broker accepted the mechanism; the client's turn
	awaitAuthenticate               // a SaslAuthenticate is with the broker
	authenticatedOnce               // authenticated with SaslAuthenticate v0: no re-authentication
	failed                          // refused by the broker: the connection ends
)

// conn is one connection's SASL state. Requests and responses are filtered on two goroutines.
type conn struct {
	mu            sync.Mutex
	phase         phase
	mech          string
	user          string   // from the client's first message, mapped by the subject builder
	scopes        []string // OAUTHBEARER's
	rounds        int      // SaslAuthenticate requests of this exchange
	reauth        bool     // this exchange is a re-authentication, or v1+ (KIP-368)
	authenticated bool     // some exchange succeeded
}

func (f *inspector) conn(c *filter.Conn) *conn {
	return c.State(f, func() any { return &conn{} }).(*conn)
}

// errClose closes a connection; its text is logged, never sent.
var errClose = errors.New("SaslInspection")

// Gate refuses the requests of a connection that has not authenticated (requireAuthentication)
// or whose authentication failed.
func (f *inspector) Gate(ctx context.Context, x *filter.Exchange) error {
	st := f.conn(x.Conn)
	st.mu.Lock()
	failed := st.phase == failed
	st.mu.Unlock()
	if failed {
		return fmt.Errorf("%w: %s request after a failed SASL authentication", errClose, kmsg.NameForKey(x.Key))
	}
	switch x.Key {
	case kmsg.ApiVersions.Int16(), kmsg.SASLHandshake.Int16(), kmsg.SASLAuthenticate.Int16():
		return nil
	}
	klog.FromContext(ctx).V(1).Info("SaslInspection: request before SASL authentication, closing the connection", "apiKey", kmsg.NameForKey(x.Key))
	return fmt.Errorf("%w: %s request before SASL authentication (requireAuthentication)", errClose, kmsg.NameForKey(x.Key))
}

// OnRequest follows the client's side of the exchange.
func (f *inspector) OnRequest(ctx context.Context, x *filter.Exchange) error {
	st := f.conn(x.Conn)
	st.mu.Lock()
	defer st.mu.Unlock()
	switch req := x.Request.(type) {
	case *kmsg.SASLHandshakeRequest:
		return f.handshake(ctx, x, st, req)
	case *kmsg.SASLAuthenticateRequest:
		return f.authenticate(ctx, x, st, req)
	}
	return nil
}

func (f *inspector) handshake(ctx context.Context, x *filter.Exchange, st *conn, req *kmsg.SASLHandshakeRequest) error {
	if st.phase != expectHandshake {
		return fmt.Errorf("%w: SaslHandshake out of order", errClose)
	}
	if !slices.Contains(f.enabled, req.Mechanism) {
		klog.FromContext(ctx).V(2).Info("SaslInspection: mechanism not enabled", "mechanism", req.Mechanism)
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.ErrorCode, resp.SupportedMechanisms = kerr.UnsupportedSaslMechanism.Code, slices.Clone(f.enabled)
		x.Answer(resp)
		return nil
	}
	st.reauth = st.authenticated
	st.phase, st.mech, st.rounds = awaitHandshake, req.Mechanism, 0
	return nil
}

func (f *inspector) authenticate(ctx context.Context, x *filter.Exchange, st *conn, req *kmsg.SASLAuthenticateRequest) error {
	if st.phase != expectAuthenticate {
		return fmt.Errorf("%w: SaslAuthenticate out of order", errClose)
	}
	if st.rounds == 0 {
		user, scopes, err := f.identify(st.mech, req.SASLAuthBytes)
		if err != nil {
			klog.FromContext(ctx).V(1).Info("SaslInspection: unreadable SASL message, closing the connection", "mechanism", st.mech, "reason", err.Error())
			return fmt.Errorf("%w: %w", errClose, err)
		}
		st.user, st.scopes = user, scopes
	} else if !f.followUp(st, req.SASLAuthBytes) {
		return fmt.Errorf("%w: %s: unexpected client message", errClose, st.mech)
	}
	st.rounds++
	st.reauth = st.reauth || x.Version > 0
	st.phase = awaitAuthenticate
	return nil
}

// maxRounds bounds the SaslAuthenticate requests of one exchange: SCRAM takes two, OAUTHBEARER
// two when the broker refuses the token.
const maxRounds = 2

// followUp reports whether a later client message of the exchange is one the mechanism sends.
func (f *inspector) followUp(st *conn, msg []byte) bool {
	if st.rounds >= maxRounds {
		return false
	}
	switch st.mech {
	case sasl.ScramSHA256, sasl.ScramSHA512:
		_, err := sasl.ParseScramClientFinal(msg)
		return err == nil
	case OAuthBearer:
		return sasl.IsOAuthBearerErrorAck(msg)
	}
	return false
}

// identify reads the user (and scopes) of a mechanism's first client message.
func (f *inspector) identify(mech string, msg []byte) (string, []string, error) {
	var id string
	var scopes []string
	switch mech {
	case Plain:
		p, err := sasl.ParsePlain(msg)
		if err != nil {
			return "", nil, err
		}
		id = p.Identity()
	case sasl.ScramSHA256, sasl.ScramSHA512:
		first, err := sasl.ParseScramClientFirst(msg)
		if err != nil {
			return "", nil, err
		}
		if first.Extensions["tokenauth"] != "" {
			// The user of a delegation token exchange is the token's id, not a principal.
			return "", nil, errors.New("SCRAM delegation tokens (tokenauth) are not inspected")
		}
		id = first.Identity()
	case OAuthBearer:
		r, err := sasl.ParseOAuthBearerInitial(msg)
		if err != nil {
			return "", nil, err
		}
		claims, err := sasl.ReadJWTClaims(r.Token, f.subClaim, f.scopeClaim)
		if err != nil {
			return "", nil, err
		}
		id, scopes = claims.Subject, claims.Scopes
		if r.Authzid != "" {
			id = r.Authzid
		}
	}
	return f.subjects.User(id), scopes, nil
}

// OnResponse follows the broker's side of the exchange.
func (f *inspector) OnResponse(ctx context.Context, x *filter.Exchange) error {
	st := f.conn(x.Conn)
	st.mu.Lock()
	defer st.mu.Unlock()
	switch resp := x.Response.(type) {
	case *kmsg.SASLHandshakeResponse:
		f.handshakeResponse(ctx, x, st, resp)
	case *kmsg.SASLAuthenticateResponse:
		f.authenticateResponse(ctx, x, st, resp)
	}
	return nil
}

func (f *inspector) handshakeResponse(ctx context.Context, x *filter.Exchange, st *conn, resp *kmsg.SASLHandshakeResponse) {
	if st.phase != awaitHandshake {
		return
	}
	if resp.ErrorCode == 0 {
		st.phase = expectAuthenticate
		return
	}
	// Offer only what both the broker and the filter take, as Kroxylicious does.
	var common []string
	for _, m := range resp.SupportedMechanisms {
		if slices.Contains(f.enabled, m) {
			common = append(common, m)
		}
	}
	resp.ErrorCode, resp.SupportedMechanisms = kerr.UnsupportedSaslMechanism.Code, common
	klog.FromContext(ctx).V(2).Info("SaslInspection: the broker refused the mechanism", "mechanism", st.mech)
	f.fail(x, st)
}

func (f *inspector) authenticateResponse(ctx context.Context, x *filter.Exchange, st *conn, resp *kmsg.SASLAuthenticateResponse) {
	if st.phase != awaitAuthenticate {
		return
	}
	log := klog.FromContext(ctx)
	if resp.ErrorCode != 0 {
		log.V(2).Info("SaslInspection: the broker refused the authentication", "mechanism", st.mech, "user", st.user, "error", kerr.ErrorForCode(resp.ErrorCode).Error())
		f.fail(x, st)
		return
	}
	done, ok := f.finished(st, resp.SASLAuthBytes)
	if !ok {
		log.V(1).Info("SaslInspection: unexpected broker message ends the exchange", "mechanism", st.mech)
		f.fail(x, st)
		return
	}
	if !done {
		st.phase = expectAuthenticate
		return
	}
	st.phase = authenticatedOnce
	if st.reauth {
		st.phase = expectHandshake
	}
	if st.mech == OAuthBearer && resp.SessionLifetimeMillis == 0 {
		log.V(1).Info("SaslInspection: the broker accepted an expired OAUTHBEARER token; the client must re-authenticate", "user", st.user)
		return
	}
	subject := filter.Subject{User: st.user, Mechanism: st.mech, Scopes: st.scopes}
	if resp.SessionLifetimeMillis > 0 {
		subject.Expires = f.now().Add(time.Duration(resp.SessionLifetimeMillis) * time.Millisecond)
	}
	x.Conn.SetSubject(subject)
	x.Conn.OpenGate(f)
	st.authenticated = true
	log.V(2).Info("SaslInspection: the broker accepted the client", "mechanism", st.mech, "user", st.user)
}

// finished reports whether a successful response ends the exchange (done), and whether it is
// one the mechanism's server sends (ok): SCRAM's server-first then its server-final verifier
// (an e= error ends it unsuccessfully), PLAIN's empty message, OAUTHBEARER's empty message or
// its error challenge, which the client answers before the broker fails the exchange.
func (f *inspector) finished(st *conn, msg []byte) (done, ok bool) {
	switch st.mech {
	case sasl.ScramSHA256, sasl.ScramSHA512:
		if st.rounds == 1 {
			return false, !sasl.IsScramServerFinal(msg)
		}
		return true, len(msg) > 2 && string(msg[:2]) == "v="
	case OAuthBearer:
		return len(msg) == 0, st.rounds == 1 || len(msg) == 0
	}
	return true, len(msg) == 0
}

// fail ends the connection's SASL: the response goes to the client, and the gate closes so the
// client's next request closes the connection.
func (f *inspector) fail(x *filter.Exchange, st *conn) {
	st.phase = failed
	x.Conn.CloseGate(f)
}
