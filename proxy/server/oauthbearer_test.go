package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/kafkalink/kafkalink/proxy/oauth/oauthtest"
)

// oauthBroker makes kfake, which implements PLAIN and SCRAM only, accept OAUTHBEARER: its
// SaslHandshake takes the mechanism and its SaslAuthenticate accepts any token, recording it.
// Whatever it records reached the broker; a token the proxy refused must never be there.
type oauthBroker struct {
	mu     sync.Mutex
	tokens []string
}

func newOAuthBroker(kc *kfake.Cluster) *oauthBroker {
	b := &oauthBroker{}
	kc.ControlKey(kmsg.SASLHandshake.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		req := r.(*kmsg.SASLHandshakeRequest)
		if req.Mechanism != "OAUTHBEARER" {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.SupportedMechanisms = []string{"OAUTHBEARER"}
		return resp, nil, true
	})
	kc.ControlKey(kmsg.SASLAuthenticate.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		req := r.(*kmsg.SASLAuthenticateRequest)
		b.mu.Lock()
		b.tokens = append(b.tokens, string(req.SASLAuthBytes))
		b.mu.Unlock()
		return req.ResponseKind(), nil, true
	})
	return b
}

// saw reports whether the broker received token.
func (b *oauthBroker) saw(token string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.ContainsFunc(b.tokens, func(s string) bool { return strings.Contains(s, token) })
}

// bearerClient is a franz-go client of virtual cluster a authenticating with OAUTHBEARER (its
// sasl/oauth mechanism) with the token token gives.
func bearerClient(t *testing.T, f filteredProxy, token func(context.Context) (string, error), opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base, _ := clientOpts(fmt.Sprintf("a-bootstrap.kafka.test:%d", f.pc.Port), f.pki.pool, "", nil)
	mech := oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
		tok, err := token(ctx)
		return oauth.Auth{Token: tok}, err
	})
	cl, err := kgo.NewClient(append(append(base, kgo.SASL(mech), kgo.AllowAutoTopicCreation(), kgo.RecordRetries(2)), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func oauthFilter(jwksURL, issuer, extra string) string {
	return fmt.Sprintf(`  filters:
  - name: oauth
    type: OauthBearerValidation
    config:
      jwksEndpointUrl: %s
      expectedAudience: kafka
      expectedIssuer: %s
      scopeClaimName: scp
      authenticateBackOffMaxMs: 0
%s`, jwksURL, issuer, extra)
}

// refusedByTheProxy checks that a client's produce fails with SASL_AUTHENTICATION_FAILED and
// that the broker never saw the token.
func refusedByTheProxy(ctx context.Context, t *testing.T, cl *kgo.Client, broker *oauthBroker, token, what string) {
	t.Helper()
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("%s: produce %v, want SASL_AUTHENTICATION_FAILED", what, err)
	}
	if broker.saw(token) {
		t.Errorf("%s: the broker received the token", what)
	}
}

// TestOauthBearerThroughTheProxyWithHydra: franz-go clients with tokens from Ory Hydra (client
// credentials grant, JWT access tokens) through the proxy with OauthBearerValidation in front of
// kfake. A Hydra token for audience kafka passes and the client produces and consumes; a forged
// token (Hydra's claims re-signed with another key under Hydra's kid), an alg none one and a
// Hydra token for another audience are refused by the proxy and never reach the broker.
func TestOauthBearerThroughTheProxyWithHydra(t *testing.T) {
	h := oauthtest.StartHydra(t)
	id, secret := h.Client(t, []string{"kafka", "billing"}, "produce consume")
	f := startFilteredProxy(t, Options{}, oauthFilter(h.JWKSURL, h.Issuer, ""))
	broker := newOAuthBroker(f.kc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var mu sync.Mutex
	var issued []string
	good := bearerClient(t, f, func(ctx context.Context) (string, error) {
		tok, err := h.Token(ctx, id, secret, "kafka", "produce consume")
		mu.Lock()
		issued = append(issued, tok)
		mu.Unlock()
		return tok, err
	}, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := good.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("a Hydra token: %v\n%s", err, f.p.logs)
	}
	var got []string
	for len(got) == 0 && ctx.Err() == nil {
		good.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != "hello" {
		t.Fatalf("consumed %q", got)
	}
	mu.Lock()
	token := issued[0]
	mu.Unlock()
	if !broker.saw(token) {
		t.Fatal("the broker did not receive the valid token: the stand-in is not in the path")
	}

	billing, err := h.Token(ctx, id, secret, "billing", "produce")
	if err != nil {
		t.Fatal(err)
	}
	for what, bad := range map[string]string{
		"a forged token":               oauthtest.Forge(t, token, func(c map[string]any) { c["sub"] = "admin" }),
		"an alg none token":            oauthtest.AlgNone(t, token, nil),
		"a token for another audience": billing,
	} {
		cl := bearerClient(t, f, func(context.Context) (string, error) { return bad, nil })
		refusedByTheProxy(ctx, t, cl, broker, bad, what)
	}
}

// TestOauthBearerExpiredTokenThroughTheProxy: with a JWKS served over TLS whose CA comes from
// jwksEndpointCaFile, a valid token passes and an expired one is refused by the proxy; the
// filter's metric counts both, and neither the metrics nor the logs carry a token.
func TestOauthBearerExpiredTokenThroughTheProxy(t *testing.T) {
	iss := oauthtest.NewIssuer(t)
	dir := t.TempDir()
	writeAtomic(t, dir+"/jwks-ca.pem", iss.CAPEM)
	f := startFilteredProxy(t, Options{}, oauthFilter(iss.URL, "https://issuer.test", "      jwksEndpointCaFile: "+dir+"/jwks-ca.pem\n"))
	broker := newOAuthBroker(f.kc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	claims := func(exp time.Time) map[string]any {
		return map[string]any{"sub": "svc-orders", "aud": "kafka", "iss": "https://issuer.test", "exp": exp.Unix(), "scp": []string{"produce"}}
	}
	valid := iss.Token(t, claims(time.Now().Add(time.Hour)))
	cl := bearerClient(t, f, func(context.Context) (string, error) { return valid, nil })
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("a valid token: %v\n%s", err, f.p.logs)
	}
	expired := iss.Token(t, claims(time.Now().Add(-time.Hour)))
	refusedByTheProxy(ctx, t, bearerClient(t, f, func(context.Context) (string, error) { return expired, nil }), broker, expired, "an expired token")

	exposition := httpGet(t, "http://"+f.p.srv.ManagementAddr().String()+"/metrics")
	for result, least := range map[string]float64{"valid": 1, "invalid": 1, "jwks_unavailable": 0} {
		series := `kafkalink_proxy_oauthbearer_authentications_total{result="` + result + `",virtual_cluster="a"}`
		if n := sample(t, exposition, series); n < least || least == 0 && n != 0 {
			t.Errorf("%s = %v, want %v", series, n, least)
		}
	}
	if !f.p.logs.contains("OAUTHBEARER authentication refused by the proxy", "expired at") {
		t.Errorf("the refusal is not logged with its reason:\n%s", f.p.logs)
	}
	for _, tok := range []string{valid, expired} {
		signature := tok[strings.LastIndex(tok, ".")+1:]
		if strings.Contains(exposition, signature) || strings.Contains(f.p.logs.String(), signature) {
			t.Errorf("a token is in the metrics or the logs")
		}
	}
}
