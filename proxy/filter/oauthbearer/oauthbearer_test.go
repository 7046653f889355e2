package oauthbearer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/oauth/oauthtest"
)

// testChain is a chain of the filter validating the issuer's tokens for audience kafka, with no
// delay after failures (authenticateBackOffMaxMs 0) unless cfg says otherwise.
func testChain(t *testing.T, iss *oauthtest.Issuer, extra map[string]any) *filter.Chain {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, iss.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"jwksEndpointUrl": iss.URL, "jwksEndpointCaFile": ca, "expectedAudience": "kafka",
		"expectedIssuer": "https://issuer.test", "authenticateBackOffMaxMs": 0}
	for k, v := range extra {
		cfg[k] = v
	}
	raw, _ := json.Marshal(cfg)
	c, err := filter.NewChain(context.Background(), "vc", []config.Filter{{Name: "oauth", Type: Type, Config: raw}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func claims(sub string, exp time.Time) map[string]any {
	return map[string]any{"sub": sub, "aud": []string{"kafka"}, "iss": "https://issuer.test", "exp": exp.Unix(), "scope": "produce consume"}
}

func requestFrame(req kmsg.Request, version int16) []byte {
	req.SetVersion(version)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, 42)
}

func handshake(mech string) []byte {
	r := kmsg.NewPtrSASLHandshakeRequest()
	r.Mechanism = mech
	return requestFrame(r, 1)
}

func authenticate(authBytes string) []byte {
	r := kmsg.NewPtrSASLAuthenticateRequest()
	r.SASLAuthBytes = []byte(authBytes)
	return requestFrame(r, 2)
}

func bearerResponse(token string) string { return "n,,\x01auth=Bearer " + token + "\x01\x01" }

// brokerAnswer is a SaslAuthenticate v2 response frame from the broker.
func brokerAnswer(code int16, lifetime int64) []byte {
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SetVersion(2)
	resp.ErrorCode, resp.SessionLifetimeMillis = code, lifetime
	body := resp.AppendTo([]byte{0, 0, 0, 0, 0, 0, 0, 42, 0}) // size, correlation id, no header tags
	body[3] = byte(len(body) - 4)
	return body
}

// decodeAnswer reads the proxy's SaslAuthenticate v2 answer.
func decodeAnswer(t *testing.T, frame []byte) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SetVersion(2)
	if err := resp.ReadFrom(frame[9:]); err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestValidTokenIsForwardedAndSetsTheSubject(t *testing.T) {
	iss := oauthtest.NewIssuer(t)
	conn := testChain(t, iss, nil).ForConnection()
	if fwd, ans, _, err := conn.Request(handshake("OAUTHBEARER")); err != nil || fwd == nil || ans != nil {
		t.Fatalf("handshake: forward %d, answer %d, %v", len(fwd), len(ans), err)
	}
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	fwd, ans, state, err := conn.Request(authenticate(bearerResponse(iss.Token(t, claims("alice", exp)))))
	if err != nil || fwd == nil || ans != nil {
		t.Fatalf("authenticate: forward %d, answer %d, %v", len(fwd), len(ans), err)
	}
	if !conn.Subject().Anonymous() {
		t.Fatal("the subject is set before the broker accepted")
	}
	if _, err := conn.Response(kmsg.SASLAuthenticate.Int16(), 2, brokerAnswer(0, 0), state); err != nil {
		t.Fatal(err)
	}
	s := conn.Subject()
	if s.User != "alice" || s.Mechanism != "OAUTHBEARER" || !slices.Equal(s.Scopes, []string{"produce", "consume"}) || !s.Expires.Equal(exp) {
		t.Fatalf("subject %+v", s)
	}
}

func TestSessionLifetimeBoundsTheSubject(t *testing.T) {
	iss := oauthtest.NewIssuer(t)
	conn := testChain(t, iss, nil).ForConnection()
	_, _, _, _ = conn.Request(handshake("OAUTHBEARER"))
	_, _, state, err := conn.Request(authenticate(bearerResponse(iss.Token(t, claims("alice", time.Now().Add(time.Hour))))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Response(kmsg.SASLAuthenticate.Int16(), 2, brokerAnswer(0, 60_000), state); err != nil {
		t.Fatal(err)
	}
	if s := conn.Subject(); s.Expires.After(time.Now().Add(time.Minute)) {
		t.Fatalf("expires %s, after the broker's session of a minute", s.Expires)
	}
}

func TestBrokerRefusalSetsNoSubject(t *testing.T) {
	iss := oauthtest.NewIssuer(t)
	conn := testChain(t, iss, nil).ForConnection()
	_, _, _, _ = conn.Request(handshake("OAUTHBEARER"))
	_, _, state, err := conn.Request(authenticate(bearerResponse(iss.Token(t, claims("alice", time.Now().Add(time.Hour))))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Response(kmsg.SASLAuthenticate.Int16(), 2, brokerAnswer(kerr.SaslAuthenticationFailed.Code, 0), state); err != nil {
		t.Fatal(err)
	}
	if !conn.Subject().Anonymous() {
		t.Fatalf("subject %+v after the broker refused", conn.Subject())
	}
}

func TestInvalidTokensAreAnsweredByTheProxy(t *testing.T) {
	iss := oauthtest.NewIssuer(t)
	c := testChain(t, iss, nil)
	good := iss.Token(t, claims("alice", time.Now().Add(time.Hour)))
	tests := map[string]struct{ authBytes, want string }{
		"an expired token":             {bearerResponse(iss.Token(t, claims("alice", time.Now().Add(-time.Hour)))), "expired"},
		"a token for another audience": {bearerResponse(iss.Token(t, map[string]any{"sub": "a", "aud": "billing", "iss": "https://issuer.test", "exp": time.Now().Add(time.Hour).Unix()})), "audience"},
		"a forged token":               {bearerResponse(oauthtest.Forge(t, good, nil)), "signature does not verify"},
		"alg none":                     {bearerResponse(oauthtest.AlgNone(t, good, nil)), `alg "none"`},
		"another principal's authzid":  {"n,a=bob,\x01auth=Bearer " + good + "\x01\x01", "authorization id"},
		"not an initial response":      {good, "RFC 7628"},
		"garbage":                      {"\x00\xff\x01\x01", "RFC 7628"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			conn := c.ForConnection()
			_, _, _, _ = conn.Request(handshake("OAUTHBEARER"))
			fwd, ans, _, err := conn.Request(authenticate(tc.authBytes))
			if err != nil || fwd != nil || ans == nil {
				t.Fatalf("forward %d, answer %d, %v: the proxy must answer", len(fwd), len(ans), err)
			}
			resp := decodeAnswer(t, ans)
			if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, tc.want) {
				t.Fatalf("answer %d %v, want SASL_AUTHENTICATION_FAILED with %q", resp.ErrorCode, resp.ErrorMessage, tc.want)
			}
			for _, part := range strings.Split(good, ".") {
				if strings.Contains(*resp.ErrorMessage, part) {
					t.Fatalf("the answer %q carries the token", *resp.ErrorMessage)
				}
			}
			if !conn.Subject().Anonymous() {
				t.Fatal("a subject was set")
			}
		})
	}
}

func TestOtherMechanismsPassUntouched(t *testing.T) {
	iss := oauthtest.NewIssuer(t)
	conn := testChain(t, iss, nil).ForConnection()
	_, _, _, _ = conn.Request(handshake("PLAIN"))
	fwd, ans, _, err := conn.Request(authenticate("\x00user\x00pass"))
	if err != nil || fwd == nil || ans != nil {
		t.Fatalf("PLAIN: forward %d, answer %d, %v", len(fwd), len(ans), err)
	}
	// A re-authentication that switches to OAUTHBEARER is validated.
	_, _, _, _ = conn.Request(handshake("OAUTHBEARER"))
	if fwd, ans, _, _ := conn.Request(authenticate(bearerResponse("x.y.z"))); fwd != nil || ans == nil {
		t.Fatal("an OAUTHBEARER re-authentication was not validated")
	}
}

func TestBuild(t *testing.T) {
	tests := map[string]struct{ config, wantErr string }{
		"Kroxylicious' example": {config: `{"jwksEndpointUrl":"https://oauth/JWKS","jwksEndpointRefreshMs":3600000,"jwksEndpointRetryBackoffMs":100,
			"jwksEndpointRetryBackoffMaxMs":10000,"scopeClaimName":"scope","subClaimName":"sub","authenticateBackOffMaxMs":60000,
			"authenticateCacheMaxSize":1000,"expectedAudience":"https://first.audience, https//second.audience","expectedIssuer":"https://your-domain.auth/"}`},
		"Kafka's validator class":   {config: `{"jwksEndpointUrl":"https://i/j","jwtValidatorClass":"org.apache.kafka.common.security.oauthbearer.BrokerJwtValidator"}`},
		"another validator class":   {config: `{"jwksEndpointUrl":"https://i/j","jwtValidatorClass":"com.example.Mine"}`, wantErr: "jwtValidatorClass"},
		"no URL":                    {config: `{}`, wantErr: "jwksEndpointUrl is required"},
		"an unknown field":          {config: `{"jwksEndpointUrl":"https://i/j","jwksUrl":"x"}`, wantErr: "unknown field"},
		"a negative backoff max":    {config: `{"jwksEndpointUrl":"https://i/j","authenticateBackOffMaxMs":-1}`, wantErr: "authenticateBackOffMaxMs"},
		"a cache of no entry":       {config: `{"jwksEndpointUrl":"https://i/j","authenticateCacheMaxSize":0}`, wantErr: "authenticateCacheMaxSize"},
		"a huge cache":              {config: `{"jwksEndpointUrl":"https://i/j","authenticateCacheMaxSize":1e12}`, wantErr: "authenticateCacheMaxSize"},
		"a CA file that is missing": {config: `{"jwksEndpointUrl":"https://i/j","jwksEndpointCaFile":"/nonexistent/ca.pem"}`, wantErr: "jwksEndpointCaFile"},
	}
	names := []string{Type, "io.kroxylicious.filter.oauthbearer.OauthBearerValidation", "io.kroxylicious.proxy.filter.oauthbearer.OauthBearerValidation"}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for _, typ := range names {
				_, err := filter.NewChain(context.Background(), "vc", []config.Filter{{Name: "f", Type: typ, Config: []byte(tc.config)}})
				if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("%s: %v, want %q", typ, err, tc.wantErr)
				}
			}
		})
	}
}
