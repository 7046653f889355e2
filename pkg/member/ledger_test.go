package member

import (
	"context"
	"errors"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// outcome is a test spec's Object: what delivering it returns.
type outcome struct {
	res Result
	err error
}

// ledgerLog records, in order, what a ledger asks of its queues and its owners.
type ledgerLog struct{ events []string }

func (g *ledgerLog) Enqueue(ref Ref, item string) {
	g.events = append(g.events, "enqueue "+ref.Secret+" "+item)
}
func (g *ledgerLog) Release(ref Ref, item string) {
	g.events = append(g.events, "release "+ref.Secret+" "+item)
}
func (g *ledgerLog) owner(o cache.ObjectName) { g.events = append(g.events, "owner "+o.String()) }

var (
	refA = Ref{Namespace: "apps", Secret: "a"}
	refB = Ref{Namespace: "apps", Secret: "b"}
	conn = cache.ObjectName{Namespace: "apps", Name: "orders"}
	item = ItemOf(conn, "a")
)

func spec(ref Ref, version string, res Result, err error) Spec[outcome] {
	return Spec[outcome]{Member: ref, Name: ref.Secret, Version: version, Object: outcome{res: res, err: err}}
}

var (
	current = spec(refA, "v1", Result{Synced: true, Message: "current", At: metav1.Unix(1, 0)}, nil)
	removal = spec(refA, "", Result{Synced: true, Removed: true, Message: "removed"}, nil)
)

// deliverTo runs a member's handler on the item, as the member's worker does.
func deliverTo(l *Ledger[outcome], ref Ref) {
	_ = l.handle(context.Background(), &Cluster{ref: ref}, item)
}

// The ledger queues what changed, releases what no longer refers to a member, records outcomes
// (enqueueing the owner when one reads differently) and keeps removed items out of the way.
func TestLedger(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://10.0.0.1:6443", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}
	for _, tc := range []struct {
		name  string
		steps func(l *Ledger[outcome], log *ledgerLog)
		want  []string
		entry Entry
	}{
		{"a new spec is queued", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Want(item, current)
		}, []string{"enqueue a apps/orders/a"}, Entry{Delivering: true}},
		{"an unchanged spec is not queued again", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Want(item, current)
			l.Want(item, current)
		}, []string{"enqueue a apps/orders/a"}, Entry{Delivering: true}},
		{"a new version is queued", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Want(item, current)
			l.Want(item, spec(refA, "v2", Result{}, nil))
		}, []string{"enqueue a apps/orders/a", "enqueue a apps/orders/a"}, Entry{Delivering: true}},
		{"a spec that moves releases its old member", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Want(item, current)
			l.Want(item, spec(refB, "v1", Result{}, nil))
		}, []string{"enqueue a apps/orders/a", "release a apps/orders/a", "enqueue b apps/orders/a"}, Entry{Delivering: true}},
		{"an outcome enqueues the owner once while it reads the same", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Want(item, current)
			deliverTo(l, refA)
			deliverTo(l, refA)
		}, []string{"enqueue a apps/orders/a", "owner apps/orders"},
			Entry{Delivering: true, Contacted: true, Result: Result{Reachable: true, Synced: true, Message: "current", At: metav1.Unix(1, 0)}}},
		{"a member that does not answer is named in the message", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Want(item, spec(refA, "v1", Result{Synced: true}, refused))
			deliverTo(l, refA)
		}, []string{"enqueue a apps/orders/a", "owner apps/orders"},
			Entry{Delivering: true, Contacted: true, Result: Result{Synced: true, Message: "member a: cannot reach https://10.0.0.1:6443: unreachable"}}},
		{"a member that answers with an error is reachable", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Want(item, spec(refA, "v1", Result{}, ownf("kubeconfig Secret apps/a does not exist")))
			deliverTo(l, refA)
		}, []string{"enqueue a apps/orders/a", "owner apps/orders"},
			Entry{Delivering: true, Contacted: true, Result: Result{Reachable: true, Message: "member a: kubeconfig Secret apps/a does not exist"}}},
		{"another member's worker leaves the item alone", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Want(item, current)
			deliverTo(l, refB)
		}, []string{"enqueue a apps/orders/a"}, Entry{Delivering: true}},
		{"a removal done releases the item, which stays removed", func(l *Ledger[outcome], log *ledgerLog) {
			l.Want(item, current)
			l.Remove(item, removal)
			deliverTo(l, refA)
			if !l.Remove(item, removal) {
				log.events = append(log.events, "removed again")
			}
		}, []string{"enqueue a apps/orders/a", "enqueue a apps/orders/a", "release a apps/orders/a", "owner apps/orders"}, Entry{Removed: true}},
		{"a wanted item is not released by an outcome that says removed", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Want(item, spec(refA, "v1", Result{Removed: true}, nil))
			deliverTo(l, refA)
		}, []string{"enqueue a apps/orders/a", "owner apps/orders"},
			Entry{Delivering: true, Contacted: true, Result: Result{Reachable: true, Removed: true}}},
		{"a removal recorded once the item is wanted again keeps it", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Remove(item, removal)
			l.Want(item, current)
			l.record(item, Result{Reachable: true, Removed: true, Message: "removed"})
		}, []string{"enqueue a apps/orders/a", "enqueue a apps/orders/a", "owner apps/orders"},
			Entry{Delivering: true, Contacted: true, Result: Result{Reachable: true, Removed: true, Message: "removed"}}},
		{"wanted again after its removal, an item is queued anew", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Remove(item, removal)
			deliverTo(l, refA)
			l.Want(item, current)
		}, []string{"enqueue a apps/orders/a", "release a apps/orders/a", "owner apps/orders", "enqueue a apps/orders/a"}, Entry{Delivering: true}},
		{"held after its removal, an item is no longer removed and not queued", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Remove(item, removal)
			deliverTo(l, refA)
			l.Hold(item)
		}, []string{"enqueue a apps/orders/a", "release a apps/orders/a", "owner apps/orders"}, Entry{}},
		{"Hold keeps the item's spec", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Want(item, current)
			l.Hold(item)
		}, []string{"enqueue a apps/orders/a"}, Entry{Delivering: true}},
		{"an abandoned item is released as removed", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Want(item, current)
			deliverTo(l, refA)
			l.Abandon(item)
		}, []string{"enqueue a apps/orders/a", "owner apps/orders", "release a apps/orders/a"}, Entry{Removed: true}},
		{"Forget drops the owner's items, removed ones too, and no other owner's", func(l *Ledger[outcome], _ *ledgerLog) {
			l.Want(item, current)
			l.Want(ItemOf(conn, "b"), spec(refB, "v1", Result{}, nil))
			l.Abandon(ItemOf(conn, "b"))
			l.Want(ItemOf(cache.ObjectName{Namespace: "apps", Name: "orders-eu"}, "a"), current)
			l.Forget(conn)
			if l.Entry(ItemOf(conn, "b")).Removed {
				t.Error("Forget left an item removed")
			}
		}, []string{"enqueue a apps/orders/a", "enqueue b apps/orders/b", "release b apps/orders/b", "enqueue a apps/orders-eu/a", "release a apps/orders/a"}, Entry{}},
	} {
		log := &ledgerLog{}
		l := newLedger(log, func(_ context.Context, _ *Cluster, _ string, s Spec[outcome], _ Result) (Result, error) {
			return s.Object.res, s.Object.err
		}, log.owner)
		tc.steps(l, log)
		if !slices.Equal(log.events, tc.want) {
			t.Errorf("%s: did\n  %s\nwant\n  %s", tc.name, strings.Join(log.events, "\n  "), strings.Join(tc.want, "\n  "))
		}
		if got := l.Entry(item); got != tc.entry {
			t.Errorf("%s: entry %+v, want %+v", tc.name, got, tc.entry)
		}
	}
}

