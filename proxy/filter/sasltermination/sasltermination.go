// Package sasltermination is the SaslTermination filter: the proxy authenticates clients
// itself (SCRAM-SHA-256/512 against a file of salted credentials, OAUTHBEARER against a JWKS)
// and never forwards their SaslHandshake or SaslAuthenticate. Upstream the proxy is itself:
// proxy/server dials the broker only for a request the chain forwards, that is after the
// client authenticated, and authenticates there with the virtual cluster's own credential
// (filter.Terminator).
//
// Until a connection's client has authenticated, the filter's gate (filter.Gate) sees each of
// its requests: ApiVersions is answered from the versions the brokers last offered
// (filter.Chain.LocalApiVersions), SaslHandshake and SaslAuthenticate are answered here, and any
// other request closes the connection, as a Kafka broker's SASL listener does. A failed
// authentication is answered SASL_AUTHENTICATION_FAILED after fixedAuthDelay, and the
// connection's next request closes it. On success the connection's subject is set, and
// SaslAuthenticate's SessionLifetimeMillis (KIP-368) is the earlier of maxTimeBeforeReauth and a
// token's expiry: clients re-authenticate on the same connection, which is handled here too
// (the principal may not change), and a connection whose session ends without a
// re-authentication is closed at its next request.
package sasltermination

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/oauth"
)

// Type is the filter type, as Kroxylicious names it.
const Type = "SaslTermination"

func init() {
	filter.RegisterTyped(newFilter, Type, "io.kroxylicious.filter.sasl.termination.SaslTermination")
}

// saslTermination is one virtual cluster's filter.
type saslTermination struct {
	s     settings
	mechs map[string]mechanism
	vc    string
	now   func() time.Time
}

// mechanism makes the server side of one exchange of a mechanism.
type mechanism interface {
	start() exchange
	close() error
}

// exchange is one authentication (or re-authentication) of one connection.
type exchange interface {
	// step takes the client's message and returns the reply. done with a nil error: the client
	// is authenticated as who. An error fails the authentication; its text carries no secret.
	step(ctx context.Context, msg []byte) (reply []byte, done bool, who identity, err error)
}

// identity is who an exchange authenticated.
type identity struct {
	user    string
	scopes  []string
	expires time.Time // a token's expiry; zero for SCRAM
}

func newFilter(cfg *Config, env filter.Env) (filter.Filter, error) {
	s, err := cfg.check()
	if err != nil {
		return nil, err
	}
	f := &saslTermination{s: s, mechs: map[string]mechanism{}, vc: env.VirtualCluster, now: time.Now}
	for mech, ss := range s.scram {
		m, err := newScram(mech, ss, env.ReadFile)
		if err != nil {
			return nil, err
		}
		f.mechs[mech] = m
	}
	if o := s.oauth; o != nil {
		v, err := oauth.NewValidator(o.cfg, oauth.ReadFile(env.ReadFile))
		if err != nil {
			return nil, fmt.Errorf("mechanism %s: %w", OAuthBearer, err)
		}
		f.mechs[OAuthBearer] = &oauthBearer{v: v, maxBytes: o.maxBytes}
	}
	return f, nil
}

// Close stops the OAUTHBEARER validator's JWKS fetches.
func (f *saslTermination) Close() error {
	var errs []error
	for _, m := range f.mechs {
		errs = append(errs, m.close())
	}
	return errors.Join(errs...)
}

// TerminatesSASL: the virtual cluster's connections go upstream as the proxy.
func (f *saslTermination) TerminatesSASL() bool { return true }

// Gates: every connection starts unauthenticated.
func (f *saslTermination) Gates() bool { return true }

// Keys are the SASL requests of a re-authentication on an authenticated connection.
func (f *saslTermination) Keys() []int16 {
	return []int16{kmsg.SASLHandshake.Int16(), kmsg.SASLAuthenticate.Int16()}
}

