package encryption

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// tuning is how long DEKs serve and how the KMS answers are cached, from the configuration's
// experimental settings under Kroxylicious' names (docs/record-encryption.md, Configuration).
type tuning struct {
	maxEncryptionsPerDEK int64
	dekLifetime          time.Duration // a DEK is replaced at its first use after this
	kekFoundTTL          time.Duration // how long "the KEK exists" is remembered
	kekNotFoundTTL       time.Duration // how long "it does not" is, and a DEK the KMS would not unwrap
	kekCacheSize         int
	dekCacheSize         int
	dekIdleTTL           time.Duration // an unwrapped DEK unused this long is dropped
}

// knob is one experimental setting: its Kroxylicious name, bounds and default (the constants
// the filter had before it was tunable).
type knob struct {
	name          string
	min, max, def int64
	set           func(t *tuning, v int64)
}

const (
	day = 24 * 60 * 60
	// maxGCMEncryptions is NIST SP 800-38D's limit of AES-GCM encryptions under one key with
	// random 96-bit nonces.
	maxGCMEncryptions = 1 << 32
	// maxCacheSize bounds each cache; an unwrapped DEK's AES key schedule and its cache key (the
	// wrapped DEK) take about a kilobyte.
	maxCacheSize = 1 << 16
)

func seconds(v int64) time.Duration { return time.Duration(v) * time.Second }

// knobs are the settings of tuning. Kroxylicious refreshes a DEK or a KEK's existence in the
// background after one time and drops it after a longer one; kafkalink makes the new one at the
// first use after the shorter of the two. The refresh defaults are the constants kafkalink had
// before these settings; the expiries are Kroxylicious' defaults, so that raising only a
// refresh has an effect, up to the expiry.
var knobs = []knob{
	{"maxEncryptionsPerDek", 1, maxGCMEncryptions, maxRecordsPerDEK, func(t *tuning, v int64) { t.maxEncryptionsPerDEK = v }},
	{"encryptionDekRefreshAfterWriteSeconds", 1, 30 * day, int64(maxDEKAge / time.Second), func(t *tuning, v int64) { t.dekLifetime = min(t.dekLifetime, seconds(v)) }},
	{"encryptionDekExpireAfterWriteSeconds", 1, 30 * day, 2 * 60 * 60, func(t *tuning, v int64) { t.dekLifetime = min(t.dekLifetime, seconds(v)) }},
	{"resolvedAliasRefreshAfterWriteSeconds", 1, day, int64(kekCacheTTL / time.Second), func(t *tuning, v int64) { t.kekFoundTTL = min(t.kekFoundTTL, seconds(v)) }},
	{"resolvedAliasExpireAfterWriteSeconds", 1, day, 10 * 60, func(t *tuning, v int64) { t.kekFoundTTL = min(t.kekFoundTTL, seconds(v)) }},
	{"notFoundAliasExpireAfterWriteSeconds", 1, day, int64(kekCacheTTL / time.Second), func(t *tuning, v int64) { t.kekNotFoundTTL = seconds(v) }},
	{"resolvedAliasCacheSize", 1, maxCacheSize, maxKEKCache, func(t *tuning, v int64) { t.kekCacheSize = int(v) }},
	{"decryptedDekCacheSize", 1, maxCacheSize, maxDecryptCache, func(t *tuning, v int64) { t.dekCacheSize = int(v) }},
	{"decryptedDekExpireAfterAccessSeconds", 1, 30 * day, int64(decryptedDEKIdle / time.Second), func(t *tuning, v int64) { t.dekIdleTTL = seconds(v) }},
}

// decryptedDEKIdle is how long an unwrapped DEK that no record used stays cached, by default:
// Kroxylicious' default.
const decryptedDEKIdle = time.Hour

// parseTuning reads the settings of tuning from the configuration's experimental object. Keys
// it does not know are ignored, as Kroxylicious ignores them (other experimental settings are
// read elsewhere). A value is a whole number, or a string holding one (Kroxylicious takes
// both); one out of its bounds is an error naming the setting.
func parseTuning(raw json.RawMessage) (tuning, error) {
	t := tuning{dekLifetime: math.MaxInt64, kekFoundTTL: math.MaxInt64} // lowered by their knobs
	var fields map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &fields); err != nil {
			return tuning{}, fmt.Errorf("experimental: not an object of settings: %w", err)
		}
	}
	for _, k := range knobs {
		v := k.def
		if f, ok := fields[k.name]; ok && string(f) != "null" {
			n, err := wholeNumber(f)
			if err != nil || n < k.min || n > k.max {
				return tuning{}, fmt.Errorf("experimental.%s: %s is not a whole number from %d to %d", k.name, clip(f), k.min, k.max)
			}
			v = n
		}
		k.set(&t, v)
	}
	return t, nil
}

// wholeNumber reads a JSON integer, or a JSON string holding one.
func wholeNumber(f json.RawMessage) (int64, error) {
	var s string
	if err := json.Unmarshal(f, &s); err != nil {
		s = string(bytes.TrimSpace(f))
	}
	return strconv.ParseInt(s, 10, 64)
}

// clip keeps an error message short whatever the configuration holds.
func clip(f json.RawMessage) string {
	if len(f) > 40 {
		return string(f[:40]) + "…"
	}
	return string(f)
}
