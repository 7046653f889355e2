// Package oauthbearer is the OauthBearerValidation filter: the OAUTHBEARER token a client sends
// in SaslAuthenticate is validated at the proxy (proxy/oauth: signature against the issuer's
// JWKS, expiry, audience, issuer) before it reaches the broker. An invalid token is answered by
// the proxy with SASL_AUTHENTICATION_FAILED and never forwarded; a valid one is forwarded, and
// when the broker accepts it the connection's subject is the token's subject, with its scopes
// and expiry.
//
// Its configuration is Kroxylicious' (the same field names and defaults):
//
//	jwksEndpointUrl: https://issuer.example/.well-known/jwks.json   # required
//	jwksEndpointRefreshMs: 3600000
//	jwksEndpointRetryBackoffMs: 100
//	jwksEndpointRetryBackoffMaxMs: 10000
//	scopeClaimName: scope
//	subClaimName: sub
//	authenticateBackOffMaxMs: 60000    # 0: no delay after failures
//	authenticateCacheMaxSize: 1000     # failed tokens remembered for the delay
//	expectedAudience: kafka, https://kafka.example
//	expectedIssuer: https://issuer.example/
//	jwksEndpointCaFile: /opt/kroxylicious/secrets/filter/ca.pem   # kafkalink: the JWKS server's CA
//
// A token that failed recently is validated again only after a delay that doubles with each
// failure (500 ms, 1 s, 2 s, … at most 5 s, with jitter, and at most authenticateBackOffMaxMs),
// as Kroxylicious does: guessing gets slow.
package oauthbearer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/oauth"
	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// Type is the filter type, as Kroxylicious names it.
const Type = "OauthBearerValidation"

// Mechanism is the SASL mechanism the filter validates.
const Mechanism = "OAUTHBEARER"

func init() {
	filter.RegisterTyped(newFilter, Type,
		"io.kroxylicious.filter.oauthbearer.OauthBearerValidation",
		"io.kroxylicious.proxy.filter.oauthbearer.OauthBearerValidation") // its name before 0.19
}

// Config is the filter's configuration: Kroxylicious' OauthBearerValidation.Config.
type Config struct {
	oauth.Config
	// AuthenticateBackOffMaxMs is the longest a failed token's next validation is delayed, and
	// how long a failure is remembered (default 60000; 0: no delay).
	AuthenticateBackOffMaxMs *int64 `json:"authenticateBackOffMaxMs,omitempty"`
	// AuthenticateCacheMaxSize is how many failed tokens are remembered (default 1000).
	AuthenticateCacheMaxSize *int64 `json:"authenticateCacheMaxSize,omitempty"`
	// JwtValidatorClass is Kroxylicious' pluggable validator; only Kafka's broker validator,
	// which this filter implements, is accepted.
	JwtValidatorClass string `json:"jwtValidatorClass,omitempty"`
}

// Defaults and bounds of the filter's own fields.
const (
	DefaultBackOffMax  = time.Minute
	DefaultCacheSize   = 1000
	maxBackOffMax      = time.Hour
	maxCacheSize       = 1_000_000
	brokerJwtValidator = "org.apache.kafka.common.security.oauthbearer.BrokerJwtValidator"
)

// bearer is the filter.
type bearer struct {
	v        *oauth.Validator
	failures *failures
	m        *metrics
}

// validationTimeout bounds one token's validation, the JWKS fetch included.
const validationTimeout = 15 * time.Second

func newFilter(cfg *Config, env filter.Env) (filter.Filter, error) {
	if cfg.JwtValidatorClass != "" && cfg.JwtValidatorClass != brokerJwtValidator {
		return nil, fmt.Errorf("jwtValidatorClass %q: only %s is implemented", cfg.JwtValidatorClass, brokerJwtValidator)
	}
	backOffMax, err := boundedMillis("authenticateBackOffMaxMs", cfg.AuthenticateBackOffMaxMs, DefaultBackOffMax, maxBackOffMax)
	if err != nil {
		return nil, err
	}
	size := int64(DefaultCacheSize)
	if cfg.AuthenticateCacheMaxSize != nil {
		if size = *cfg.AuthenticateCacheMaxSize; size < 1 || size > maxCacheSize {
			return nil, fmt.Errorf("authenticateCacheMaxSize: %d is out of range [1, %d]", size, maxCacheSize)
		}
	}
	v, err := oauth.NewValidator(cfg.Config, oauth.ReadFile(env.ReadFile))
	if err != nil {
		return nil, err
	}
	return &bearer{v: v, failures: newFailures(int(size), backOffMax), m: newMetrics(env.VirtualCluster)}, nil
}

func boundedMillis(field string, v *int64, def, most time.Duration) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	if *v < 0 || *v > most.Milliseconds() {
		return 0, fmt.Errorf("%s: %d is out of range [0, %d]", field, *v, most.Milliseconds())
	}
	return time.Duration(*v) * time.Millisecond, nil
}

