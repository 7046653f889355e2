package saslinspection_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	_ "github.com/kafkalink/kafkalink/proxy/filter/saslinspection"
)

// client is one connection through a chain with a SaslInspection filter, driven frame by frame.
type client struct {
	t    *testing.T
	conn *filter.Conn
	corr int32
}

func newClient(t *testing.T, cfg string) *client {
	t.Helper()
	c, err := filter.NewChain(context.Background(), "a", []config.Filter{{Name: "s", Type: "SaslInspection", Config: json.RawMessage(cfg)}})
	if err != nil {
		t.Fatal(err)
	}
	return &client{t: t, conn: c.ForConnection()}
}

// exchange sends req; when the filter forwards it, the broker answers with resp. It returns the
// response the client gets, or the error that closes the connection.
func (c *client) exchange(req kmsg.Request, resp kmsg.Response) (kmsg.Response, error) {
	c.t.Helper()
	c.corr++
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, c.corr)
	fwd, answer, state, err := c.conn.Request(frame)
	if err != nil {
		return nil, err
	}
	out := answer
	if answer == nil {
		if fwd == nil {
			c.t.Fatal("neither forwarded nor answered")
		}
		resp.SetVersion(req.GetVersion())
		if out, err = c.conn.Response(req.Key(), req.GetVersion(), responseFrame(c.corr, resp), state); err != nil {
			return nil, err
		}
	}
	got := kmsg.ResponseForKey(req.Key())
	got.SetVersion(req.GetVersion())
	body := out[8:]
	if got.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		body = body[1:]
	}
	if err := got.ReadFrom(body); err != nil {
		c.t.Fatal(err)
	}
	return got, nil
}

func responseFrame(corr int32, resp kmsg.Response) []byte {
	b := make([]byte, 8, 64)
	binary.BigEndian.PutUint32(b[4:], uint32(corr))
	if resp.IsFlexible() {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func handshake(mech string) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(1)
	req.Mechanism = mech
	return req, kmsg.NewPtrSASLHandshakeResponse()
}

// authenticate is a SaslAuthenticate v version with msg, and the broker's answer: its code,
// message and session lifetime.
func authenticate(version int16, msg string, code int16, reply string, lifetime int64) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(version)
	req.SASLAuthBytes = []byte(msg)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.ErrorCode, resp.SASLAuthBytes, resp.SessionLifetimeMillis = code, []byte(reply), lifetime
	return req, resp
}

// step is one request of a scripted connection and what must come of it.
type step struct {
	req    kmsg.Request
	resp   kmsg.Response
	closes bool   // the connection is closed
	code   int16  // the error code the client gets
	user   string // the subject's user afterwards
}

func (c *client) run(steps []step) {
	c.t.Helper()
	for i, s := range steps {
		got, err := c.exchange(s.req, s.resp)
		if s.closes {
			if err == nil {
				c.t.Fatalf("step %d (%s): the connection stays open", i, kmsg.NameForKey(s.req.Key()))
			}
			return
		}
		if err != nil {
			c.t.Fatalf("step %d (%s): %v", i, kmsg.NameForKey(s.req.Key()), err)
		}
		if code := errorCode(got); code != s.code {
			c.t.Fatalf("step %d (%s): error code %d, want %d", i, kmsg.NameForKey(s.req.Key()), code, s.code)
		}
		if sub := c.conn.Subject(); sub.User != s.user {
			c.t.Fatalf("step %d (%s): subject %+v, want user %q", i, kmsg.NameForKey(s.req.Key()), sub, s.user)
		}
	}
}

func errorCode(r kmsg.Response) int16 {
	switch r := r.(type) {
	case *kmsg.SASLHandshakeResponse:
		return r.ErrorCode
	case *kmsg.SASLAuthenticateResponse:
		return r.ErrorCode
	case *kmsg.MetadataResponse:
		return 0
	}
	return -2
}

func metadata() (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	return req, kmsg.NewPtrMetadataResponse()
}

func s(req kmsg.Request, resp kmsg.Response) step { return step{req: req, resp: resp} }

const scramFirst = "n,,n=alice,r=abc"

// jwt is an unsigned token for sub.
func jwt(sub string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(`{"sub":"`+sub+`","scope":"read write"}`)) + ".c2ln"
}

// with sets the expectations of a step.
func (st step) with(f func(*step)) step { f(&st); return st }

