package oauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Claims is what a valid token says about its bearer.
type Claims struct {
	// Subject is the configured subject claim (subClaimName, default sub).
	Subject string
	// Scopes are the configured scope claim's values (scopeClaimName, default scope).
	Scopes []string
	// Expires is the token's exp.
	Expires time.Time
}

// ReadFile reads a file the configuration names (filter.Env.ReadFile).
type ReadFile func(path string) ([]byte, error)

// Validator validates tokens against one issuer's JWKS. It is safe for concurrent use.
type Validator struct {
	s     settings
	keys  *keySource
	cache *tokenCache
	now   func() time.Time
	// maxWait bounds how long a validation waits for the JWKS.
	maxWait time.Duration
}

// maxCachedTokens is how many validated tokens are remembered (by their SHA-256), so that a
// client that reconnects does not cost a signature verification each time.
const maxCachedTokens = 10000

// NewValidator checks cfg and prepares a validator, reading the CA file with readFile. It opens
// no connection: the JWKS is fetched on the first Validate.
func NewValidator(cfg Config, readFile ReadFile) (*Validator, error) {
	s, err := cfg.check()
	if err != nil {
		return nil, err
	}
	client, err := httpClient(cfg.JwksEndpointCAFile, readFile)
	if err != nil {
		return nil, err
	}
	v := &Validator{s: s, now: time.Now, maxWait: 10 * time.Second}
	v.cache = newTokenCache(maxCachedTokens)
	v.keys = newKeySource(s, client, v.cache.clear)
	return v, nil
}

// Close stops fetching the JWKS.
func (v *Validator) Close() error {
	v.keys.close()
	return nil
}

// Validate checks a token's signature and claims and returns its claims. A refused token's
// error wraps ErrInvalidToken and never contains the token; any other error means the JWKS could
// not be had (or ctx ended).
func (v *Validator) Validate(ctx context.Context, token string) (Claims, error) {
	if len(token) > MaxTokenBytes {
		return Claims{}, invalid("token of %d bytes, over %d", len(token), MaxTokenBytes)
	}
	now := v.now()
	sum := sha256.Sum256([]byte(token))
	if c, ok := v.cache.get(sum, now); ok {
		return c, nil
	}
	j, err := parseJWS(token)
	if err != nil {
		return Claims{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, v.maxWait)
	defer cancel()
	if err := v.verify(ctx, j); err != nil {
		return Claims{}, err
	}
	c, err := parseClaims(j.payload, v.s.subClaim, v.s.scopeClaim)
	if err != nil {
		return Claims{}, err
	}
	if err := v.checkClaims(c, now); err != nil {
		return Claims{}, err
	}
	out := Claims{Subject: c.Subject, Scopes: c.Scopes, Expires: c.Expires}
	v.cache.put(sum, out)
	out.Scopes = slices.Clone(out.Scopes) // the cached one stays as it was
	return out, nil
}

// verify finds the token's key and checks the signature. A kid the JWKS does not hold makes the
// JWKS be fetched again (the issuer may have rotated its keys), rate-limited.
func (v *Validator) verify(ctx context.Context, j *jws) error {
	keys, err := v.keys.get(ctx)
	if err != nil {
		return err
	}
	if j.header.Kid == "" {
		return verifyAny(j, keys)
	}
	k, ok := byKid(keys, j.header.Kid)
	if !ok {
		if keys, err = v.keys.refetch(ctx); err != nil {
			return err
		}
		if k, ok = byKid(keys, j.header.Kid); !ok {
			return invalid("no key %q in the JWKS", truncate(j.header.Kid))
		}
	}
	return j.verify(k)
}

func byKid(keys []key, kid string) (key, bool) {
	for _, k := range keys {
		if k.kid == kid {
			return k, true
		}
	}
	return key{}, false
}

// verifyAny checks a token without kid against the keys of its algorithm (at most MaxKeys).
func verifyAny(j *jws, keys []key) error {
	for _, k := range keys {
		if j.verify(k) == nil {
			return nil
		}
	}
	return invalid("no key of the JWKS verifies the signature (the token names no kid)")
}

// checkClaims checks the times, audience and issuer.
func (v *Validator) checkClaims(c claims, now time.Time) error {
	if !now.Before(c.Expires.Add(ClockSkew)) {
		return invalid("expired at %s", c.Expires.UTC().Format(time.RFC3339))
	}
	if !c.NotBefore.IsZero() && now.Add(ClockSkew).Before(c.NotBefore) {
		return invalid("not valid before %s", c.NotBefore.UTC().Format(time.RFC3339))
	}
	if !c.IssuedAt.IsZero() && now.Add(ClockSkew).Before(c.IssuedAt) {
		return invalid("issued in the future (%s)", c.IssuedAt.UTC().Format(time.RFC3339))
	}
	if len(v.s.audiences) > 0 && !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(v.s.audiences, a) }) {
		return invalid("audience %q is not one expected", truncateAll(c.Audience))
	}
	if v.s.issuer != "" && c.Issuer != v.s.issuer {
		return invalid("issuer %q is not the one expected", truncate(c.Issuer))
	}
	return nil
}

func truncateAll(list []string) []string {
	out := make([]string, 0, min(len(list), 4))
	for _, s := range list[:min(len(list), 4)] {
		out = append(out, truncate(s))
	}
	return out
}

// tokenCache remembers validated tokens by their SHA-256 until they expire. It is emptied when
// the JWKS changes, so a key the issuer withdrew stops admitting tokens signed with it.
type tokenCache struct {
	mu      sync.Mutex
	max     int
	entries map[[32]byte]Claims
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{max: max, entries: map[[32]byte]Claims{}}
}

func (c *tokenCache) get(sum [32]byte, now time.Time) (Claims, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[sum]
	if !ok {
		return Claims{}, false
	}
	if !now.Before(e.Expires.Add(ClockSkew)) {
		delete(c.entries, sum)
		return Claims{}, false
	}
	e.Scopes = slices.Clone(e.Scopes)
	return e, true
}

// put adds a token; when full, one entry is dropped (map order: arbitrary, which an attacker
// cannot steer, and any entry is only a saved verification).
func (c *tokenCache) put(sum [32]byte, cl Claims) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[sum] = cl
}

func (c *tokenCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
}

// errNoJWKS means no JWKS has been fetched yet.
var errNoJWKS = errors.New("the JWKS could not be fetched")

func noJWKS(err error) error {
	if err == nil {
		return errNoJWKS
	}
	return fmt.Errorf("%w: %w", errNoJWKS, err)
}
