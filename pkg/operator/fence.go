package operator

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrNotLeading is what the controllers' writes fail with while the write fence is shut.
var ErrNotLeading = errors.New("not writing: this replica does not hold the leader Lease, or has not renewed it recently enough to be sure it still does")

// writeFence lets the controllers' writes through only while this replica surely holds the leader
// Lease. Kubernetes has no fencing tokens: the API server accepts a write from a replica that lost
// its Lease without knowing it (paused, cut off, slow), and client-go's elector only cancels the
// leader's work once its renew deadline has passed, after a standby may already lead. So each
// replica fences itself by its own clock: a write may start only within window of the start of
// the last successful renewal. A standby takes over no earlier than the Lease's duration after
// that renewal (it must see the Lease unchanged for that long), so the gap between window and the
// Lease's duration is what a write already on the wire has to land in. The fence also shuts, for
// good, before the Lease is released, once the writes in flight have landed, so a standby that
// takes a released Lease at once never races the old leader's last writes. What no fence on the
// client can cover is a process paused between the check and the write leaving it, for longer than
// that gap.
type writeFence struct {
	window time.Duration
	now    func() time.Time

	mu       sync.Mutex
	renewed  time.Time // start of the last successful renewal; zero before the first
	shut     bool
	inflight sync.WaitGroup
}

func newWriteFence(window time.Duration, now func() time.Time) *writeFence {
	return &writeFence{window: window, now: now}
}

// fenceWindow is how long after a renewal started writes may begin: the renew deadline (after
// which client-go gives up leading), but never more than the Lease's duration as the Lease records
// it, in whole seconds.
func fenceWindow(leaseDuration, renewDeadline time.Duration) time.Duration {
	return min(renewDeadline, leaseDuration.Truncate(time.Second))
}

// enter reports whether a write may start now; each true must be followed by leave.
func (f *writeFence) enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shut || f.renewed.IsZero() || f.now().Sub(f.renewed) >= f.window {
		return false
	}
	f.inflight.Add(1)
	return true
}

func (f *writeFence) leave() { f.inflight.Done() }

// renewedAt records a successful renewal of the Lease that started at start.
func (f *writeFence) renewedAt(start time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if start.After(f.renewed) {
		f.renewed = start
	}
}

// shutDown refuses every later write and waits, at most timeout, for the writes in flight.
func (f *writeFence) shutDown(timeout time.Duration) {
	f.mu.Lock()
	f.shut = true
	f.mu.Unlock()
	done := make(chan struct{})
	go func() {
		f.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
	}
}

// wrap returns a copy of cfg whose writes pass the fence; reads and watches pass freely, so a
// standby's informers stay warm.
func (f *writeFence) wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(next http.RoundTripper) http.RoundTripper { return &fencedTransport{fence: f, next: next} })
	return out
}

type fencedTransport struct {
	fence *writeFence
	next  http.RoundTripper
}

func (t *fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return t.next.RoundTrip(req)
	}
	if !t.fence.enter() {
		return nil, ErrNotLeading
	}
	// The response's headers come after the API server has applied the write, so leaving here
	// (not when the body is read) is when the write has landed.
	defer t.fence.leave()
	return t.next.RoundTrip(req)
}

// fencedLock is the leader Lease lock that tells the fence when this replica renewed, and shuts
// the fence before releasing the Lease.
type fencedLock struct {
	resourcelock.Interface
	fence *writeFence
	// drain bounds how long a release waits for the writes in flight.
	drain time.Duration
}

func (l *fencedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ler, func() error { return l.Interface.Create(ctx, ler) })
}

func (l *fencedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ler, func() error { return l.Interface.Update(ctx, ler) })
}

func (l *fencedLock) write(ler resourcelock.LeaderElectionRecord, write func() error) error {
	if ler.HolderIdentity != l.Identity() {
		// Releasing (client-go writes an empty holder): no write of ours may land after a
		// standby takes the free Lease.
		l.fence.shutDown(l.drain)
		return write()
	}
	start := l.fence.now()
	if err := write(); err != nil {
		return err
	}
	l.fence.renewedAt(start)
	return nil
}