// Deliver gets the item's last outcome, so a controller can carry what it keeps (At, Applied).
func TestLedgerDeliverGetsLastResult(t *testing.T) {
	var lasts []Result
	l := newLedger(&ledgerLog{}, func(_ context.Context, _ *Cluster, _ string, _ Spec[outcome], last Result) (Result, error) {
		lasts = append(lasts, last)
		return Result{Applied: "v1", Message: "ok"}, nil
	}, func(cache.ObjectName) {})
	l.Want(item, current)
	deliverTo(l, refA)
	deliverTo(l, refA)
	want := []Result{{}, {Reachable: true, Applied: "v1", Message: "ok"}}
	if !slices.Equal(lasts, want) {
		t.Errorf("last results %+v, want %+v", lasts, want)
	}
}

func TestItemOf(t *testing.T) {
	if got := ItemOf(conn, "member-a"); got != "apps/orders/member-a" {
		t.Errorf("ItemOf = %q", got)
	}
	if got := ownerOf("apps/orders/member-a"); got != conn {
		t.Errorf("ownerOf = %v, want %v", got, conn)
	}
}

// queueNames records the names of the work queues made once it is the metrics provider.
type queueNames struct {
	mu    sync.Mutex
	names []string
}

var testQueueNames = &queueNames{}

type noMetric struct{}

func (noMetric) Inc()            {}
func (noMetric) Dec()            {}
func (noMetric) Set(float64)     {}
func (noMetric) Observe(float64) {}

func (q *queueNames) NewDepthMetric(name string) workqueue.GaugeMetric {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.names = append(q.names, name)
	return noMetric{}
}
func (*queueNames) NewAddsMetric(string) workqueue.CounterMetric           { return noMetric{} }
func (*queueNames) NewLatencyMetric(string) workqueue.HistogramMetric      { return noMetric{} }
func (*queueNames) NewWorkDurationMetric(string) workqueue.HistogramMetric { return noMetric{} }
func (*queueNames) NewRetriesMetric(string) workqueue.CounterMetric        { return noMetric{} }
func (*queueNames) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}
func (*queueNames) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}

// A ledger's members run its handler on their own workers, and their queues are named, so the
// work-queue metrics report them ("member" when the configuration names none).
func TestLedgerMembersDeliverOnNamedQueues(t *testing.T) {
	names := testQueueNames
	workqueue.SetProvider(names) // once a process: the same provider every run
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	owners := make(chan cache.ObjectName, 10)
	deliver := func(context.Context, *Cluster, string, Spec[outcome], Result) (Result, error) {
		return Result{Synced: true}, nil
	}
	NewLedger(ctx, Config{Name: "kafkaconnection-member", Central: fake.NewClientset()}, deliver,
		func(o cache.ObjectName) { owners <- o }).Want(item, current)
	NewLedger(ctx, Config{Central: fake.NewClientset()}, deliver,
		func(o cache.ObjectName) { owners <- o }).Want(item, current)
	for range 2 {
		select {
		case o := <-owners:
			if o != conn {
				t.Errorf("owner %v enqueued, want %v", o, conn)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the item was not delivered")
		}
	}
	names.mu.Lock()
	defer names.mu.Unlock()
	if !slices.Contains(names.names, "kafkaconnection-member") || !slices.Contains(names.names, "member") {
		t.Errorf("queues named %q, want kafkaconnection-member and member", names.names)
	}
}
