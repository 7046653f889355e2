package oauth

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkalink/kafkalink/proxy/oauth/oauthtest"
)

// TestHydraTokens validates access tokens of a real OAuth 2.0 server, Ory Hydra, against its
// JWKS: a token for the expected audience passes, with Hydra's scope claim (scp); one for another
// audience, a forged one, an alg none one and an expired one are refused.
func TestHydraTokens(t *testing.T) {
	h := oauthtest.StartHydra(t)
	id, secret := h.Client(t, []string{"kafka", "billing"}, "produce consume")
	ctx := context.Background()
	token, err := h.Token(ctx, id, secret, "kafka", "produce consume")
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewValidator(Config{JwksEndpointURL: h.JWKSURL, ExpectedAudience: "kafka", ExpectedIssuer: h.Issuer, ScopeClaimName: "scp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	c, err := v.Validate(ctx, token)
	if err != nil {
		t.Fatalf("Hydra's token: %v", err)
	}
	if c.Subject != id || !slices.Equal(c.Scopes, []string{"produce", "consume"}) || c.Expires.Before(time.Now()) {
		t.Fatalf("claims %+v, want subject %s with scopes produce and consume", c, id)
	}
	billing, err := h.Token(ctx, id, secret, "billing", "produce")
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]struct{ token, want string }{
		"a token for another audience": {billing, "audience"},
		"a forged token":               {oauthtest.Forge(t, token, func(c map[string]any) { c["sub"] = "admin" }), "signature does not verify"},
		"a token under alg none":       {oauthtest.AlgNone(t, token, nil), `alg "none"`},
	}
	for name, tc := range refused {
		if _, err := v.Validate(ctx, tc.token); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want refused with %q", name, err, tc.want)
		}
	}
	v.now = func() time.Time { return time.Now().Add(2 * time.Hour) } // Hydra's tokens live an hour
	fresh, err := h.Token(ctx, id, secret, "kafka", "produce")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Validate(ctx, fresh); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired token: %v", err)
	}
}
