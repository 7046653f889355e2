package oauthbearer

import (
	"testing"
	"time"
)

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
