package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	testIssuer   = "https://issuer.example"
	testAudience = "kafka"
)

var testNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func goodClaims() map[string]any {
	return map[string]any{"sub": "alice", "iss": testIssuer, "aud": testAudience, "scope": "produce consume",
		"exp": testNow.Add(time.Hour).Unix(), "iat": testNow.Add(-time.Minute).Unix(), "nbf": testNow.Add(-time.Minute).Unix()}
}

func with(changes map[string]any) map[string]any {
	c := goodClaims()
	for k, v := range changes {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// newTestValidator validates against srv's JWKS at testNow.
func newTestValidator(t *testing.T, srv *jwksServer, cfg Config) *Validator {
	t.Helper()
	cfg.JwksEndpointURL = srv.URL + "/.well-known/jwks.json"
	cfg.JwksEndpointCAFile = "ca.pem"
	v, err := NewValidator(cfg, srv.readCA)
	if err != nil {
		t.Fatal(err)
	}
	v.now = func() time.Time { return testNow }
	t.Cleanup(func() { _ = v.Close() })
	return v
}

func TestValidate(t *testing.T) {
	algs := []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
	var keys []testKey
	for _, a := range algs {
		keys = append(keys, newTestKey(t, a, "k-"+a))
	}
	rs := keys[0]
	srv := newJWKSServer(t, jwksOf(keys...))
	v := newTestValidator(t, srv, Config{ExpectedAudience: "other, " + testAudience, ExpectedIssuer: testIssuer})
	pubJWKS := jwksOf(rs)

	tests := map[string]struct {
		token   func() string
		wantErr string // empty: valid
		subject string
		scopes  []string
	}{
		"a token signed with RS256 is valid": {token: func() string { return rs.sign(t, goodClaims(), nil) }, subject: "alice", scopes: []string{"produce", "consume"}},
		"alg none is refused": {token: func() string {
			return b64.EncodeToString([]byte(`{"alg":"none","kid":"k-RS256"}`)) + "." + b64.EncodeToString(mustJSON(goodClaims())) + "."
		}, wantErr: `alg "none" is not accepted`},
		"alg None in another case is refused": {token: func() string {
			return b64.EncodeToString([]byte(`{"alg":"None"}`)) + "." + b64.EncodeToString(mustJSON(goodClaims())) + "."
		}, wantErr: "is not accepted"},
		"HS256 keyed with the public JWKS is refused": {token: func() string { return hmacToken(goodClaims(), "k-RS256", pubJWKS) }, wantErr: `alg "HS256" is not accepted`},
		"HS256 keyed with the RSA modulus is refused": {token: func() string {
			return hmacToken(goodClaims(), "k-RS256", []byte(rs.jwk()["n"].(string)))
		}, wantErr: `alg "HS256" is not accepted`},
		"an expired token is refused": {token: func() string { return rs.sign(t, with(map[string]any{"exp": testNow.Add(-time.Minute).Unix()}), nil) }, wantErr: "expired at"},
		"a token expired within the clock skew is valid": {token: func() string {
			return rs.sign(t, with(map[string]any{"exp": testNow.Add(-10 * time.Second).Unix()}), nil)
		}, subject: "alice"},
		"a token without exp is refused":                    {token: func() string { return rs.sign(t, with(map[string]any{"exp": nil}), nil) }, wantErr: "no exp claim"},
		"a token not yet valid is refused":                  {token: func() string { return rs.sign(t, with(map[string]any{"nbf": testNow.Add(time.Hour).Unix()}), nil) }, wantErr: "not valid before"},
		"a token issued in the future is refused":           {token: func() string { return rs.sign(t, with(map[string]any{"iat": testNow.Add(time.Hour).Unix()}), nil) }, wantErr: "issued in the future"},
		"a token for another audience is refused":           {token: func() string { return rs.sign(t, with(map[string]any{"aud": "billing"}), nil) }, wantErr: "audience"},
		"a token without audience is refused":               {token: func() string { return rs.sign(t, with(map[string]any{"aud": nil}), nil) }, wantErr: "audience"},
		"an audience array naming an expected one is valid": {token: func() string { return rs.sign(t, with(map[string]any{"aud": []string{"billing", testAudience}}), nil) }, subject: "alice"},
		"a token of another issuer is refused":              {token: func() string { return rs.sign(t, with(map[string]any{"iss": "https://evil.example"}), nil) }, wantErr: "issuer"},
		"a token without subject is refused":                {token: func() string { return rs.sign(t, with(map[string]any{"sub": nil}), nil) }, wantErr: "no sub claim"},
		"scopes may be an array":                            {token: func() string { return rs.sign(t, with(map[string]any{"scope": []string{"a", "b"}}), nil) }, subject: "alice", scopes: []string{"a", "b"}},
		"a scope of another type is refused":                {token: func() string { return rs.sign(t, with(map[string]any{"scope": 7}), nil) }, wantErr: "scope is not a string"},
		"a tampered payload is refused": {token: func() string {
			parts := strings.Split(rs.sign(t, goodClaims(), nil), ".")
			parts[1] = b64.EncodeToString(mustJSON(with(map[string]any{"sub": "admin"})))
			return strings.Join(parts, ".")
		}, wantErr: "signature does not verify"},
		"an RS256 token naming an EC key is refused": {token: func() string { return rs.sign(t, goodClaims(), map[string]any{"kid": "k-ES256"}) }, wantErr: "is for ES256"},
		"a token naming an unknown kid is refused":   {token: func() string { return rs.sign(t, goodClaims(), map[string]any{"kid": "nope"}) }, wantErr: `no key "nope"`},
		"a token without kid is tried with each key": {token: func() string { return rs.sign(t, goodClaims(), map[string]any{"kid": ""}) }, subject: "alice"},
		"crit headers are refused":                   {token: func() string { return rs.sign(t, goodClaims(), map[string]any{"crit": []string{"exp"}}) }, wantErr: "crit"},
		"an oversized token is refused": {token: func() string {
			return rs.sign(t, with(map[string]any{"pad": strings.Repeat("x", MaxTokenBytes)}), nil)
		}, wantErr: "over 131072"},
		"a token of two parts is refused":      {token: func() string { return "a.b" }, wantErr: "compact serialization"},
		"a token of four parts is refused":     {token: func() string { return "a.b.c.d" }, wantErr: "compact serialization"},
		"a header that is not JSON is refused": {token: func() string { return b64.EncodeToString([]byte("[1]")) + ".e30.c2ln" }, wantErr: "header is not a JSON object"},
		"claims that are not an object are refused": {token: func() string {
			return rs.sign(t, nil, nil)
		}, wantErr: "claims are not a JSON object"},
	}
	for _, a := range algs[1:] {
		tests[fmt.Sprintf("a token signed with %s is valid", a)] = struct {
			token   func() string
			wantErr string
			subject string
			scopes  []string
		}{token: func() string { return newTestKey(t, a, "k-"+a).sign(t, goodClaims(), nil) }, subject: "alice"}
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := v.Validate(context.Background(), tc.token())
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v (%+v), want an invalid token error with %q", err, c, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Subject != tc.subject || tc.scopes != nil && !slices.Equal(c.Scopes, tc.scopes) {
				t.Fatalf("got %+v, want subject %s scopes %v", c, tc.subject, tc.scopes)
			}
		})
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestErrorsNeverCarryTheToken(t *testing.T) {
	k := newTestKey(t, "RS256", "k1")
	srv := newJWKSServer(t, jwksOf(k))
	v := newTestValidator(t, srv, Config{ExpectedAudience: testAudience})
	secretSub := "sub-" + strings.Repeat("s", 40)
	for _, tok := range []string{
		k.sign(t, with(map[string]any{"sub": secretSub, "aud": "x"}), nil),
		k.sign(t, with(map[string]any{"sub": secretSub}), map[string]any{"kid": strings.Repeat("K", 100)}),
	} {
		_, err := v.Validate(context.Background(), tok)
		if err == nil {
			t.Fatal("accepted")
		}
		for _, part := range strings.Split(tok, ".") {
			if strings.Contains(err.Error(), part) {
				t.Fatalf("error %q carries part of the token", err)
			}
		}
		if strings.Contains(err.Error(), strings.Repeat("K", 40)) {
			t.Fatalf("error %q carries a long value of the token", err)
		}
	}
}

func TestSubjectAndScopeClaimNames(t *testing.T) {
	k := newTestKey(t, "ES256", "k1")
	srv := newJWKSServer(t, jwksOf(k))
	v := newTestValidator(t, srv, Config{SubClaimName: "client_id", ScopeClaimName: "scp"})
	c, err := v.Validate(context.Background(), k.sign(t, with(map[string]any{"client_id": "svc-a", "scp": "x y"}), nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject != "svc-a" || !slices.Equal(c.Scopes, []string{"x", "y"}) {
		t.Fatalf("got %+v", c)
	}
}

func TestNoConnectionUntilFirstValidation(t *testing.T) {
	k := newTestKey(t, "RS256", "k1")
	srv := newJWKSServer(t, jwksOf(k))
	v := newTestValidator(t, srv, Config{})
	if n := srv.requests.Load(); n != 0 {
		t.Fatalf("NewValidator fetched the JWKS %d times", n)
	}
	if _, err := v.Validate(context.Background(), k.sign(t, goodClaims(), nil)); err != nil {
		t.Fatal(err)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
	// A validated token is cached: validating it again neither fetches nor verifies.
	if _, err := v.Validate(context.Background(), k.sign(t, goodClaims(), nil)); err != nil {
		t.Fatal(err)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}

func TestKeyRotation(t *testing.T) {
	old, next := freshRSA(t, "old"), freshRSA(t, "next")
	srv := newJWKSServer(t, jwksOf(old))
	v := newTestValidator(t, srv, Config{JwksEndpointRetryBackoffMs: ms(1), JwksEndpointRetryBackoffMaxMs: ms(1)})
	if _, err := v.Validate(context.Background(), old.sign(t, goodClaims(), nil)); err != nil {
		t.Fatal(err)
	}
	tok := next.sign(t, goodClaims(), nil)
	if _, err := v.Validate(context.Background(), tok); err == nil || !strings.Contains(err.Error(), `no key "next"`) {
		t.Fatalf("a key not yet published: %v", err)
	}
	srv.set(jwksOf(old, next)) // the issuer publishes its next key: an unknown kid refetches
	waitAfterRefetchLimit(v)
	c, err := v.Validate(context.Background(), tok)
	if err != nil || c.Subject != "alice" {
		t.Fatalf("after rotation: %+v %v", c, err)
	}
	srv.set(jwksOf(next)) // the old key is withdrawn: tokens it signed stop validating, cached or not
	waitAfterRefetchLimit(v)
	if _, err := v.Validate(context.Background(), next.sign(t, goodClaims(), map[string]any{"kid": "unknown"})); err == nil {
		t.Fatal("unknown kid accepted")
	}
	if _, err := v.Validate(context.Background(), old.sign(t, goodClaims(), nil)); err == nil || !strings.Contains(err.Error(), `no key "old"`) {
		t.Fatalf("withdrawn key: %v", err)
	}
}

// waitAfterRefetchLimit lets the 1 ms refetch rate limit of the rotation test pass.
func waitAfterRefetchLimit(v *Validator) {
	v.keys.mu.Lock()
	v.keys.lastRefetch = time.Time{}
	v.keys.mu.Unlock()
}

func TestUnknownKidRefetchIsRateLimited(t *testing.T) {
	k := newTestKey(t, "RS256", "k1")
	srv := newJWKSServer(t, jwksOf(k))
	v := newTestValidator(t, srv, Config{JwksEndpointRetryBackoffMaxMs: ms(60_000)})
	for i := range 20 {
		_, err := v.Validate(context.Background(), k.sign(t, goodClaims(), map[string]any{"kid": fmt.Sprint("random-", i)}))
		if err == nil {
			t.Fatal("unknown kid accepted")
		}
	}
	if n := srv.requests.Load(); n != 2 { // the first fetch, and one refetch
		t.Fatalf("%d fetches for 20 unknown kids, want 2", n)
	}
}

func TestLastGoodJWKSIsKept(t *testing.T) {
	k := newTestKey(t, "RS256", "k1")
	srv := newJWKSServer(t, jwksOf(k))
	v := newTestValidator(t, srv, Config{JwksEndpointRetryBackoffMs: ms(1), JwksEndpointRetryBackoffMaxMs: ms(1)})
	if _, err := v.Validate(context.Background(), k.sign(t, goodClaims(), nil)); err != nil {
		t.Fatal(err)
	}
	srv.status.Store(http.StatusServiceUnavailable)
	waitAfterRefetchLimit(v)
	if _, err := v.Validate(context.Background(), k.sign(t, goodClaims(), map[string]any{"kid": "other"})); err == nil {
		t.Fatal("unknown kid accepted")
	}
	if err := v.keys.lastError(); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("the failed refetch: %v", err)
	}
	if _, err := v.Validate(context.Background(), k.sign(t, with(map[string]any{"sub": "bob"}), nil)); err != nil {
		t.Fatalf("with the endpoint failing, the last good JWKS: %v", err)
	}
}

func TestJWKSFailures(t *testing.T) {
	k := newTestKey(t, "RS256", "k1")
	var many []testKey
	for i := range MaxKeys + 1 {
		many = append(many, newTestKey(t, "ES256", fmt.Sprint(i)))
	}
	tests := map[string]struct {
		doc     []byte
		status  int
		wantErr string
	}{
		"a JWKS of too many keys":     {doc: jwksOf(many...), wantErr: "101 keys, over 100"},
		"a JWKS over 1 MiB":           {doc: []byte(`{"keys":[],"x":"` + strings.Repeat("x", MaxJWKSBytes) + `"}`), wantErr: "over 1048576"},
		"an endpoint answering 404":   {status: http.StatusNotFound, wantErr: "404"},
		"a JWKS of no usable key":     {doc: []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`), wantErr: "no usable signature key"},
		"a document that is not JSON": {doc: []byte(`<html>`), wantErr: "invalid JWKS"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newJWKSServer(t, tc.doc)
			if tc.status != 0 {
				srv.status.Store(int32(tc.status))
			}
			v := newTestValidator(t, srv, Config{})
			_, err := v.Validate(context.Background(), k.sign(t, goodClaims(), nil))
			if err == nil || errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want a JWKS error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestTLSIsVerified(t *testing.T) {
	k := newTestKey(t, "RS256", "k1")
	srv := newJWKSServer(t, jwksOf(k))
	v, err := NewValidator(Config{JwksEndpointURL: srv.URL}, nil) // the system roots do not know the test CA
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = v.Close() }()
	if _, err := v.Validate(context.Background(), k.sign(t, goodClaims(), nil)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("got %v, want a certificate error", err)
	}
}

func TestValidateAfterClose(t *testing.T) {
	k := newTestKey(t, "RS256", "k1")
	srv := newJWKSServer(t, jwksOf(k))
	v := newTestValidator(t, srv, Config{})
	_ = v.Close()
	if _, err := v.Validate(context.Background(), k.sign(t, goodClaims(), nil)); err == nil {
		t.Fatal("validated after Close")
	}
	if n := srv.requests.Load(); n != 0 {
		t.Fatalf("%d fetches after Close", n)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	tests := map[string]struct {
		cfg     Config
		read    ReadFile
		wantErr string
	}{
		"no URL":                      {cfg: Config{}, wantErr: "jwksEndpointUrl is required"},
		"http to another host":        {cfg: Config{JwksEndpointURL: "http://issuer.example/jwks"}, wantErr: "must be an https URL"},
		"a file URL":                  {cfg: Config{JwksEndpointURL: "file:///etc/jwks"}, wantErr: "must be an https URL"},
		"a refresh under a second":    {cfg: Config{JwksEndpointURL: "https://i/j", JwksEndpointRefreshMs: ms(10)}, wantErr: "jwksEndpointRefreshMs"},
		"a refresh over a day":        {cfg: Config{JwksEndpointURL: "https://i/j", JwksEndpointRefreshMs: ms(1 << 62)}, wantErr: "jwksEndpointRefreshMs"},
		"a negative backoff":          {cfg: Config{JwksEndpointURL: "https://i/j", JwksEndpointRetryBackoffMs: ms(-1)}, wantErr: "jwksEndpointRetryBackoffMs"},
		"a backoff max under backoff": {cfg: Config{JwksEndpointURL: "https://i/j", JwksEndpointRetryBackoffMs: ms(500), JwksEndpointRetryBackoffMaxMs: ms(100)}, wantErr: "jwksEndpointRetryBackoffMaxMs"},
		"a CA file that cannot be read": {cfg: Config{JwksEndpointURL: "https://i/j", JwksEndpointCAFile: "/nope"},
			read: func(string) ([]byte, error) { return nil, errors.New("no such file") }, wantErr: "jwksEndpointCaFile"},
		"a CA file of no certificate": {cfg: Config{JwksEndpointURL: "https://i/j", JwksEndpointCAFile: "/ca"},
			read: func(string) ([]byte, error) { return []byte("junk"), nil }, wantErr: "jwksEndpointCaFile /ca: no PEM certificate"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := NewValidator(tc.cfg, tc.read)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			}
		})
	}
	if _, err := NewValidator(Config{JwksEndpointURL: "http://127.0.0.1:4444/.well-known/jwks.json"}, nil); err != nil {
		t.Fatalf("http to loopback: %v", err)
	}
}