// Close stops the JWKS fetcher and drops the filter's metrics.
func (b *bearer) Close() error {
	b.m.close()
	return b.v.Close()
}

// WatchesSASL marks the filter as one that reads the client's SASL exchange with the broker
// (filter.SASLWatcher): it cannot share a chain with SaslTermination.
func (b *bearer) WatchesSASL() {}

func (b *bearer) Keys() []int16 {
	return []int16{kmsg.SASLHandshake.Int16(), kmsg.SASLAuthenticate.Int16()}
}

// connState is the mechanism the connection's last SaslHandshake named. It is set on the
// request side only, where a connection's requests come one after another.
type connState struct{ mechanism string }

func (b *bearer) state(x *filter.Exchange) *connState {
	return x.Conn.State(b, func() any { return &connState{} }).(*connState)
}

func (b *bearer) OnRequest(ctx context.Context, x *filter.Exchange) error {
	switch req := x.Request.(type) {
	case *kmsg.SASLHandshakeRequest:
		// Kept while the connection lives: every later SaslAuthenticate (a KIP-368
		// re-authentication too) of an OAUTHBEARER connection is validated.
		b.state(x).mechanism = req.Mechanism
	case *kmsg.SASLAuthenticateRequest:
		if b.state(x).mechanism == Mechanism {
			b.authenticate(ctx, x, req)
		}
	}
	return nil
}

// authenticate validates the token of an OAUTHBEARER SaslAuthenticate: valid, it goes on to the
// broker with its claims kept for the response; invalid, the proxy answers.
func (b *bearer) authenticate(ctx context.Context, x *filter.Exchange, req *kmsg.SASLAuthenticateRequest) {
	sum := sha256.Sum256(req.SASLAuthBytes)
	if err := sleep(ctx, b.failures.delay(sum, time.Now())); err != nil {
		refuse(x, errors.New("the proxy is stopping"))
		return
	}
	claims, err := b.validate(ctx, req.SASLAuthBytes)
	if err != nil {
		if errors.Is(err, oauth.ErrInvalidToken) || errors.Is(err, errInitialResponse) {
			b.failures.failed(sum, time.Now())
			b.m.result(resultInvalid)
		} else {
			b.m.result(resultJWKSUnavailable)
		}
		klog.FromContext(ctx).V(2).Info("OAUTHBEARER authentication refused by the proxy", "reason", err.Error())
		refuse(x, err)
		return
	}
	b.failures.succeeded(sum)
	b.m.result(resultValid)
	x.Set(b, claims)
}

// errInitialResponse marks a SaslAuthenticate that is not an OAUTHBEARER initial response.
var errInitialResponse = errors.New("not an OAUTHBEARER initial client response (RFC 7628)")

func (b *bearer) validate(ctx context.Context, authBytes []byte) (oauth.Claims, error) {
	r, err := sasl.ParseOAuthBearerInitial(authBytes)
	if err != nil {
		return oauth.Claims{}, fmt.Errorf("%w: %w", errInitialResponse, err)
	}
	ctx, cancel := context.WithTimeout(ctx, validationTimeout)
	defer cancel()
	claims, err := b.v.Validate(ctx, r.Token)
	if err != nil {
		return oauth.Claims{}, err
	}
	if r.Authzid != "" && r.Authzid != claims.Subject {
		// As Kafka's OAuthBearerSaslServer: a client may not act for another principal.
		return oauth.Claims{}, fmt.Errorf("%w: the authorization id is not the token's subject", oauth.ErrInvalidToken)
	}
	return claims, nil
}

// refuse answers the SaslAuthenticate with SASL_AUTHENTICATION_FAILED. The message says why,
// and never carries the token.
func refuse(x *filter.Exchange, err error) {
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SetVersion(x.Version)
	resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
	msg := "OAUTHBEARER authentication failed at the proxy: " + err.Error()
	resp.ErrorMessage = &msg
	x.Answer(resp)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OnResponse sets the connection's subject when the broker accepted a token the proxy validated.
func (b *bearer) OnResponse(_ context.Context, x *filter.Exchange) error {
	resp, ok := x.Response.(*kmsg.SASLAuthenticateResponse)
	if !ok || resp.ErrorCode != 0 {
		return nil
	}
	claims, ok := x.Get(b).(oauth.Claims)
	if !ok {
		return nil
	}
	expires := claims.Expires
	if resp.SessionLifetimeMillis > 0 { // KIP-368: the broker's session may end first
		if end := time.Now().Add(time.Duration(resp.SessionLifetimeMillis) * time.Millisecond); end.Before(expires) {
			expires = end
		}
	}
	x.Conn.SetSubject(filter.Subject{User: claims.Subject, Mechanism: Mechanism, Scopes: claims.Scopes, Expires: expires})
	return nil
}
