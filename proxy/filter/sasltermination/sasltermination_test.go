package sasltermination

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/saslinspection"
	"github.com/kafkalink/kafkalink/proxy/filter/sasltermination/termtest"
	"github.com/kafkalink/kafkalink/proxy/oauth/oauthtest"
	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// storeFile writes a SCRAM-SHA-512 store of users (name to password) and returns its path.
func storeFile(t testing.TB, users map[string]string) string {
	t.Helper()
	b, err := termtest.Store(users)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// scramConfig is a config with SCRAM-SHA-512 over store, and extra top-level fields.
func scramConfig(store, extra string) string {
	return `{"mechanisms": [{"mechanism": "SCRAM-SHA-512", "credentialStore": "ScramCredentialFile", "credentialStoreConfig": {"file": "` +
		store + `"}}]` + extra + `}`
}

func newConn(t testing.TB, cfg string) *filter.Conn { return newConnOf(t, Type, cfg) }

func newConnOf(t testing.TB, typ, cfg string) *filter.Conn {
	t.Helper()
	return newChain(t, typ, cfg).ForConnection()
}

func newChain(t testing.TB, typ, cfg string) *filter.Chain {
	t.Helper()
	c, err := filter.NewChain(context.Background(), "vc", []config.Filter{{Name: "terminate", Type: typ, Config: json.RawMessage(cfg)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// testType is SaslTermination registered so that tests reach the filter built last (lastBuilt).
const testType = "SaslTerminationForTests"

var lastBuilt *saslTermination

func init() {
	filter.RegisterTyped(func(cfg *Config, env filter.Env) (filter.Filter, error) {
		f, err := newFilter(cfg, env)
		if err == nil {
			lastBuilt = f.(*saslTermination)
		}
		return f, err
	}, testType)
}

// send passes req through the connection's chain: the decoded answer, or nil when forwarded.
func send(t testing.TB, c *filter.Conn, req kmsg.Request) (kmsg.Response, error) {
	t.Helper()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, 7)
	_, answer, _, err := c.Request(frame)
	if err != nil || answer == nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body := answer[8:]
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("answer: %v", err)
	}
	return resp, nil
}

func handshake(t testing.TB, c *filter.Conn, mech string) *kmsg.SASLHandshakeResponse {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(1)
	req.Mechanism = mech
	resp, err := send(t, c, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.SASLHandshakeResponse)
}

func saslAuthenticate(t testing.TB, c *filter.Conn, msg []byte) (*kmsg.SASLAuthenticateResponse, error) {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(2)
	req.SASLAuthBytes = msg
	resp, err := send(t, c, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.SASLAuthenticateResponse), nil
}

// login runs a whole SCRAM-SHA-512 exchange (franz-go's client) and returns the last answer.
func login(t testing.TB, c *filter.Conn, user, pass string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	if hs := handshake(t, c, sasl.ScramSHA512); hs.ErrorCode != 0 {
		t.Fatalf("handshake: %d", hs.ErrorCode)
	}
	session, msg, err := scram.Auth{User: user, Pass: pass}.AsSha512Mechanism().Authenticate(context.Background(), "broker")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		resp, err := saslAuthenticate(t, c, msg)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			return resp
		}
		done, next, err := session.Challenge(resp.SASLAuthBytes)
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		if done {
			return resp
		}
		msg = next
	}
	t.Fatal("SCRAM did not finish")
	return nil
}

func metadata(t testing.TB, c *filter.Conn) (kmsg.Response, error) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	return send(t, c, req)
}

