package filter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// Budget is the process-wide memory budget of filter buffers: every byte a filter decompresses
// or re-encodes, on any connection, is taken from it first, so that many connections working
// at once cannot multiply what one may use.
type Budget struct {
	sem  *semaphore.Weighted
	size int64
}

// NewBudget makes a budget of size bytes.
func NewBudget(size int64) *Budget { return &Budget{sem: semaphore.NewWeighted(size), size: size} }

// acquire takes n bytes, waiting up to budgetWait for them. More than a quarter of the budget
// at once is refused as too large without waiting: a waiter holds up every request behind it.
func (b *Budget) acquire(ctx context.Context, n int) error {
	if int64(n) > b.size/4 {
		return fmt.Errorf("%w: %d bytes at once, more than a quarter of limits.filterMemoryBytes (%d)", records.ErrTooLarge, n, b.size)
	}
	if b.sem.TryAcquire(int64(n)) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, budgetWait)
	defer cancel()
	if b.sem.Acquire(ctx, int64(n)) != nil {
		return ErrBusy
	}
	return nil
}

// budgetWait is how long a request waits for its share of a spent budget before it is refused
// with a retriable error: other connections give theirs back within milliseconds.
const budgetWait = 250 * time.Millisecond

// ErrBusy is returned when the process-wide budget has no room now: the client retries.
var ErrBusy = errors.New("the proxy's filter memory is in use by other requests; retry")

// Limits are what the chain needs of the configuration's limits.
type Limits struct {
	// MaxFrame is the largest frame the filters decode or write (maxFilteredFrameBytes);
	// MaxShare the most one request or response may decompress (maxFrameBytes).
	MaxFrame, MaxShare, MaxBatch, Ratio int
	Budget                              *Budget
}

// LimitsFrom reads the limits of a (defaulted) configuration, with the process's budget.
func LimitsFrom(l config.Limits, b *Budget) Limits {
	return Limits{MaxFrame: int(l.MaxFilteredFrameBytes), MaxShare: int(l.MaxFrameBytes), MaxBatch: int(l.MaxBatchBytes), Ratio: int(l.DecompressionRatio), Budget: b}
}

// Allowance is one request's or one response's share of the budget: at most
// min(MaxShare, max(Ratio × frame size, DecompressionFloor)) bytes, taken from the budget as
// used and given back when the request or response has been handled. It implements
// records.Allowance; filters that work on partitions in parallel share one, so it locks.
type Allowance struct {
	lim  Limits
	ctx  context.Context
	mu   sync.Mutex
	left int
	held int64
	// emitLeft is what filters may still write for the broker (Emit): as much as the share.
	emitLeft int
}

// NewAllowance is the share of a frame of frameSize bytes.
func NewAllowance(ctx context.Context, lim Limits, frameSize int) *Allowance {
	share := lim.MaxShare // when Ratio × frameSize would exceed it, or overflow
	if lim.Ratio > 0 && frameSize <= lim.MaxShare/lim.Ratio {
		share = min(lim.MaxShare, max(lim.Ratio*frameSize, config.DecompressionFloor))
	}
	return &Allowance{lim: lim, ctx: ctx, left: share, emitLeft: share}
}

// Emit counts n bytes a filter wrote that the broker will get (encrypted records): at most the
// share in all, so what a client's bytes become upstream is bounded as what they decompress
// to is. Encryption adds some 130 bytes to every record, so a request of tiny compressed
// records would otherwise send thousands of times its size. Over it, the share counts as spent.
func (a *Allowance) Emit(n int) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if n > a.emitLeft {
		return fmt.Errorf("%w: the filters' output for the broker may be %d bytes more, not %d", records.ErrShareSpent, a.emitLeft, n)
	}
	a.emitLeft -= n
	return nil
}

// A nil *Allowance (an Exchange a test made by hand) bounds only batches, to
// records.DefaultMaxBatch.

// MaxBatch implements records.Allowance.
func (a *Allowance) MaxBatch() int {
	if a == nil {
		return records.DefaultMaxBatch
	}
	return a.lim.MaxBatch
}

// Left implements records.Allowance.
func (a *Allowance) Left() int {
	if a == nil {
		return math.MaxInt
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.left
}

// Take implements records.Allowance: n more bytes, from the share and then from the budget.
func (a *Allowance) Take(n int) error {
	if a == nil || n <= 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if n > a.left {
		return fmt.Errorf("%w: %d bytes were left, not %d", records.ErrShareSpent, a.left, n)
	}
	if err := a.hold(n); err != nil {
		return err
	}
	a.left -= n
	return nil
}

// Reserve implements records.Allowance: n bytes of working memory from the budget, not the
// share, given back with the rest when the request or response has been handled.
func (a *Allowance) Reserve(n int) error {
	if a == nil || n <= 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hold(n)
}

// hold takes n bytes from the budget for this request or response, which may hold at most a
// quarter of the budget in all (its share and its working memory): one request never takes
// every other's room. Over that, the request's share counts as spent. a.mu is held.
func (a *Allowance) hold(n int) error {
	if a.lim.Budget == nil {
		return nil
	}
	if a.held+int64(n) > a.lim.Budget.size/4 {
		return fmt.Errorf("%w: a request or response holds at most a quarter of limits.filterMemoryBytes (%d), and holds %d", records.ErrShareSpent, a.lim.Budget.size, a.held)
	}
	if err := a.lim.Budget.acquire(a.ctx, n); err != nil {
		return err
	}
	a.held += int64(n)
	return nil
}

// Give implements records.Allowance: n bytes taken and not used.
func (a *Allowance) Give(n int) {
	if a == nil || n <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n = int(min(int64(n), a.held))
	a.left += n
	a.held -= int64(n)
	if a.lim.Budget != nil {
		a.lim.Budget.sem.Release(int64(n))
	}
}

// Hold takes n bytes of the process budget, not of the share, for working memory that lives
// only while a filter looks at one record (a JSON document built to check it against a schema);
// done gives them back. The wait and the error are Take's.
func (a *Allowance) Hold(n int) (done func(), err error) {
	if a == nil || a.lim.Budget == nil || n <= 0 {
		return func() {}, nil
	}
	if err := a.lim.Budget.acquire(a.ctx, n); err != nil {
		return nil, err
	}
	return func() { a.lim.Budget.sem.Release(int64(n)) }, nil
}

// release gives everything back to the budget, when the request or response is handled.
func (a *Allowance) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lim.Budget != nil && a.held > 0 {
		a.lim.Budget.sem.Release(a.held)
	}
	a.held = 0
}
