package oauthbearer

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseInitialResponse(t *testing.T) {
	tests := map[string]struct {
		in      string
		authzid string
		token   string
		wantErr string
	}{
		"franz-go's form":                    {in: "n,,\x01auth=Bearer tok\x01\x01", token: "tok"},
		"with an authzid":                    {in: "n,a=alice,\x01auth=Bearer tok\x01\x01", authzid: "alice", token: "tok"},
		"an escaped authzid":                 {in: "n,a=a=2Cb=3Dc,\x01auth=Bearer tok\x01\x01", authzid: "a,b=c", token: "tok"},
		"with extensions":                    {in: "n,,\x01host=k\x01auth=bearer tok\x01port=9092\x01\x01", token: "tok"},
		"flag y":                             {in: "y,,\x01auth=Bearer tok\x01\x01", token: "tok"},
		"channel binding":                    {in: "p=tls-unique,,\x01auth=Bearer tok\x01\x01", wantErr: "channel binding"},
		"no kvsep":                           {in: "n,,auth=Bearer tok", wantErr: "no kvsep"},
		"not ended":                          {in: "n,,\x01auth=Bearer tok\x01", wantErr: "two kvseps"},
		"no auth":                            {in: "n,,\x01host=k\x01\x01", wantErr: "no auth=Bearer"},
		"another scheme":                     {in: "n,,\x01auth=Basic YTpi\x01\x01", wantErr: "Bearer <token>"},
		"an empty token":                     {in: "n,,\x01auth=Bearer \x01\x01", wantErr: "Bearer <token>"},
		"a token with a space":               {in: "n,,\x01auth=Bearer a b\x01\x01", wantErr: "Bearer <token>"},
		"a token with a control byte":        {in: "n,,\x01auth=Bearer a\x00\x01\x01", wantErr: "Bearer <token>"},
		"a padded token":                     {in: "n,,\x01auth=Bearer ab==\x01\x01", token: "ab=="},
		"auth twice":                         {in: "n,,\x01auth=Bearer a\x01auth=Bearer b\x01\x01", wantErr: "auth given twice"},
		"a pair without =":                   {in: "n,,\x01auth\x01\x01", wantErr: "without key"},
		"an empty pair":                      {in: "n,,\x01auth=Bearer a\x01\x01\x01", wantErr: "without key"},
		"a malformed GS2 header":             {in: "n,x\x01auth=Bearer a\x01\x01", wantErr: "malformed GS2"},
		"an empty authzid":                   {in: "n,a=,\x01auth=Bearer a\x01\x01", wantErr: "authzid"},
		"the client's error acknowledgement": {in: "\x01", wantErr: "GS2 header flag"},
		"empty":                              {in: "", wantErr: "no kvsep"},
		"too many pairs":                     {in: "n,,\x01" + strings.Repeat("k=v\x01", maxKVPairs) + "auth=Bearer a\x01\x01", wantErr: "key-value pairs"},
		"oversized":                          {in: "n,,\x01auth=Bearer " + strings.Repeat("a", maxInitialResponse) + "\x01\x01", wantErr: "bytes, over"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := parseInitialResponse([]byte(tc.in))
			if tc.wantErr != "" {
				if !errors.Is(err, errInitialResponse) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %+v %v, want %q", r, err, tc.wantErr)
				}
				return
			}
			if err != nil || r.token != tc.token || r.authzid != tc.authzid {
				t.Fatalf("got %+v %v", r, err)
			}
		})
	}
}

// FuzzParseInitialResponse: no panic, bounded, and a token only from a well-formed response.
func FuzzParseInitialResponse(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer tok\x01\x01"))
	f.Add([]byte("n,a=a=2Cb,\x01auth=Bearer tok\x01x=y\x01\x01"))
	f.Add([]byte("\x01\x01\x01"))
	f.Add([]byte("n,,\x01" + strings.Repeat("\x01", 1000)))
	f.Add([]byte("y,,\x01auth=Bearer " + strings.Repeat("A", 4096) + "\x01\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseInitialResponse(b)
		if err != nil {
			return
		}
		if r.token == "" || len(b) > maxInitialResponse || !isB64Token(r.token) {
			t.Fatalf("accepted %q as %+v", b, r)
		}
	})
}

func TestBackoff(t *testing.T) {
	now := time.Now()
	f := newFailures(3, time.Minute)
	sum := [32]byte{1}
	if d := f.delay(sum, now); d != 0 {
		t.Fatalf("a token never refused waits %s", d)
	}
	var last time.Duration
	for i := 1; i <= 8; i++ {
		f.failed(sum, now)
		d := f.delay(sum, now)
		lo := min(firstDelay<<(i-1), maxDelay)
		if d < lo || d > maxDelay || d < last && d != maxDelay {
			t.Fatalf("after %d failures: %s, want at least %s, at most %s", i, d, lo, maxDelay)
		}
		last = d
	}
	if d := f.delay(sum, now.Add(time.Minute)); d != 0 {
		t.Fatalf("a failure older than authenticateBackOffMaxMs still delays %s", d)
	}
	f.failed(sum, now)
	f.succeeded(sum)
	if d := f.delay(sum, now); d != 0 {
		t.Fatalf("after a success: %s", d)
	}
	for i := range 100 {
		f.failed([32]byte{byte(i), 2}, now)
	}
	if n := len(f.entries); n > 3 {
		t.Fatalf("%d failures kept, over authenticateCacheMaxSize 3", n)
	}
	capped := newFailures(10, 700*time.Millisecond)
	for range 5 {
		capped.failed(sum, now)
	}
	if d := capped.delay(sum, now); d > 700*time.Millisecond {
		t.Fatalf("%s, over authenticateBackOffMaxMs", d)
	}
	off := newFailures(10, 0)
	off.failed(sum, now)
	if d := off.delay(sum, now); d != 0 {
		t.Fatalf("authenticateBackOffMaxMs 0 still delays %s", d)
	}
}
