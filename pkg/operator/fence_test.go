package operator

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestFenceWindow(t *testing.T) {
	cases := map[string]struct {
		lease, renew, want time.Duration
	}{
		"the renew deadline when shorter than the lease":     {15 * time.Second, 10 * time.Second, 10 * time.Second},
		"the lease in whole seconds when the deadline nears": {2500 * time.Millisecond, 2200 * time.Millisecond, 2 * time.Second},
		"nothing under a second, which Run refuses":          {900 * time.Millisecond, 500 * time.Millisecond, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := fenceWindow(tc.lease, tc.renew); got != tc.want {
				t.Errorf("fenceWindow(%s, %s) = %s, want %s", tc.lease, tc.renew, got, tc.want)
			}
		})
	}
}

func TestWriteFenceEnter(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		renewed bool
		after   time.Duration
		shut    bool
		want    bool
	}{
		"closed before the first renewal":           {false, 0, false, false},
		"open just after a renewal":                 {true, time.Second, false, true},
		"open until just before the window ends":    {true, 10*time.Second - time.Nanosecond, false, true},
		"closed once the window has passed":         {true, 10 * time.Second, false, false},
		"closed after a pause far past the Lease":   {true, time.Minute, false, false},
		"closed for good once shut, though renewed": {true, time.Second, true, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clock := &fakeClock{start}
			f := newWriteFence(10*time.Second, clock.now)
			if tc.renewed {
				f.renewedAt(start)
			}
			if tc.shut {
				f.shutDown(time.Second)
			}
			clock.t = start.Add(tc.after)
			got := f.enter()
			if got {
				f.leave()
			}
			if got != tc.want {
				t.Errorf("enter() = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestFencedTransport sends reads and writes through a fenced configuration to a test server:
// reads always pass, writes only while the fence is open, and none reaches the server after.
func TestFencedTransport(t *testing.T) {
	var writes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writes.Add(1)
		}
	}))
	defer srv.Close()
	clock := &fakeClock{time.Now()}
	f := newWriteFence(10*time.Second, clock.now)
	client, err := rest.HTTPClientFor(f.wrap(&rest.Config{Host: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	send := func(method string) error {
		req, _ := http.NewRequest(method, srv.URL+"/api/v1/namespaces/a/secrets/b", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := send(http.MethodGet); err != nil {
		t.Errorf("a read before leading failed: %v", err)
	}
	if err := send(http.MethodPatch); !errors.Is(err, ErrNotLeading) {
		t.Errorf("a write before leading: %v, want ErrNotLeading", err)
	}
	f.renewedAt(clock.t)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if err := send(m); err != nil {
			t.Errorf("%s while leading failed: %v", m, err)
		}
	}
	clock.t = clock.t.Add(11 * time.Second)
	if err := send(http.MethodPut); !errors.Is(err, ErrNotLeading) {
		t.Errorf("a write after the window: %v, want ErrNotLeading", err)
	}
	if got := writes.Load(); got != 4 {
		t.Errorf("the server saw %d writes, want 4", got)
	}
}

// TestWriteFenceShutDownWaitsForWritesInFlight holds a write in flight and checks that shutDown
// returns only after it landed.
func TestWriteFenceShutDownWaitsForWritesInFlight(t *testing.T) {
	f := newWriteFence(10*time.Second, time.Now)
	f.renewedAt(time.Now())
	if !f.enter() {
		t.Fatal("the fence is shut right after a renewal")
	}
	landed := make(chan struct{})
	go func() {
		time.Sleep(50 * time.Millisecond)
		close(landed)
		f.leave()
	}()
	f.shutDown(time.Minute)
	select {
	case <-landed:
	default:
		t.Fatal("shutDown returned with a write in flight")
	}
	if f.enter() {
		t.Error("a write entered after shutDown")
	}
}

// recordingLock is a resourcelock.Interface that records the holders written.
type recordingLock struct {
	resourcelock.Interface
	identity string
	fail     error
	written  []string
}

func (l *recordingLock) Identity() string { return l.identity }
func (l *recordingLock) Update(_ context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.written = append(l.written, ler.HolderIdentity)
	return l.fail
}
func (l *recordingLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.Update(ctx, ler)
}

func TestFencedLock(t *testing.T) {
	cases := map[string]struct {
		holder   string
		fail     error
		wantOpen bool
	}{
		"a renewal opens the fence":          {"me", nil, true},
		"a failed renewal leaves it shut":    {"me", errors.New("conflict"), false},
		"a release shuts it before it lands": {"", nil, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newWriteFence(10*time.Second, time.Now)
			inner := &recordingLock{identity: "me", fail: tc.fail}
			lock := &fencedLock{Interface: inner, fence: f, drain: time.Second}
			if tc.holder == "" {
				f.renewedAt(time.Now())
			}
			_ = lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: tc.holder})
			open := f.enter()
			if open {
				f.leave()
			}
			if open != tc.wantOpen {
				t.Errorf("fence open = %t, want %t", open, tc.wantOpen)
			}
			if len(inner.written) != 1 {
				t.Errorf("the Lease was written %d times, want 1", len(inner.written))
			}
		})
	}
}