// TestConfigRefusals: each mistake is refused, naming its field.
func TestConfigRefusals(t *testing.T) {
	store := storeFile(t, map[string]string{"alice": "pw"})
	scramM := `{"mechanism": "SCRAM-SHA-512", "credentialStore": "ScramCredentialFile", "credentialStoreConfig": {"file": "` + store + `"}`
	oauthM := `{"mechanism": "OAUTHBEARER", "jwksEndpointUrl": "https://idp.example.com/jwks", "expectedAudience": "kafka", "expectedIssuer": "https://idp"`
	for name, tc := range map[string]struct{ cfg, want string }{
		"no mechanisms":                    {`{"mechanisms": []}`, "mechanisms"},
		"a mechanism twice":                {`{"mechanisms": [` + scramM + `}, ` + scramM + `}]}`, "enabled twice"},
		"an unknown mechanism":             {`{"mechanisms": [{"mechanism": "PLAIN"}]}`, "mechanisms[0].mechanism"},
		"a store kafkalink does not have":  {`{"mechanisms": [{"mechanism": "SCRAM-SHA-256", "credentialStore": "KeystoreScramCredentialStoreService", "credentialStoreConfig": {}}]}`, "credentialStore"},
		"no store file":                    {`{"mechanisms": [{"mechanism": "SCRAM-SHA-256", "credentialStore": "ScramCredentialFile", "credentialStoreConfig": {}}]}`, "credentialStoreConfig.file"},
		"an unknown store field":           {`{"mechanisms": [{"mechanism": "SCRAM-SHA-256", "credentialStore": "ScramCredentialFile", "credentialStoreConfig": {"path": "x"}}]}`, "credentialStoreConfig"},
		"a store file that is missing":     {`{"mechanisms": [{"mechanism": "SCRAM-SHA-256", "credentialStore": "ScramCredentialFile", "credentialStoreConfig": {"file": "/nonexistent"}}]}`, "credentialStoreConfig.file"},
		"too few phantom iterations":       {`{"mechanisms": [` + scramM + `, "phantomIterations": 100}]}`, "phantomIterations"},
		"a SCRAM entry with OAuth fields":  {`{"mechanisms": [` + scramM + `, "expectedAudience": "kafka"}]}`, "for OAUTHBEARER"},
		"an OAuth entry with SCRAM fields": {`{"mechanisms": [` + oauthM + `, "phantomIterations": 5000}]}`, "for SCRAM"},
		"no audience":                      {`{"mechanisms": [{"mechanism": "OAUTHBEARER", "jwksEndpointUrl": "https://idp/jwks", "expectedIssuer": "x"}]}`, "expectedAudience"},
		"no issuer":                        {`{"mechanisms": [{"mechanism": "OAUTHBEARER", "jwksEndpointUrl": "https://idp/jwks", "expectedAudience": "x"}]}`, "expectedIssuer"},
		"maxAuthBytes zero":                {`{"mechanisms": [` + oauthM + `, "maxAuthBytes": 0}]}`, "maxAuthBytes"},
		"maxAuthBytes over 512 KiB":        {`{"mechanisms": [` + oauthM + `, "maxAuthBytes": 600000}]}`, "maxAuthBytes"},
		"a JWKS URL over plain http":       {`{"mechanisms": [{"mechanism": "OAUTHBEARER", "jwksEndpointUrl": "http://idp.example.com/jwks", "expectedAudience": "k", "expectedIssuer": "i"}]}`, "jwksEndpointUrl"},
		"a negative fixed delay":           {scramConfig(store, `, "fixedAuthDelay": "-1s"`), "fixedAuthDelay"},
		"a fixed delay over 10s":           {scramConfig(store, `, "fixedAuthDelay": "1m"`), "fixedAuthDelay"},
		"a session under a second":         {scramConfig(store, `, "maxTimeBeforeReauth": "10ms"`), "maxTimeBeforeReauth"},
		"an unknown field":                 {scramConfig(store, `, "subjectBuilder": "x"`), "subjectBuilder"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := filter.New(Type, json.RawMessage(tc.cfg), filter.Env{ReadFile: os.ReadFile})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestScramSessions: SessionLifetimeMillis is maxTimeBeforeReauth, or none without it; the
// subject is the SCRAM user; a failed exchange closes the connection at its next request.
func TestScramSessions(t *testing.T) {
	store := storeFile(t, map[string]string{"alice": "alice-pw", "bob": "bob-pw"})
	t.Run("maxTimeBeforeReauth is the session's lifetime", func(t *testing.T) {
		c := newConn(t, scramConfig(store, `, "maxTimeBeforeReauth": "1h"`))
		resp := login(t, c, "alice", "alice-pw")
		if resp.ErrorCode != 0 || resp.SessionLifetimeMillis > 3_600_000 || resp.SessionLifetimeMillis < 3_500_000 {
			t.Fatalf("code %d, lifetime %d ms", resp.ErrorCode, resp.SessionLifetimeMillis)
		}
		if s := c.Subject(); s.User != "alice" || s.Mechanism != sasl.ScramSHA512 || s.Expires.IsZero() {
			t.Fatalf("subject %+v", s)
		}
	})
	t.Run("without it sessions do not end", func(t *testing.T) {
		c := newConn(t, scramConfig(store, ""))
		if resp := login(t, c, "alice", "alice-pw"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 0 {
			t.Fatalf("code %d, lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
		}
		if resp, err := metadata(t, c); err != nil || resp != nil {
			t.Fatalf("Metadata after authentication: answered %v, %v; want it forwarded", resp, err)
		}
	})
	t.Run("a wrong password fails, then the connection closes", func(t *testing.T) {
		c := newConn(t, scramConfig(store, `, "fixedAuthDelay": "0s"`))
		if resp := login(t, c, "alice", "bob-pw"); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("code %d", resp.ErrorCode)
		}
		if !c.Subject().Anonymous() {
			t.Fatal("a failed exchange set the subject")
		}
		if _, err := metadata(t, c); !errors.Is(err, errRefused) {
			t.Fatalf("Metadata after a failure: %v", err)
		}
	})
	t.Run("a re-authentication may not change the principal", func(t *testing.T) {
		c := newConn(t, scramConfig(store, `, "fixedAuthDelay": "0s"`))
		login(t, c, "alice", "alice-pw")
		if resp := login(t, c, "alice", "alice-pw"); resp.ErrorCode != 0 {
			t.Fatalf("re-authentication as alice: %d", resp.ErrorCode)
		}
		if resp := login(t, c, "bob", "bob-pw"); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("re-authentication as bob: %d", resp.ErrorCode)
		}
		if _, err := metadata(t, c); !errors.Is(err, errRefused) {
			t.Fatalf("Metadata after a refused re-authentication: %v", err)
		}
	})
	t.Run("SaslAuthenticate without a handshake is an illegal state", func(t *testing.T) {
		c := newConn(t, scramConfig(store, `, "fixedAuthDelay": "0s"`))
		resp, err := saslAuthenticate(t, c, []byte("n,,n=alice,r=abc"))
		if err != nil || resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("%v, code %v", err, resp)
		}
	})
}

// TestExpiredSession: once the session's timer fired, a request other than ApiVersions and a
// re-authentication closes the connection; a re-authentication opens it again.
func TestExpiredSession(t *testing.T) {
	store := storeFile(t, map[string]string{"alice": "alice-pw"})
	for _, reauth := range []bool{false, true} {
		c := newConnOf(t, testType, scramConfig(store, `, "maxTimeBeforeReauth": "1h"`))
		login(t, c, "alice", "alice-pw")
		f := lastBuilt
		f.expire(c, f.state(c)) // what the session's timer does
		if reauth {
			if resp := login(t, c, "alice", "alice-pw"); resp.ErrorCode != 0 {
				t.Fatalf("re-authentication after expiry: %d", resp.ErrorCode)
			}
			if _, err := metadata(t, c); err != nil {
				t.Fatalf("Metadata after re-authentication: %v", err)
			}
			continue
		}
		if _, err := metadata(t, c); err == nil || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("Metadata after expiry: %v", err)
		}
	}
}

// TestApiVersionsBeforeAuthentication: answered from kmsg's versions before the brokers' are
// known, then from theirs, with the SASL keys as the proxy answers them.
func TestApiVersionsBeforeAuthentication(t *testing.T) {
	store := storeFile(t, map[string]string{"alice": "alice-pw"})
	c := newConn(t, scramConfig(store, ""))
	ask := func() map[int16]int16 {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		resp, err := send(t, c, req)
		if err != nil || resp == nil {
			t.Fatalf("ApiVersions: %v, %v", resp, err)
		}
		out := map[int16]int16{}
		for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
			out[k.ApiKey] = k.MaxVersion
		}
		return out
	}
	if v := ask()[kmsg.Produce.Int16()]; v != kmsg.NewPtrProduceRequest().MaxVersion() {
		t.Fatalf("Produce up to v%d before the brokers' versions are known, want kmsg's", v)
	}
	broker := kmsg.NewPtrApiVersionsResponse()
	broker.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: kmsg.Produce.Int16(), MinVersion: 3, MaxVersion: 9}, {ApiKey: 18, MaxVersion: 3}}
	c.LearnVersions(broker)
	got := ask()
	// The SASL keys are the proxy's own, whatever the brokers offer: it answers them itself.
	want := map[int16]int16{kmsg.Produce.Int16(): 9, 18: 3, kmsg.SASLHandshake.Int16(): 1, kmsg.SASLAuthenticate.Int16(): kmsg.NewPtrSASLAuthenticateRequest().MaxVersion()}
	if !maps.Equal(got, want) {
		t.Fatalf("after the brokers' versions: %v, want %v", got, want)
	}
}

