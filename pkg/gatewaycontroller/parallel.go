package gatewaycontroller

import (
	"context"
	"sync"
)

// writesInFlight bounds the API requests one sync has in flight when it writes many independent
// objects (the per-host Services, Routes and TLSRoutes, and route status). A gateway of 1,000
// routes of 10 brokers writes 11,000 Services and 1,000 route status: one at a time, each waits
// for the API server's round trip (6 ms on an idle 2-core host, 20 ms under load), which is most
// of a minute and more, while the API server's CPU stays partly idle. The client-side QPS limit
// (--kube-api-qps) still applies on top.
const writesInFlight = 16

// inParallel calls fn(ctx, i) for i in [0, n) with at most limit calls running at once, and
// returns the first error. Once a call fails no new call starts; those running finish (their
// ctx is cancelled) before it returns, so nothing outlives the sync.
func inParallel(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	if limit < 1 {
		limit = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	slots := make(chan struct{}, limit)
	started := 0
	for i := range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		started++
		wg.Go(func() {
			defer func() { <-slots }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { firstErr = err; cancel() })
			}
		})
	}
	wg.Wait()
	if firstErr == nil && started < n {
		// The caller's context ended before every call started.
		return ctx.Err()
	}
	return firstErr
}
