package expiration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

func TestConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		config string
		maxAge time.Duration
		jitter time.Duration
		err    string
	}{
		"Go durations":                      {config: `{"maxAge":"1h","jitter":"5m"}`, maxAge: time.Hour, jitter: 5 * time.Minute},
		"seconds as Kroxylicious' docs":     {config: `{"maxAge":"3600s"}`, maxAge: time.Hour},
		"ISO-8601 as Java writes it":        {config: `{"maxAge":"PT1H30M","jitter":"PT0.5S"}`, maxAge: 90 * time.Minute, jitter: 500 * time.Millisecond},
		"ISO-8601 days":                     {config: `{"maxAge":"P1DT2H"}`, maxAge: 26 * time.Hour},
		"a number of seconds":               {config: `{"maxAge":90}`, maxAge: 90 * time.Second},
		"maxAge is required":                {config: `{"jitter":"1m"}`, err: "maxAge is required"},
		"maxAge must be positive":           {config: `{"maxAge":"0s"}`, err: "maxAge 0s must be positive"},
		"maxAge negative":                   {config: `{"maxAge":"-1m"}`, err: "maxAge -1m0s must be positive"},
		"maxAge over a year":                {config: `{"maxAge":"9000h"}`, err: "at most 8760h"},
		"jitter over maxAge":                {config: `{"maxAge":"1m","jitter":"2m"}`, err: "jitter 2m0s must not be negative nor greater than maxAge"},
		"negative jitter":                   {config: `{"maxAge":"1m","jitter":"-1s"}`, err: "jitter -1s must not be negative"},
		"an ISO duration without a number":  {config: `{"maxAge":"PT"}`, err: "neither Go's"},
		"an ISO duration with a bad unit":   {config: `{"maxAge":"P1Y"}`, err: "neither Go's"},
		"an unknown field":                  {config: `{"maxAge":"1m","maxAgeSeconds":2}`, err: "unknown field"},
		"an ISO duration too long":          {config: `{"maxAge":"P999999D"}`, err: "too long"},
		"not a duration":                    {config: `{"maxAge":"soon"}`, err: "invalid duration"},
		"jitter equal to maxAge is allowed": {config: `{"maxAge":"1m","jitter":"1m"}`, maxAge: time.Minute, jitter: time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := filter.New(Type, []byte(tc.config), filter.Env{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e := f.(*expiration)
			if e.maxAge != tc.maxAge || e.jitter != tc.jitter {
				t.Errorf("maxAge %s jitter %s, want %s %s", e.maxAge, e.jitter, tc.maxAge, tc.jitter)
			}
		})
	}
}

// Each connection's age is maxAge ± jitter, never below a millisecond, and the offsets drawn
// cover both signs.
func TestAgeWithinJitter(t *testing.T) {
	e := &expiration{maxAge: time.Minute, jitter: 10 * time.Second, now: time.Now, offset: randomOffset}
	var below, above bool
	for range 1000 {
		a := e.age()
		if a < 50*time.Second || a > 70*time.Second {
			t.Fatalf("age %s outside 50s..70s", a)
		}
		below, above = below || a < time.Minute, above || a > time.Minute
	}
	if !below || !above {
		t.Errorf("1000 ages all on one side of maxAge (below %v, above %v)", below, above)
	}
	e = &expiration{maxAge: time.Millisecond, jitter: time.Millisecond, offset: func(j time.Duration) time.Duration { return -j }}
	if a := e.age(); a != time.Millisecond {
		t.Errorf("age %s, want the 1ms floor", a)
	}
}

// A chain with the filter gives each connection its expiry when the connection starts.
func TestConnectionGetsItsExpiry(t *testing.T) {
	c, err := filter.NewChain(context.Background(), "vc", []config.Filter{{Name: "expire", Type: Type, Config: []byte(`{"maxAge":"10m","jitter":"1m"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	exp := c.ForConnection().Expires()
	if exp.Before(before.Add(9*time.Minute)) || exp.After(time.Now().Add(11*time.Minute)) {
		t.Errorf("expiry %s after the start, want 9m..11m", exp.Sub(before))
	}
	plain, err := filter.NewChain(context.Background(), "vc", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !plain.ForConnection().Expires().IsZero() {
		t.Error("a chain without the filter expires its connections")
	}
}

// FuzzParseISO: any string parses or fails, without panicking, to a non-negative duration.
func FuzzParseISO(f *testing.F) {
	for _, s := range []string{"PT1H", "P1DT2H3M4.5S", "P", "PT", "P999999DT99999999H", "PT999999999999.999999999S", "p1d", "PT1H1H"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := parseISO(s); err == nil && d < 0 {
			t.Errorf("%q parsed to %s", s, d)
		}
	})
}