// connState is what the filter keeps per connection. Requests of one connection come one at a
// time; the lock is for the session timer.
type connState struct {
	mu      sync.Mutex
	mech    string   // the mechanism the last SaslHandshake chose
	ex      exchange // the exchange under way
	user    string   // who authenticated; empty before
	failed  bool     // an authentication failed: the next request closes the connection
	expired bool     // the session ended without a re-authentication
	timer   *time.Timer
	onEnd   sync.Once
}

func (f *saslTermination) state(c *filter.Conn) *connState {
	st := c.State(f, func() any { return &connState{} }).(*connState)
	st.onEnd.Do(func() { c.OnEnd(st.stop) }) // not from State's init, which holds the Conn's lock
	return st
}

// stop stops the session timer once the connection ended.
func (st *connState) stop() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.timer != nil {
		st.timer.Stop()
	}
}

// errRefused ends a connection: the client sent what a broker's SASL listener closes on.
var errRefused = errors.New("SaslTermination")

// Gate sees every request of a connection that has not authenticated (or whose session ended).
func (f *saslTermination) Gate(ctx context.Context, x *filter.Exchange) error {
	st := f.state(x.Conn)
	switch kmsg.Key(x.Key) {
	case kmsg.ApiVersions:
		if err := st.refusal(); err != nil {
			return err
		}
		resp, _ := x.Conn.LocalApiVersions()
		x.Answer(withOwnSASLVersions(resp))
		return nil
	case kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return f.OnRequest(ctx, x)
	}
	if err := st.refusal(); err != nil {
		return err
	}
	st.mu.Lock()
	expired := st.expired
	st.mu.Unlock()
	if expired {
		return fmt.Errorf("%w: %s after the SASL session expired without a re-authentication", errRefused, kmsg.NameForKey(x.Key))
	}
	return fmt.Errorf("%w: %s before the client authenticated", errRefused, kmsg.NameForKey(x.Key))
}

// withOwnSASLVersions offers the SASL versions the proxy itself answers, whatever the brokers
// offer: SaslHandshake from v0, as Kafka lists it (librdkafka refuses a broker that does not,
// though it sends v1, and the relay refuses v0's unframed tokens), and SaslAuthenticate as kmsg
// decodes it.
func withOwnSASLVersions(resp *kmsg.ApiVersionsResponse) *kmsg.ApiVersionsResponse {
	for _, key := range []kmsg.Key{kmsg.SASLHandshake, kmsg.SASLAuthenticate} {
		own := kmsg.ApiVersionsResponseApiKey{ApiKey: key.Int16(), MaxVersion: kmsg.RequestForKey(key.Int16()).MaxVersion()}
		i := slices.IndexFunc(resp.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == own.ApiKey })
		if i < 0 {
			resp.ApiKeys = append(resp.ApiKeys, own)
			continue
		}
		resp.ApiKeys[i] = own
	}
	return resp
}

// refusal is the error that closes a connection whose authentication failed.
func (st *connState) refusal() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.failed {
		return fmt.Errorf("%w: a request after a failed authentication", errRefused)
	}
	return nil
}

// OnRequest answers SaslHandshake and SaslAuthenticate: the first authentication (from Gate)
// and re-authentications.
func (f *saslTermination) OnRequest(ctx context.Context, x *filter.Exchange) error {
	st := f.state(x.Conn)
	if err := st.refusal(); err != nil {
		return err
	}
	switch r := x.Request.(type) {
	case *kmsg.SASLHandshakeRequest:
		x.Answer(f.handshake(st, r))
	case *kmsg.SASLAuthenticateRequest:
		x.Answer(f.authenticate(ctx, x, st, r))
	}
	return nil
}

// handshake chooses the exchange's mechanism, listing the enabled ones as a broker does.
func (f *saslTermination) handshake(st *connState, r *kmsg.SASLHandshakeRequest) *kmsg.SASLHandshakeResponse {
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SupportedMechanisms = f.s.mechanisms
	st.mu.Lock()
	defer st.mu.Unlock()
	st.mech, st.ex = "", nil
	if _, ok := f.mechs[r.Mechanism]; !ok {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp
	}
	st.mech = r.Mechanism
	return resp
}

