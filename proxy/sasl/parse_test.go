package sasl_test

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkalink/kafkalink/proxy/sasl"
)

func TestParsePlain(t *testing.T) {
	tests := map[string]struct {
		msg  string
		want string // identity; empty: refused
	}{
		"user and password":           {msg: "\x00alice\x00secret", want: "alice"},
		"authzid is the identity":     {msg: "admin\x00alice\x00secret", want: "admin"},
		"empty user":                  {msg: "\x00\x00secret"},
		"empty password":              {msg: "\x00alice\x00"},
		"two parts":                   {msg: "alice\x00secret"},
		"four parts":                  {msg: "\x00alice\x00se\x00cret"},
		"empty":                       {msg: ""},
		"user not UTF-8":              {msg: "\x00\xffalice\x00secret"},
		"over the size limit":         {msg: "\x00alice\x00" + strings.Repeat("p", sasl.MaxMessageBytes)},
		"password may hold any UTF-8": {msg: "\x00alice\x00pä ss,=", want: "alice"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := sasl.ParsePlain([]byte(tc.msg))
			if tc.want == "" {
				if err == nil {
					t.Fatalf("accepted as %+v", p)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("the error carries the password: %v", err)
				}
				return
			}
			if err != nil || p.Identity() != tc.want {
				t.Fatalf("identity %q, err %v", p.Identity(), err)
			}
		})
	}
}

func TestParseScramClientFirst(t *testing.T) {
	tests := map[string]struct {
		msg            string
		user, identity string // empty: refused
		header         string
	}{
		"franz-go's":              {msg: "n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL", user: "alice", identity: "alice", header: "n,,"},
		"escaped user":            {msg: "n,,n=a=2Cb=3Dc,r=x", user: "a,b=c", identity: "a,b=c", header: "n,,"},
		"authzid":                 {msg: "n,a=bob,n=alice,r=x", user: "alice", identity: "bob", header: "n,a=bob,"},
		"client supports binding": {msg: "y,,n=alice,r=x", user: "alice", identity: "alice", header: "y,,"},
		"extensions":              {msg: "n,,n=alice,r=x,tokenauth=true", user: "alice", identity: "alice", header: "n,,"},
		"channel binding":         {msg: "p=tls-unique,,n=alice,r=x"},
		"mandatory extension":     {msg: "n,,m=ext,n=alice,r=x"},
		"bad escape":              {msg: "n,,n=a=2Db,r=x"},
		"trailing equals":         {msg: "n,,n=alice=,r=x"},
		"no nonce":                {msg: "n,,n=alice"},
		"empty nonce":             {msg: "n,,n=alice,r="},
		"nonce not printable":     {msg: "n,,n=alice,r=a\x00b"},
		"empty user":              {msg: "n,,n=,r=x"},
		"no header":               {msg: "n=alice,r=x"},
		"header cut":              {msg: "n,"},
		"authzid without a=":      {msg: "n,bob,n=alice,r=x"},
		"extension without value": {msg: "n,,n=alice,r=x,ext"},
		"extension twice":         {msg: "n,,n=alice,r=x,e=1,e=2"},
		"too many extensions":     {msg: "n,,n=alice,r=x" + strings.Repeat(",e=1", 40)},
		"over the size limit":     {msg: "n,,n=alice,r=" + strings.Repeat("x", sasl.MaxMessageBytes)},
		"user not UTF-8":          {msg: "n,,n=\xff,r=x"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, err := sasl.ParseScramClientFirst([]byte(tc.msg))
			if tc.user == "" {
				if err == nil {
					t.Fatalf("accepted as %+v", f)
				}
				return
			}
			if err != nil || f.User != tc.user || f.Identity() != tc.identity || f.GS2Header != tc.header || tc.header+string(f.Bare) != tc.msg {
				t.Fatalf("%+v, err %v", f, err)
			}
		})
	}
}

