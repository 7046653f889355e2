package member

import (
	"context"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// NotContacted is the status message of an item this process wants in its member but has not
// delivered yet.
const NotContacted = "not contacted yet"

// Ledger is the bookkeeping of a controller that delivers objects to members. Its unit is an
// item: one object's worth of work in one member, named "<namespace>/<owner>/<name>" (ItemOf),
// where the owner is the central object the controller reconciles (a KafkaConnection, a
// KafkaGateway) and name tells its members apart. Per item it holds what the member must hold
// (its Spec), the last outcome of delivering it (its Result), and whether it was removed since it
// was last wanted. It puts an item in its member's queue when its spec changes and releases the
// member when the item no longer refers to it. Its handler, each member's worker, runs the
// controller's Deliver and records the outcome; a changed outcome enqueues the owner, whose sync
// (the only writer of the owner's status) reports it through Entry.
//
// The controller keeps what is its own: what its objects are (Spec.Object), how Deliver writes
// them to a member, and how an Entry shows in status.
type Ledger[T any] struct {
	queues  queues
	deliver Deliver[T]
	owners  func(cache.ObjectName)

	mu      sync.Mutex
	specs   map[string]Spec[T]
	results map[string]Result
	removed map[string]bool // removed (or abandoned) since the item was last wanted
}

// Spec is what one item must be in its member.
type Spec[T any] struct {
	// Member is the member the item goes to.
	Member Ref
	// Name names the member in status messages: "member <Name>: <what went wrong>".
	Name string
	// Remove: the item's objects must go from the member.
	Remove bool
	// Version changes when what the member must hold changes: a spec whose Member, Remove and
	// Version are those of the item's last spec is not queued again.
	Version string
	// Object is the controller's own description of what the member holds.
	Object T
}

// Result is the last outcome of an item's delivery.
type Result struct {
	// Reachable: the member's API server answered (set by the ledger from Deliver's error).
	Reachable bool
	// Synced: the member holds what the spec says.
	Synced bool
	// Removed: the spec is a removal and the item's objects are gone. Once recorded while the
	// spec is still a removal, the item is released and marked removed.
	Removed bool
	// Message says what happened, for status; the ledger writes it when Deliver fails.
	Message string
	// At and Applied are the controller's to use and carry over from the last result: when the
	// item was last written, and the Version last written.
	At      metav1.Time
	Applied string
}

// changed reports whether a result reads differently in status from r.
func (r Result) changed(next Result) bool {
	return r.Reachable != next.Reachable || r.Synced != next.Synced || r.Removed != next.Removed || r.Message != next.Message
}

// Deliver makes an item's member hold what its spec says and returns the outcome; last is the
// item's previous outcome (zero when there is none). An error retries the item with backoff.
type Deliver[T any] func(ctx context.Context, c *Cluster, item string, spec Spec[T], last Result) (Result, error)

// Entry is what a ledger knows of an item, for its owner's status.
type Entry struct {
	// Removed: the item was removed (or abandoned) since it was last wanted.
	Removed bool
	// Delivering: the item has a spec, so this process delivers it.
	Delivering bool
	// Contacted: Result is the outcome of a delivery.
	Contacted bool
	Result    Result
}

// queues is what a ledger needs of a Registry.
type queues interface {
	Enqueue(ref Ref, item string)
	Release(ref Ref, item string)
}

// NewLedger makes a ledger and the registry of its members, whose handler is the ledger's
// (cfg.Handle is replaced); owners enqueues an owner whose items' outcomes changed.
func NewLedger[T any](ctx context.Context, cfg Config, deliver Deliver[T], owners func(cache.ObjectName)) *Ledger[T] {
	l := newLedger(nil, deliver, owners)
	cfg.Handle = l.handle
	l.queues = NewRegistry(ctx, cfg)
	return l
}

func newLedger[T any](q queues, deliver Deliver[T], owners func(cache.ObjectName)) *Ledger[T] {
	return &Ledger[T]{queues: q, deliver: deliver, owners: owners,
		specs: map[string]Spec[T]{}, results: map[string]Result{}, removed: map[string]bool{}}
}

// ItemOf names an owner's item: <namespace>/<owner>/<name>.
func ItemOf(owner cache.ObjectName, name string) string {
	return owner.Namespace + "/" + owner.Name + "/" + name
}

// ownerOf is the owner of an item named by ItemOf.
func ownerOf(item string) cache.ObjectName {
	ns, rest, _ := strings.Cut(item, "/")
	name, _, _ := strings.Cut(rest, "/")
	return cache.ObjectName{Namespace: ns, Name: name}
}

// Want records what a wanted item must be and queues it when that changed (or it was never
// queued); the item is no longer removed.
func (l *Ledger[T]) Want(item string, spec Spec[T]) {
	l.mu.Lock()
	delete(l.removed, item)
	l.mu.Unlock()
	l.set(item, spec)
}

// Hold records that an item is wanted with nothing new to deliver: its member keeps what it
// holds (and the item's spec, if any, stays), and the item is no longer removed.
func (l *Ledger[T]) Hold(item string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.removed, item)
}