func TestSaslInspectionExchanges(t *testing.T) {
	ok := func(user string) func(*step) { return func(s *step) { s.user = user } }
	closes := func(s *step) { s.closes = true }
	code := func(c int16, user string) func(*step) { return func(s *step) { s.code, s.user = c, user } }
	tests := map[string]struct {
		cfg   string
		steps []step
	}{
		"SCRAM sets the subject after server-final": {cfg: `{}`, steps: []step{
			s(handshake("SCRAM-SHA-512")),
			s(authenticate(1, scramFirst, 0, "r=abcdef,s=c2FsdA==,i=4096", 0)),
			s(authenticate(1, "c=biws,r=abcdef,p=AAAA", 0, "v=AAAA", 60000)).with(ok("alice")),
		}},
		"SCRAM refused leaves the subject anonymous and closes at the next request": {cfg: `{}`, steps: []step{
			s(handshake("SCRAM-SHA-256")),
			s(authenticate(1, scramFirst, 0, "r=abcdef,s=c2FsdA==,i=4096", 0)),
			s(authenticate(1, "c=biws,r=abcdef,p=AAAA", kerr.SaslAuthenticationFailed.Code, "", 0)).with(code(kerr.SaslAuthenticationFailed.Code, "")),
			s(metadata()).with(closes),
		}},
		"PLAIN with authzid": {cfg: `{"enabledMechanisms": ["PLAIN"]}`, steps: []step{
			s(handshake("PLAIN")),
			s(authenticate(1, "admin\x00bob\x00pw", 0, "", 0)).with(ok("admin")),
		}},
		"PLAIN is not enabled by default": {cfg: `{}`, steps: []step{
			s(handshake("PLAIN")).with(code(kerr.UnsupportedSaslMechanism.Code, "")),
		}},
		"OAUTHBEARER takes the token's subject and scopes": {cfg: `{}`, steps: []step{
			s(handshake("OAUTHBEARER")),
			s(authenticate(1, "n,,\x01auth=Bearer "+jwt("svc-1")+"\x01\x01", 0, "", 3600000)).with(ok("svc-1")),
		}},
		"OAUTHBEARER with a configured subject claim": {cfg: `{"subClaimName": "scope"}`, steps: []step{
			s(handshake("OAUTHBEARER")),
			s(authenticate(1, "n,,\x01auth=Bearer "+jwt("svc-1")+"\x01\x01", 0, "", 3600000)).with(ok("read write")),
		}},
		"OAUTHBEARER accepted with no session lifetime sets no subject": {cfg: `{}`, steps: []step{
			s(handshake("OAUTHBEARER")),
			s(authenticate(1, "n,,\x01auth=Bearer "+jwt("svc-1")+"\x01\x01", 0, "", 0)).with(ok("")),
		}},
		"OAUTHBEARER error challenge then failure": {cfg: `{}`, steps: []step{
			s(handshake("OAUTHBEARER")),
			s(authenticate(1, "n,,\x01auth=Bearer "+jwt("svc-1")+"\x01\x01", 0, `{"status":"invalid_token"}`, 0)),
			s(authenticate(1, "\x01", kerr.SaslAuthenticationFailed.Code, "", 0)).with(code(kerr.SaslAuthenticationFailed.Code, "")),
			s(handshake("OAUTHBEARER")).with(closes),
		}},
		"re-authentication replaces the subject": {cfg: `{"enabledMechanisms": ["PLAIN"]}`, steps: []step{
			s(handshake("PLAIN")),
			s(authenticate(1, "\x00bob\x00pw", 0, "", 60000)).with(ok("bob")),
			s(handshake("PLAIN")).with(ok("bob")),
			s(authenticate(1, "\x00carol\x00pw", 0, "", 60000)).with(ok("carol")),
		}},
		"failed re-authentication keeps the subject and closes": {cfg: `{"enabledMechanisms": ["PLAIN"]}`, steps: []step{
			s(handshake("PLAIN")),
			s(authenticate(1, "\x00bob\x00pw", 0, "", 60000)).with(ok("bob")),
			s(handshake("PLAIN")).with(ok("bob")),
			s(authenticate(1, "\x00carol\x00bad", kerr.SaslAuthenticationFailed.Code, "", 0)).with(code(kerr.SaslAuthenticationFailed.Code, "bob")),
			s(metadata()).with(closes),
		}},
		"no re-authentication after SaslAuthenticate v0": {cfg: `{"enabledMechanisms": ["PLAIN"]}`, steps: []step{
			s(handshake("PLAIN")),
			s(authenticate(0, "\x00bob\x00pw", 0, "", 0)).with(ok("bob")),
			s(handshake("PLAIN")).with(closes),
		}},
		"unreadable client message closes": {cfg: `{}`, steps: []step{
			s(handshake("SCRAM-SHA-512")),
			s(authenticate(1, "garbage", 0, "", 0)).with(closes),
		}},
		"SaslAuthenticate before the handshake closes": {cfg: `{}`, steps: []step{
			s(authenticate(1, scramFirst, 0, "", 0)).with(closes),
		}},
		"a second handshake mid-exchange closes": {cfg: `{}`, steps: []step{
			s(handshake("SCRAM-SHA-512")),
			s(handshake("SCRAM-SHA-512")).with(closes),
		}},
		"broker refuses the mechanism: only common ones offered, then closed": {cfg: `{"enabledMechanisms": ["SCRAM-SHA-512"]}`, steps: []step{
			func() step {
				req, resp := handshake("SCRAM-SHA-512")
				r := resp.(*kmsg.SASLHandshakeResponse)
				r.ErrorCode, r.SupportedMechanisms = kerr.UnsupportedSaslMechanism.Code, []string{"PLAIN"}
				return s(req, resp).with(code(kerr.UnsupportedSaslMechanism.Code, ""))
			}(),
			s(metadata()).with(closes),
		}},
		"requireAuthentication refuses Metadata first": {cfg: `{"requireAuthentication": true}`, steps: []step{
			s(metadata()).with(closes),
		}},
		"requireAuthentication lets the authenticated through": {cfg: `{"requireAuthentication": true, "enabledMechanisms": ["PLAIN"]}`, steps: []step{
			s(handshake("PLAIN")),
			s(authenticate(1, "\x00bob\x00pw", 0, "", 0)).with(ok("bob")),
			s(metadata()).with(ok("bob")),
		}},
		"subject builder maps the user": {cfg: `{"enabledMechanisms": ["PLAIN"], "subjectBuilder": "DefaultSaslSubjectBuilderService",
			"subjectBuilderConfig": {"addPrincipals": [{"from": "saslAuthorizedId", "map": [{"replaceMatch": "/(.*)@corp/$1/U"}, {"else": "anonymous"}], "principalFactory": "UserFactory"}]}}`, steps: []step{
			s(handshake("PLAIN")),
			s(authenticate(1, "\x00bob@corp\x00pw", 0, "", 0)).with(ok("BOB")),
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			newClient(t, tc.cfg).run(tc.steps)
		})
	}
}

