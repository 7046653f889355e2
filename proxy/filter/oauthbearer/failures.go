package oauthbearer

import (
	"math/rand/v2"
	"sync"
	"time"
)

// The delay before a failed token is validated again, as Kroxylicious' authenticate backoff: no
// delay the first time, then 500 ms doubling with each failure, with jitter, at most 5 s (and at
// most authenticateBackOffMaxMs).
const (
	firstDelay = 500 * time.Millisecond
	maxDelay   = 5 * time.Second
)

// failures remembers recently failed SaslAuthenticate payloads (by SHA-256) for backOffMax, at
// most size of them: a client that retries a bad token, or guesses, is slowed down.
type failures struct {
	mu         sync.Mutex
	size       int
	backOffMax time.Duration
	entries    map[[32]byte]failure
}

type failure struct {
	count int
	last  time.Time
}

func newFailures(size int, backOffMax time.Duration) *failures {
	return &failures{size: size, backOffMax: backOffMax, entries: map[[32]byte]failure{}}
}

// delay is how long to wait before validating the payload sum.
func (f *failures) delay(sum [32]byte, now time.Time) time.Duration {
	if f.backOffMax == 0 {
		return 0
	}
	f.mu.Lock()
	e, ok := f.entries[sum]
	if ok && now.Sub(e.last) >= f.backOffMax {
		delete(f.entries, sum)
		ok = false
	}
	f.mu.Unlock()
	if !ok {
		return 0
	}
	return backoff(e.count, f.backOffMax)
}

// backoff is the delay after count failures: firstDelay·2^(count-1) plus up to as much again of
// jitter, at most maxDelay and limit.
func backoff(count int, limit time.Duration) time.Duration {
	if count <= 0 {
		return 0
	}
	d := firstDelay << min(count-1, 10)
	d += time.Duration(rand.Int64N(int64(d))) / 2 // jitter spreads clients that retry together
	return min(d, maxDelay, limit)
}

func (f *failures) failed(sum [32]byte, now time.Time) {
	if f.backOffMax == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[sum]
	if !ok && len(f.entries) >= f.size {
		f.evict(now)
	}
	f.entries[sum] = failure{count: e.count + 1, last: now}
}

// evict drops the expired entries among a few (map order is arbitrary), or one of them when none
// has expired: the map stays within size at a bounded cost per failure, and losing an entry
// only shortens one client's delay.
func (f *failures) evict(now time.Time) {
	seen := 0
	var victim [32]byte
	for k, e := range f.entries {
		if seen == 0 {
			victim = k
		}
		if now.Sub(e.last) >= f.backOffMax {
			delete(f.entries, k)
		}
		if seen++; seen == evictScan {
			break
		}
	}
	if len(f.entries) >= f.size {
		delete(f.entries, victim)
	}
}

// evictScan is how many entries one eviction looks at.
const evictScan = 16

func (f *failures) succeeded(sum [32]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.entries, sum)
}