// Remove records that an item's objects must go (spec becomes a removal) and queues it when
// that changed. gone reports that they went already: the item was removed since it was last
// wanted, and nothing is recorded.
func (l *Ledger[T]) Remove(item string, spec Spec[T]) (gone bool) {
	l.mu.Lock()
	gone = l.removed[item]
	l.mu.Unlock()
	if !gone {
		spec.Remove = true
		l.set(item, spec)
	}
	return gone
}

// Abandon forgets an item as though its objects were removed, leaving them in the member (for a
// member that will not come back).
func (l *Ledger[T]) Abandon(item string) { l.release(item, true) }

// Forget drops everything known of an owner's items (the owner no longer exists).
func (l *Ledger[T]) Forget(owner cache.ObjectName) {
	prefix := ItemOf(owner, "")
	l.mu.Lock()
	var items []string
	for item := range l.specs {
		if strings.HasPrefix(item, prefix) {
			items = append(items, item)
		}
	}
	for item := range l.removed {
		if strings.HasPrefix(item, prefix) {
			delete(l.removed, item)
		}
	}
	l.mu.Unlock()
	for _, item := range items {
		l.release(item, false)
	}
}

// Entry is what the ledger knows of an item.
func (l *Ledger[T]) Entry(item string) Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	res, contacted := l.results[item]
	_, delivering := l.specs[item]
	return Entry{Removed: l.removed[item], Delivering: delivering, Contacted: contacted, Result: res}
}

// set stores an item's spec and queues it when it changed (or was never queued); a spec that
// moved to another member releases the old one.
func (l *Ledger[T]) set(item string, spec Spec[T]) {
	l.mu.Lock()
	old, had := l.specs[item]
	l.specs[item] = spec
	l.mu.Unlock()
	if had && old.Member == spec.Member && old.Version == spec.Version && old.Remove == spec.Remove {
		return
	}
	if had && old.Member != spec.Member {
		l.queues.Release(old.Member, item)
	}
	l.queues.Enqueue(spec.Member, item)
}

// release forgets an item's spec and outcome and lets its member go (closed when no other item
// needs it); removed marks the item as removed, so its owner's later syncs skip it.
func (l *Ledger[T]) release(item string, removed bool) {
	l.mu.Lock()
	spec, ok := l.specs[item]
	delete(l.specs, item)
	delete(l.results, item)
	if removed {
		l.removed[item] = true
	}
	l.mu.Unlock()
	if ok {
		l.queues.Release(spec.Member, item)
	}
}

// handle is the members' handler: it delivers an item whose spec names this member and records
// the outcome.
func (l *Ledger[T]) handle(ctx context.Context, c *Cluster, item string) error {
	l.mu.Lock()
	spec, ok := l.specs[item]
	last := l.results[item]
	l.mu.Unlock()
	if !ok || spec.Member != c.Ref() {
		return nil
	}
	res, err := l.deliver(ctx, c, item, spec, last)
	res.Reachable = !Unreachable(err)
	if err != nil {
		res.Message = fmt.Sprintf("member %s: %s", spec.Name, Describe(err))
	}
	l.record(item, res)
	return err
}

// record stores an item's outcome and enqueues its owner when the outcome reads differently. An
// item removed while its spec is still a removal is released and marked removed.
func (l *Ledger[T]) record(item string, res Result) {
	l.mu.Lock()
	old, had := l.results[item]
	l.results[item] = res
	// Removed, and no one wanted the objects back since.
	spec, ok := l.specs[item]
	removed := res.Removed && (!ok || spec.Remove)
	l.mu.Unlock()
	if removed {
		l.release(item, true)
	}
	if !had || old.changed(res) {
		l.owners(ownerOf(item))
	}
}
