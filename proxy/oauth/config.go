// Package oauth validates OAuth 2.0 bearer tokens (JWTs signed as JWS, RFC 7515/7519) against
// the JSON Web Key Set of their issuer, for the OauthBearerValidation filter and SASL
// termination's OAUTHBEARER.
//
// Accepted algorithms: RS256/384/512, PS256/384/512, ES256/384/512 and EdDSA (Ed25519); "none"
// and the HMAC algorithms are always refused. The token must carry exp; nbf and iat are checked
// when present, each with ClockSkew of tolerance; aud and iss must match when the configuration
// expects them. The JWKS is fetched lazily (never while the filter is built), refreshed, refetched
// when a token names an unknown kid (at most once per jwksEndpointRetryBackoffMaxMs), and the
// last good set is kept while the endpoint fails.
package oauth

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Config is the token validation part of Kroxylicious' OauthBearerValidation configuration,
// with its field names and Kafka's defaults (sasl.oauthbearer.*).
type Config struct {
	// JwksEndpointURL is where the issuer's JWKS is fetched: https, or http to a loopback address.
	JwksEndpointURL string `json:"jwksEndpointUrl"`
	// JwksEndpointRefreshMs is the interval between refreshes of the JWKS (default 3600000).
	JwksEndpointRefreshMs *int64 `json:"jwksEndpointRefreshMs,omitempty"`
	// JwksEndpointRetryBackoffMs is the first delay after a failed fetch (default 100).
	JwksEndpointRetryBackoffMs *int64 `json:"jwksEndpointRetryBackoffMs,omitempty"`
	// JwksEndpointRetryBackoffMaxMs is the longest delay between failed fetches (default 10000).
	JwksEndpointRetryBackoffMaxMs *int64 `json:"jwksEndpointRetryBackoffMaxMs,omitempty"`
	// ScopeClaimName is the claim holding the scopes (default "scope").
	ScopeClaimName string `json:"scopeClaimName,omitempty"`
	// SubClaimName is the claim holding the subject (default "sub").
	SubClaimName string `json:"subClaimName,omitempty"`
	// ExpectedAudience is a comma-separated list: a token must name one of them in aud.
	ExpectedAudience string `json:"expectedAudience,omitempty"`
	// ExpectedIssuer is what a token's iss must be.
	ExpectedIssuer string `json:"expectedIssuer,omitempty"`
	// JwksEndpointCAFile (kafkalink's own) is a PEM file of the CAs the JWKS endpoint's
	// certificate is verified with; the system's roots when empty. Mount it from a Secret
	// ($(secretFile:…)).
	JwksEndpointCAFile string `json:"jwksEndpointCaFile,omitempty"`
}

// Defaults, as Kafka's sasl.oauthbearer.* settings that Kroxylicious passes on.
const (
	DefaultRefresh         = time.Hour
	DefaultRetryBackoff    = 100 * time.Millisecond
	DefaultRetryBackoffMax = 10 * time.Second
	DefaultScopeClaim      = "scope"
	DefaultSubClaim        = "sub"
	// ClockSkew is the tolerance on exp, nbf and iat (Kafka's sasl.oauthbearer.clock.skew.seconds).
	ClockSkew = 30 * time.Second
	// maxInterval bounds every configured interval (a day).
	maxInterval = 24 * time.Hour
)

// settings is a checked Config with its defaults applied.
type settings struct {
	url                  *url.URL
	refresh              time.Duration
	backoff, backoffMax  time.Duration
	scopeClaim, subClaim string
	audiences            []string
	issuer               string
}

// check applies defaults and checks bounds; errors name the field.
func (c Config) check() (settings, error) {
	s := settings{scopeClaim: DefaultScopeClaim, subClaim: DefaultSubClaim, issuer: strings.TrimSpace(c.ExpectedIssuer)}
	u, err := checkURL(c.JwksEndpointURL)
	if err != nil {
		return s, err
	}
	s.url = u
	if s.refresh, err = millis("jwksEndpointRefreshMs", c.JwksEndpointRefreshMs, DefaultRefresh, time.Second); err != nil {
		return s, err
	}
	if s.backoff, err = millis("jwksEndpointRetryBackoffMs", c.JwksEndpointRetryBackoffMs, DefaultRetryBackoff, time.Millisecond); err != nil {
		return s, err
	}
	if s.backoffMax, err = millis("jwksEndpointRetryBackoffMaxMs", c.JwksEndpointRetryBackoffMaxMs, DefaultRetryBackoffMax, time.Millisecond); err != nil {
		return s, err
	}
	if s.backoffMax < s.backoff {
		return s, fmt.Errorf("jwksEndpointRetryBackoffMaxMs (%d) is less than jwksEndpointRetryBackoffMs (%d)", s.backoffMax.Milliseconds(), s.backoff.Milliseconds())
	}
	if n := strings.TrimSpace(c.ScopeClaimName); n != "" {
		s.scopeClaim = n
	}
	if n := strings.TrimSpace(c.SubClaimName); n != "" {
		s.subClaim = n
	}
	for _, a := range strings.Split(c.ExpectedAudience, ",") {
		if a = strings.TrimSpace(a); a != "" {
			s.audiences = append(s.audiences, a)
		}
	}
	return s, nil
}

// checkURL accepts https, and http only to a loopback host (a sidecar, tests): a JWKS fetched in
// clear over a network could be replaced, and with it every key.
func checkURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, fmt.Errorf("jwksEndpointUrl is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("jwksEndpointUrl: %w", err)
	}
	switch {
	case u.Scheme == "https" && u.Host != "":
	case u.Scheme == "http" && isLoopback(u.Hostname()):
	default:
		return nil, fmt.Errorf("jwksEndpointUrl %q: must be an https URL (http only to localhost or a loopback address)", raw)
	}
	return u, nil
}

func isLoopback(host string) bool {
	return host == "localhost" || host == "::1" || strings.HasPrefix(host, "127.")
}

// millis reads an interval in milliseconds: unset is def, and it must lie in [least, a day].
func millis(field string, v *int64, def, least time.Duration) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	if *v < least.Milliseconds() || *v > maxInterval.Milliseconds() {
		return 0, fmt.Errorf("%s: %d is out of range [%d, %d]", field, *v, least.Milliseconds(), maxInterval.Milliseconds())
	}
	return time.Duration(*v) * time.Millisecond, nil
}
