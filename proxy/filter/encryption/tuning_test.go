package encryption

import (
	"crypto/cipher"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

var defaults = tuning{maxEncryptionsPerDEK: maxRecordsPerDEK, dekLifetime: maxDEKAge, kekFoundTTL: kekCacheTTL, kekNotFoundTTL: kekCacheTTL,
	kekCacheSize: maxKEKCache, dekCacheSize: maxDecryptCache, dekIdleTTL: decryptedDEKIdle}

// TestExperimentalSettings: the settings are read under Kroxylicious' names, as numbers or
// strings; the defaults are the limits the filter had before; keys the filter does not know are
// ignored; a value out of its bounds is an error that names it.
func TestExperimentalSettings(t *testing.T) {
	with := func(f func(*tuning)) tuning { c := defaults; f(&c); return c }
	for name, tc := range map[string]struct {
		experimental string
		want         tuning
		err          string
	}{
		"No experimental object keeps the limits of before": {want: defaults},
		"A null experimental object keeps them too":         {experimental: `null`, want: defaults},
		"Numbers and strings of numbers are both read, as Kroxylicious reads them": {
			experimental: `{"maxEncryptionsPerDek": 5000000, "decryptedDekCacheSize": "100", "decryptedDekExpireAfterAccessSeconds": 60,
				"resolvedAliasCacheSize": 10, "notFoundAliasExpireAfterWriteSeconds": "5"}`,
			want: with(func(t *tuning) {
				t.maxEncryptionsPerDEK, t.dekCacheSize, t.dekIdleTTL, t.kekCacheSize, t.kekNotFoundTTL = 5000000, 100, time.Minute, 10, 5*time.Second
			}),
		},
		"A DEK is replaced after the shorter of its refresh and its expiry": {
			experimental: `{"encryptionDekRefreshAfterWriteSeconds": 7200, "encryptionDekExpireAfterWriteSeconds": 5400}`,
			want:         with(func(t *tuning) { t.dekLifetime = 90 * time.Minute }),
		},
		"Raising only a refresh raises it up to the default expiry": {
			experimental: `{"encryptionDekRefreshAfterWriteSeconds": 86400, "resolvedAliasRefreshAfterWriteSeconds": 300}`,
			want:         with(func(t *tuning) { t.dekLifetime, t.kekFoundTTL = 2*time.Hour, 5*time.Minute }),
		},
		"Settings the filter does not know are ignored, as Kroxylicious ignores them": {
			experimental: `{"recordFormat": "v2", "encryptionBufferMaximumSizeBytes": 10, "nested": {"maxEncryptionsPerDek": 0}}`,
			want:         defaults,
		},
		"A null setting is its default":                            {experimental: `{"maxEncryptionsPerDek": null}`, want: defaults},
		"Zero encryptions per DEK is refused":                      {experimental: `{"maxEncryptionsPerDek": 0}`, err: "experimental.maxEncryptionsPerDek: 0 is not a whole number from 1 to 4294967296"},
		"More encryptions per DEK than AES-GCM allows is refused":  {experimental: `{"maxEncryptionsPerDek": 4294967297}`, err: "experimental.maxEncryptionsPerDek"},
		"A negative lifetime is refused":                           {experimental: `{"encryptionDekExpireAfterWriteSeconds": -1}`, err: "experimental.encryptionDekExpireAfterWriteSeconds"},
		"A DEK lifetime over 30 days is refused":                   {experimental: `{"encryptionDekRefreshAfterWriteSeconds": 2592001}`, err: "experimental.encryptionDekRefreshAfterWriteSeconds"},
		"Remembering a missing KEK for over a day is refused":      {experimental: `{"notFoundAliasExpireAfterWriteSeconds": 86401}`, err: "experimental.notFoundAliasExpireAfterWriteSeconds"},
		"A cache of over 65536 entries is refused":                 {experimental: `{"decryptedDekCacheSize": "65537"}`, err: "experimental.decryptedDekCacheSize"},
		"A fraction is refused":                                    {experimental: `{"resolvedAliasCacheSize": 1.5}`, err: "experimental.resolvedAliasCacheSize: 1.5 is not"},
		"A number too large for any integer is refused":            {experimental: `{"resolvedAliasExpireAfterWriteSeconds": 1e400}`, err: "experimental.resolvedAliasExpireAfterWriteSeconds"},
		"A boolean is refused":                                     {experimental: `{"decryptedDekExpireAfterAccessSeconds": true}`, err: "experimental.decryptedDekExpireAfterAccessSeconds"},
		"Words are refused":                                        {experimental: `{"maxEncryptionsPerDek": "many"}`, err: "experimental.maxEncryptionsPerDek"},
		"Experimental settings that are not an object are refused": {experimental: `[1]`, err: "experimental: not an object"},
	} {
		got, err := parseTuning(json.RawMessage(tc.experimental))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one with %q", name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.err == "" && got != tc.want:
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}

// TestTheFilterFollowsTheExperimentalSettings: the settings reach the DEKs and caches of a
// filter built from a configuration.
func TestTheFilterFollowsTheExperimentalSettings(t *testing.T) {
	e, kms := newTestFilter(t, `,"experimental":{"maxEncryptionsPerDek":4,"encryptionDekRefreshAfterWriteSeconds":60,"resolvedAliasCacheSize":2,
		"resolvedAliasExpireAfterWriteSeconds":600,"resolvedAliasRefreshAfterWriteSeconds":300,"notFoundAliasExpireAfterWriteSeconds":5}`)
	for range 2 {
		encrypted(t, e, "secrets", batch(t, 0, []byte("a"), []byte("b"), []byte("c")))
	}
	if kms.generated != 2 {
		t.Errorf("6 records under maxEncryptionsPerDek 4 made %d DEKs, want 2", kms.generated)
	}
	e.deks["KEK_secrets"].created = time.Now().Add(-time.Minute)
	encrypted(t, e, "secrets", batch(t, 0, []byte("d")))
	if kms.generated != 3 {
		t.Errorf("a DEK a minute old under a 60 s refresh was reused (%d DEKs made)", kms.generated)
	}
	for i := range 5 {
		encrypted(t, e, fmt.Sprintf("topic-%d", i), batch(t, 0, []byte("v")))
	}
	if n := e.kekSeen.len(); n != 2 {
		t.Errorf("%d KEKs remembered, want resolvedAliasCacheSize 2", n)
	}
	found, missing := e.kekSeen.entry(t, "KEK_secrets"), e.kekSeen.entry(t, "KEK_topic-4")
	now := time.Now()
	// Bounds wide enough for any machine, narrow enough to tell the setting from the defaults.
	if missing == nil || missing.until.After(now.Add(5*time.Second)) || missing.until.Before(now.Add(time.Second)) {
		t.Errorf("a missing KEK is remembered until %v, want about 5 s from %v", missing, now)
	}
	if found != nil {
		t.Error("the least recently used KEK was kept over newer ones")
	}
	encrypted(t, e, "secrets", batch(t, 0, []byte("e")))
	if found = e.kekSeen.entry(t, "KEK_secrets"); found == nil || found.until.Before(now.Add(200*time.Second)) || found.until.After(now.Add(301*time.Second)) {
		t.Errorf("an existing KEK is remembered until %v, want about 300 s (the shorter of refresh and expiry) from %v", found, now)
	}
}

// TestUnwrappedDEKsExpireAfterIdle: an unwrapped DEK stays cached for
// decryptedDekExpireAfterAccessSeconds from its last use, each use extending it; one unused that
// long is unwrapped again.
func TestUnwrappedDEKsExpireAfterIdle(t *testing.T) {
	e, kms := newTestFilter(t, `,"experimental":{"decryptedDekExpireAfterAccessSeconds":60}`)
	enc := encrypted(t, e, "secrets", batch(t, 0, []byte("v")))
	fetched(t, e, "secrets", enc)
	if kms.decrypted != 1 || e.opened.len() != 1 {
		t.Fatalf("%d unwraps, %d cached", kms.decrypted, e.opened.len())
	}
	var entry *lruEntry[cipher.AEAD]
	for _, el := range e.opened.items {
		entry = el.Value.(*lruEntry[cipher.AEAD])
	}
	entry.until = time.Now().Add(time.Second) // about to expire: a use extends it
	fetched(t, e, "secrets", enc)
	if kms.decrypted != 1 || entry.until.Before(time.Now().Add(30*time.Second)) {
		t.Errorf("a use of a cached DEK: %d unwraps, kept until %v", kms.decrypted, entry.until)
	}
	entry.until = time.Now().Add(-time.Nanosecond) // unused for the whole idle time
	fetched(t, e, "secrets", enc)
	if kms.decrypted != 2 {
		t.Errorf("an idle DEK was used from the cache (%d unwraps)", kms.decrypted)
	}
}

// entry is the cache's entry of key, nil when there is none.
func (c *lru[V]) entry(t *testing.T, key string) *lruEntry[V] {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		return el.Value.(*lruEntry[V])
	}
	return nil
}

// FuzzExperimental: any experimental object gives settings within their bounds or an error,
// never a panic or a setting out of bounds.
func FuzzExperimental(f *testing.F) {
	f.Add(`{"maxEncryptionsPerDek": 1e400}`)
	f.Add(`{"maxEncryptionsPerDek": "99999999999999999999999999"}`)
	f.Add(`{"encryptionDekExpireAfterWriteSeconds": -9223372036854775808}`)
	f.Add(`{"decryptedDekExpireAfterAccessSeconds": 9223372036854775807}`)
	f.Add(`{"resolvedAliasCacheSize": "0x10"}`)
	f.Add(`{"x": ` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`)
	f.Add(`{"notFoundAliasExpireAfterWriteSeconds": "  5 "}`)
	f.Add(`null`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := parseTuning(json.RawMessage(raw))
		if err != nil {
			return
		}
		if got.maxEncryptionsPerDEK < 1 || got.maxEncryptionsPerDEK > maxGCMEncryptions || got.kekCacheSize < 1 || got.kekCacheSize > maxCacheSize ||
			got.dekCacheSize < 1 || got.dekCacheSize > maxCacheSize {
			t.Fatalf("out of bounds: %+v", got)
		}
		for _, d := range []time.Duration{got.dekLifetime, got.dekIdleTTL} {
			if d < time.Second || d > 30*24*time.Hour {
				t.Fatalf("a lifetime out of bounds: %+v", got)
			}
		}
		for _, d := range []time.Duration{got.kekFoundTTL, got.kekNotFoundTTL} {
			if d < time.Second || d > 24*time.Hour {
				t.Fatalf("a cache time out of bounds: %+v", got)
			}
		}
	})
}
