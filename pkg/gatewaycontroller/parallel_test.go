package gatewaycontroller

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hangGuard bounds the waits below; it guards against a hang and is not a performance assertion.
const hangGuard = 30 * time.Second

func TestInParallelRunsUpToTheLimitAtOnce(t *testing.T) {
	const n, limit = 50, 8
	var (
		mu       sync.Mutex
		running  int
		most     int
		calls    = make([]int, n)
		allEnter = make(chan struct{})
		gaveUp   bool
	)
	err := inParallel(context.Background(), n, limit, func(_ context.Context, i int) error {
		mu.Lock()
		calls[i]++
		running++
		most = max(most, running)
		if running == limit && allEnter != nil || gaveUp && allEnter != nil {
			close(allEnter) // the first limit calls are all running: let them go
			allEnter = nil
		}
		wait := allEnter
		mu.Unlock()
		if wait != nil {
			// A sequential writer never gets here with a second call running: it would hang.
			select {
			case <-wait:
			case <-time.After(hangGuard):
				t.Errorf("call %d: never %d calls at once", i, limit)
				mu.Lock()
				gaveUp = true // the next call lets every waiting one go
				mu.Unlock()
			}
		}
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if most != limit {
		t.Errorf("at most %d calls at once, want %d", most, limit)
	}
	for i, c := range calls {
		if c != 1 {
			t.Errorf("item %d called %d times, want once", i, c)
		}
	}
}

func TestInParallelStopsStartingCallsAfterAnError(t *testing.T) {
	const n, limit, failing = 100, 4, 10
	boom := errors.New("boom")
	var started atomic.Int32
	err := inParallel(context.Background(), n, limit, func(ctx context.Context, i int) error {
		started.Add(1)
		if i == failing {
			return boom
		}
		if i > failing {
			// Started before the failure was seen: the failure cancels it.
			select {
			case <-ctx.Done():
			case <-time.After(hangGuard):
				t.Errorf("call %d: its context was not cancelled after the failure", i)
			}
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	// Calls after the failing one each hold a slot until cancelled, so at most limit-1 of them
	// start before the failure is seen.
	if got := started.Load(); got > failing+limit {
		t.Errorf("%d calls started, want at most %d", got, failing+limit)
	}
}

func TestInParallelReportsACancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := inParallel(ctx, 5, 2, func(context.Context, int) error { calls++; return nil })
	if !errors.Is(err, context.Canceled) || calls != 0 {
		t.Errorf("err = %v after %d calls, want context.Canceled after none", err, calls)
	}
}

func TestInParallelOfNothing(t *testing.T) {
	if err := inParallel(context.Background(), 0, writesInFlight, func(context.Context, int) error {
		t.Error("called with no items")
		return nil
	}); err != nil {
		t.Error(err)
	}
}