// authenticate takes one SaslAuthenticate of the exchange the handshake started.
func (f *saslTermination) authenticate(ctx context.Context, x *filter.Exchange, st *connState, r *kmsg.SASLAuthenticateRequest) *kmsg.SASLAuthenticateResponse {
	st.mu.Lock()
	mech, ex := st.mech, st.ex
	if mech != "" && ex == nil {
		ex = f.mechs[mech].start()
		st.ex = ex
	}
	st.mu.Unlock()
	if ex == nil {
		return f.fail(ctx, x, st, mech, kerr.IllegalSaslState, "SaslAuthenticate without a SaslHandshake choosing a mechanism")
	}
	reply, done, who, err := ex.step(ctx, r.SASLAuthBytes)
	if err != nil {
		return f.fail(ctx, x, st, mech, kerr.SaslAuthenticationFailed, err.Error())
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SASLAuthBytes = reply
	if !done {
		return resp
	}
	prev := st.authenticated()
	if prev != "" && prev != who.user {
		return f.fail(ctx, x, st, mech, kerr.SaslAuthenticationFailed, "a re-authentication may not change the principal")
	}
	resp.SessionLifetimeMillis = f.succeed(x.Conn, st, mech, who)
	klog.FromContext(ctx).V(2).Info("SASL authenticated", "virtualCluster", f.vc, "mechanism", mech, "user", who.user,
		"reauthentication", prev != "", "sessionLifetimeMs", resp.SessionLifetimeMillis)
	return resp
}

func (st *connState) authenticated() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.user
}

// succeed makes the connection's subject who, opens the gate, and starts the session's timer;
// it returns the session's lifetime in milliseconds (0: no limit).
func (f *saslTermination) succeed(c *filter.Conn, st *connState, mech string, who identity) int64 {
	now := f.now()
	expires := who.expires
	if f.s.reauth > 0 && (expires.IsZero() || now.Add(f.s.reauth).Before(expires)) {
		expires = now.Add(f.s.reauth)
	}
	c.SetSubject(filter.Subject{User: who.user, Mechanism: mech, Scopes: who.scopes, Expires: expires})
	// Opened before the timer starts: a session that ends at once (a token within the clock
	// skew of its expiry) must find the gate open to close it.
	c.OpenGate(f)
	st.mu.Lock()
	st.user, st.ex, st.mech, st.expired = who.user, nil, "", false
	if st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
	var lifetime int64
	if !expires.IsZero() {
		d := expires.Sub(now)
		lifetime = max(d.Milliseconds(), 1)
		st.timer = time.AfterFunc(d, func() { f.expire(c, st) })
	}
	st.mu.Unlock()
	return lifetime
}

// expire closes the gate of a connection whose session ended: its next request, unless it is a
// re-authentication, closes it.
func (f *saslTermination) expire(c *filter.Conn, st *connState) {
	st.mu.Lock()
	st.expired = true
	st.mu.Unlock()
	c.CloseGate(f)
}

// fail answers a failed authentication after the fixed delay, and marks the connection so that
// its next request closes it. The client's own connection waits; no other does.
func (f *saslTermination) fail(ctx context.Context, x *filter.Exchange, st *connState, mech string, code *kerr.Error, why string) *kmsg.SASLAuthenticateResponse {
	st.mu.Lock()
	st.failed, st.ex = true, nil
	st.mu.Unlock()
	x.Conn.CloseGate(f)
	klog.FromContext(ctx).V(2).Info("SASL authentication failed", "virtualCluster", f.vc, "mechanism", mech, "reason", why)
	if f.s.delay > 0 {
		t := time.NewTimer(f.s.delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.ErrorCode = code.Code
	msg := fmt.Sprintf("Authentication failed during authentication due to invalid credentials with SASL mechanism %s", mech)
	if code != kerr.SaslAuthenticationFailed {
		msg = why
	}
	resp.ErrorMessage = &msg
	return resp
}

// OnResponse is never called: the filter answers every request it sees.
func (f *saslTermination) OnResponse(context.Context, *filter.Exchange) error { return nil }