func TestParseScramClientFinal(t *testing.T) {
	ok := "c=biws,r=abc,p=" + base64.StdEncoding.EncodeToString([]byte("proof"))
	f, err := sasl.ParseScramClientFinal([]byte(ok))
	if err != nil || f.ChannelBinding != "biws" || f.Nonce != "abc" || string(f.Proof) != "proof" || string(f.WithoutProof) != "c=biws,r=abc" {
		t.Fatalf("%+v, err %v", f, err)
	}
	for name, msg := range map[string]string{
		"no proof":         "c=biws,r=abc",
		"proof not base64": "c=biws,r=abc,p=***",
		"empty proof":      "c=biws,r=abc,p=",
		"no binding":       "r=abc,p=AAAA",
		"empty binding":    "c=,r=abc,p=AAAA",
		"no nonce":         "c=biws,p=AAAA",
		"bad extension":    "c=biws,r=abc,x,p=AAAA",
		"empty":            "",
		"over the limit":   "c=biws,r=" + strings.Repeat("a", sasl.MaxMessageBytes) + ",p=AAAA",
	} {
		if _, err := sasl.ParseScramClientFinal([]byte(msg)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// jwt is an unsigned compact JWS with the given payload.
func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + ".c2ln"
}

func TestParseOAuthBearerInitial(t *testing.T) {
	tok := jwt(`{"sub":"alice"}`)
	tests := map[string]struct {
		msg     string
		authzid string
		ok      bool
	}{
		"Kafka's":               {msg: "n,,\x01auth=Bearer " + tok + "\x01\x01", ok: true},
		"authzid and extension": {msg: "n,a=al=2Cice,\x01auth=Bearer " + tok + "\x01traceId=123\x01\x01", authzid: "al,ice", ok: true},
		"scheme in lower case":  {msg: "n,,\x01auth=bearer " + tok + "\x01\x01", ok: true},
		"no auth":               {msg: "n,,\x01traceId=1\x01\x01"},
		"not Bearer":            {msg: "n,,\x01auth=Basic YWxpY2U=\x01\x01"},
		"token with a space":    {msg: "n,,\x01auth=Bearer a b\x01\x01"},
		"empty token":           {msg: "n,,\x01auth=Bearer \x01\x01"},
		"auth twice":            {msg: "n,,\x01auth=Bearer a\x01auth=Bearer b\x01\x01"},
		"no final 0x01":         {msg: "n,,\x01auth=Bearer " + tok + "\x01"},
		"no pairs":              {msg: "n,,\x01\x01"},
		"binding flag y":        {msg: "y,,\x01auth=Bearer " + tok + "\x01\x01"},
		"channel binding":       {msg: "p=x,,\x01auth=Bearer " + tok + "\x01\x01"},
		"just 0x01":             {msg: "\x01"},
		"too large":             {msg: "n,,\x01auth=Bearer " + strings.Repeat("a", sasl.MaxTokenBytes) + "\x01\x01"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := sasl.ParseOAuthBearerInitial([]byte(tc.msg))
			if !tc.ok {
				if err == nil {
					t.Fatalf("accepted as %+v", r)
				}
				return
			}
			if err != nil || r.Token != tok || r.Authzid != tc.authzid {
				t.Fatalf("%+v, err %v", r, err)
			}
		})
	}
	if !sasl.IsOAuthBearerErrorAck([]byte{1}) || sasl.IsOAuthBearerErrorAck([]byte{1, 1}) {
		t.Fatal("IsOAuthBearerErrorAck")
	}
}

func TestReadJWTClaims(t *testing.T) {
	tests := map[string]struct {
		token, claim string
		subject      string // empty: refused
		scopes       []string
		expires      time.Time
	}{
		"sub":                   {token: jwt(`{"sub":"alice","exp":1700000000}`), subject: "alice", expires: time.Unix(1700000000, 0)},
		"configured claim":      {token: jwt(`{"sub":"x","client_id":"svc"}`), claim: "client_id", subject: "svc"},
		"scopes as a string":    {token: jwt(`{"sub":"a","scope":"read write"}`), subject: "a", scopes: []string{"read", "write"}},
		"scopes as an array":    {token: jwt(`{"sub":"a","scope":["read"]}`), subject: "a", scopes: []string{"read"}},
		"padded payload":        {token: jwt(`{"sub":"a"}`) + "", subject: "a"},
		"no subject":            {token: jwt(`{"iss":"x"}`)},
		"subject not a string":  {token: jwt(`{"sub":7}`)},
		"empty subject":         {token: jwt(`{"sub":""}`)},
		"payload an array":      {token: jwt(`["sub"]`)},
		"payload null":          {token: jwt(`null`)},
		"payload not base64url": {token: "a.!!!.c"},
		"two parts":             {token: "a.b"},
		"exp a string":          {token: jwt(`{"sub":"a","exp":"soon"}`)},
		"exp negative":          {token: jwt(`{"sub":"a","exp":-1}`)},
		"exp huge":              {token: jwt(`{"sub":"a","exp":1e300}`)},
		"scope a number":        {token: jwt(`{"sub":"a","scope":1}`)},
		"too large":             {token: jwt(`{"sub":"` + strings.Repeat("a", sasl.MaxTokenBytes) + `"}`)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := sasl.ReadJWTClaims(tc.token, tc.claim, "")
			if tc.subject == "" {
				if err == nil {
					t.Fatalf("accepted as %+v", c)
				}
				return
			}
			if err != nil || c.Subject != tc.subject || !slices.Equal(c.Scopes, tc.scopes) || !c.Expires.Equal(tc.expires) {
				t.Fatalf("%+v, err %v", c, err)
			}
		})
	}
}
