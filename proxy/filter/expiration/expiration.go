// Package expiration is the ConnectionExpiration filter: each client connection ends after maxAge,
// give or take up to jitter (drawn per connection), cleanly between requests: the relay reads no
// request after the connection's expiry and closes it once the responses in flight are written,
// so no request is cut short. Clients reconnect, through whatever the Service balances them to:
// after the proxy scales out, connections spread over the new replicas instead of staying on
// the old ones.
//
// Its configuration takes Kroxylicious' shape:
//
//	maxAge: 1h     # required, positive, at most 365 days
//	jitter: 5m     # optional, at most maxAge: each connection's age is maxAge ± jitter
//
// Durations are Go's ("1h", "30m", "3600s", "1h30m"), ISO-8601 as Java writes them ("PT1H",
// "P1DT2H"), or a number of seconds.
package expiration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// Type is the filter type, as Kroxylicious names it.
const Type = "ConnectionExpiration"

// maxMaxAge bounds maxAge: a connection kept a year is not expired in any useful sense, and a
// typo of units (a maxAge of 3600h meant as seconds) is caught.
const maxMaxAge = 365 * 24 * time.Hour

func init() {
	filter.RegisterTyped(newExpiration, Type, "io.kroxylicious.filter.connectionexpiration.ConnectionExpiration")
}

// Config is the filter's configuration.
type Config struct {
	MaxAge *Duration `json:"maxAge"`
	Jitter *Duration `json:"jitter,omitempty"`
}

// Duration reads Go, ISO-8601 and numeric durations.
type Duration struct{ time.Duration }

// UnmarshalJSON reads a duration (see the package documentation).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil && strings.HasPrefix(strings.ToUpper(s), "P") {
		v, err := parseISO(s)
		d.Duration = v
		return err
	}
	var c config.Duration
	if err := c.UnmarshalJSON(b); err != nil {
		return err
	}
	d.Duration = c.Duration
	return nil
}

// isoDuration is the ISO-8601 form java.time.Duration writes and reads: days, hours, minutes
// and (fractional) seconds.
var isoDuration = regexp.MustCompile(`^P(?:(\d{1,6})D)?(?:T(?:(\d{1,8})H)?(?:(\d{1,10})M)?(?:(\d{1,12}(?:\.\d{1,9})?)S)?)?$`)

func parseISO(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(strings.ToUpper(s))
	if m == nil || s == "P" || strings.HasSuffix(strings.ToUpper(s), "T") {
		return 0, fmt.Errorf("duration %q is neither Go's (1h30m) nor ISO-8601's (PT1H30M)", s)
	}
	// Summed in seconds as floats: the pattern's digits could overflow a Duration.
	var secs float64
	for i, unit := range []float64{86400, 3600, 60, 1} {
		if m[i+1] != "" {
			n, _ := strconv.ParseFloat(m[i+1], 64) // the pattern makes it a number
			secs += n * unit
		}
	}
	if secs > maxMaxAge.Seconds()*2 {
		return 0, fmt.Errorf("duration %q is too long", s)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// expiration gives each connection its end.
type expiration struct {
	maxAge, jitter time.Duration
	now            func() time.Time
	// offset draws a connection's jitter in [-jitter, jitter].
	offset func(jitter time.Duration) time.Duration
}

func newExpiration(cfg *Config, _ filter.Env) (filter.Filter, error) {
	if cfg.MaxAge == nil {
		return nil, fmt.Errorf("maxAge is required")
	}
	if cfg.MaxAge.Duration <= 0 || cfg.MaxAge.Duration > maxMaxAge {
		return nil, fmt.Errorf("maxAge %s must be positive and at most %s", cfg.MaxAge.Duration, maxMaxAge)
	}
	e := &expiration{maxAge: cfg.MaxAge.Duration, now: time.Now, offset: randomOffset}
	if cfg.Jitter != nil {
		if cfg.Jitter.Duration < 0 || cfg.Jitter.Duration > cfg.MaxAge.Duration {
			return nil, fmt.Errorf("jitter %s must not be negative nor greater than maxAge (%s)", cfg.Jitter.Duration, cfg.MaxAge.Duration)
		}
		e.jitter = cfg.Jitter.Duration
	}
	return e, nil
}

func randomOffset(jitter time.Duration) time.Duration {
	return time.Duration(rand.Int64N(2*int64(jitter)+1)) - jitter
}

// age is a new connection's age at expiry: maxAge ± jitter, at least a millisecond.
func (e *expiration) age() time.Duration {
	age := e.maxAge
	if e.jitter > 0 {
		age += e.offset(e.jitter)
	}
	return max(age, time.Millisecond)
}

// OnOpen sets the connection's expiry.
func (e *expiration) OnOpen(c *filter.Conn) { c.ExpireAt(e.now().Add(e.age())) }

// Keys: the filter reads no request.
func (e *expiration) Keys() []int16 { return nil }

// OnRequest is never called (Keys is empty).
func (e *expiration) OnRequest(context.Context, *filter.Exchange) error { return nil }

// OnResponse is never called (Keys is empty).
func (e *expiration) OnResponse(context.Context, *filter.Exchange) error { return nil }