// TestUnsupportedMechanismAnsweredLocally: the enabled mechanisms are offered, and the broker
// does not see the handshake.
func TestUnsupportedMechanismAnsweredLocally(t *testing.T) {
	c := newClient(t, `{"enabledMechanisms": ["SCRAM-SHA-512", "OAUTHBEARER"]}`)
	req, _ := handshake("PLAIN")
	got, err := c.exchange(req, nil) // a nil broker answer: exchange fails if it is forwarded
	if err != nil {
		t.Fatal(err)
	}
	r := got.(*kmsg.SASLHandshakeResponse)
	if r.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(r.SupportedMechanisms, ",") != "OAUTHBEARER,SCRAM-SHA-512" {
		t.Fatalf("%+v", r)
	}
}

// TestSessionLifetimeSetsExpiry: the subject expires when the broker's session does.
func TestSessionLifetimeSetsExpiry(t *testing.T) {
	c := newClient(t, `{"enabledMechanisms": ["PLAIN"]}`)
	c.run([]step{s(handshake("PLAIN")), s(authenticate(1, "\x00bob\x00pw", 0, "", 60000)).with(func(s *step) { s.user = "bob" })})
	sub := c.conn.Subject()
	if sub.Mechanism != "PLAIN" || time.Until(sub.Expires) <= 0 || time.Until(sub.Expires) > time.Minute {
		t.Fatalf("%+v", sub)
	}
}

func TestConfigErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"enabledMechanisms": ["GSSAPI"]}`: `enabledMechanisms: "GSSAPI"`,
		`{"enabledMechanisms": []}`:         "enabledMechanisms: empty",
		`{"requireAuthentication": "yes"}`:  "requireAuthentication",
		`{"subjectBuilder": "x.Y"}`:         `subjectBuilder "x.Y"`,
		`{"enabledMechanism": ["PLAIN"]}`:   "unknown field",
	} {
		_, err := filter.New("SaslInspection", json.RawMessage(cfg), filter.Env{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one with %q", cfg, err, want)
		}
	}
	for _, typ := range []string{"io.kroxylicious.filter.sasl.inspection.SaslInspection", "io.kroxylicious.filters.sasl.inspection.SaslInspection"} {
		if _, err := filter.New(typ, json.RawMessage(`{}`), filter.Env{}); err != nil {
			t.Errorf("%s: %v", typ, err)
		}
	}
}