// FuzzGate: whatever a client that has not authenticated sends, the gate answers or closes,
// never panics.
func FuzzGate(f *testing.F) {
	store := storeFile(f, map[string]string{"alice": "alice-pw"})
	f.Add([]byte("n,,n=alice,r=abcdef"), true)
	f.Add([]byte{}, true)
	f.Add([]byte("n,,n=alice,r=abc,e=\x00"), true)
	f.Add(binary.BigEndian.AppendUint32(nil, 0x7fffffff), false)
	f.Add([]byte("c=biws,r=abc,p=AAAA"), true)
	f.Add([]byte("n,a=\xff\xfe,n=a\x00b,r=x"), true)
	chain := newChain(f, Type, scramConfig(store, `, "fixedAuthDelay": "0s"`))
	f.Fuzz(func(t *testing.T, b []byte, asSASL bool) {
		c := chain.ForConnection()
		if !asSASL {
			frame := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
			_, _, _, _ = c.Request(append(frame, b...))
			return
		}
		handshake(t, c, sasl.ScramSHA512)
		_, _ = saslAuthenticate(t, c, b)
		if !c.Subject().Anonymous() {
			t.Fatal("a fuzzed message set the subject")
		}
	})
}

// TestOAuthSessions: a token's subject and scopes become the connection's subject; the session
// ends at the earlier of the token's expiry and maxTimeBeforeReauth; an authorization id other
// than the token's subject, and a message over maxAuthBytes, are refused.
func TestOAuthSessions(t *testing.T) {
	iss := oauthtest.NewIssuer(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, iss.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := `{"mechanisms": [{"mechanism": "OAUTHBEARER", "jwksEndpointUrl": "` + iss.URL + `", "jwksEndpointCaFile": "` + ca +
		`", "expectedAudience": "kafka", "expectedIssuer": "https://issuer.test", "maxAuthBytes": 4096}], "maxTimeBeforeReauth": "1h", "fixedAuthDelay": "0s"}`
	token := func(exp time.Duration) string {
		return iss.Token(t, map[string]any{"sub": "svc", "aud": "kafka", "iss": "https://issuer.test", "scope": "a b", "exp": time.Now().Add(exp).Unix()})
	}
	message := func(authzid, tok string) []byte {
		return []byte("n," + authzid + ",\x01auth=Bearer " + tok + "\x01\x01")
	}
	for name, tc := range map[string]struct {
		msg          []byte
		code         int16
		minMs, maxMs int64
	}{
		"a token expiring before maxTimeBeforeReauth": {message("", token(10*time.Minute)), 0, 500_000, 600_000},
		"a token expiring after it":                   {message("", token(2*time.Hour)), 0, 3_500_000, 3_600_000},
		"the token's subject as authorization id":     {message("a=svc", token(time.Hour)), 0, 3_000_000, 3_600_000},
		"another authorization id":                    {message("a=admin", token(time.Hour)), kerr.SaslAuthenticationFailed.Code, 0, 0},
		"a message over maxAuthBytes":                 {message("", token(time.Hour)+strings.Repeat("x", 5000)), kerr.SaslAuthenticationFailed.Code, 0, 0},
		"not a JWT":                                   {message("", "abc.def.ghi"), kerr.SaslAuthenticationFailed.Code, 0, 0},
	} {
		t.Run(name, func(t *testing.T) {
			c := newConn(t, cfg)
			if hs := handshake(t, c, OAuthBearer); hs.ErrorCode != 0 {
				t.Fatalf("handshake: %d", hs.ErrorCode)
			}
			resp, err := saslAuthenticate(t, c, tc.msg)
			if err != nil || resp.ErrorCode != tc.code || resp.SessionLifetimeMillis < tc.minMs || resp.SessionLifetimeMillis > tc.maxMs {
				t.Fatalf("%v: code %d, lifetime %d ms", err, resp.ErrorCode, resp.SessionLifetimeMillis)
			}
			s := c.Subject()
			if tc.code != 0 {
				if !s.Anonymous() {
					t.Fatalf("refused, yet the subject is %+v", s)
				}
				return
			}
			if s.User != "svc" || s.Mechanism != OAuthBearer || strings.Join(s.Scopes, " ") != "a b" {
				t.Fatalf("subject %+v", s)
			}
		})
	}
}

// TestTokenWithinTheSkewOfItsExpiry: a token that expired less than the clock skew ago is valid,
// with a session of 1 ms, which ends at once: the connection's next request other than a
// re-authentication closes it.
func TestTokenWithinTheSkewOfItsExpiry(t *testing.T) {
	iss := oauthtest.NewIssuer(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, iss.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c := newConn(t, `{"mechanisms": [{"mechanism": "OAUTHBEARER", "jwksEndpointUrl": "`+iss.URL+`", "jwksEndpointCaFile": "`+ca+
		`", "expectedAudience": "kafka", "expectedIssuer": "https://issuer.test"}]}`)
	handshake(t, c, OAuthBearer)
	tok := iss.Token(t, map[string]any{"sub": "svc", "aud": "kafka", "iss": "https://issuer.test", "exp": time.Now().Add(-5 * time.Second).Unix()})
	resp, err := saslAuthenticate(t, c, []byte("n,,\x01auth=Bearer "+tok+"\x01\x01"))
	if err != nil || resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 1 {
		t.Fatalf("%v: code %d, lifetime %d ms", err, resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	for range 200 {
		if _, err := metadata(t, c); err != nil {
			if !strings.Contains(err.Error(), "expired") {
				t.Fatalf("closed for another reason: %v", err)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the session that ended was still open after 2s")
}

// TestNotWithSaslInspection: a chain that terminates SASL and also inspects it is refused, naming
// both filters.
func TestNotWithSaslInspection(t *testing.T) {
	store := storeFile(t, map[string]string{"alice": "alice-pw"})
	_, err := filter.NewChain(context.Background(), "vc", []config.Filter{
		{Name: "inspect", Type: saslinspection.Type, Config: json.RawMessage(`{}`)},
		{Name: "terminate", Type: Type, Config: json.RawMessage(scramConfig(store, ""))},
	})
	if err == nil || !strings.Contains(err.Error(), "filter inspect") || !strings.Contains(err.Error(), "filter terminate") {
		t.Fatalf("error %v, want one naming both filters", err)
	}
}
