package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// A sync that panics is recovered, counted and retried with backoff, and the other keys are
// processed all along.
func TestPanickingSyncIsRecoveredAndRetried(t *testing.T) {
	var mu sync.Mutex
	badCalls, good := 0, map[string]bool{}
	c := New("panics-test", func(ctx context.Context, key cache.ObjectName) error {
		mu.Lock()
		defer mu.Unlock()
		if key.Name == "bad" {
			badCalls++
			var m map[string]int
			m["boom"]++ //nolint:staticcheck // a nil-map write: a real runtime panic, on purpose
		}
		good[key.Name] = true
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx, 1); close(done) }()
	c.Enqueue(cache.NewObjectName("ns", "bad"))
	c.Enqueue(cache.NewObjectName("ns", "a"))
	c.Enqueue(cache.NewObjectName("ns", "b"))
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return good["a"] && good["b"] && badCalls >= 3, nil
	})
	if err != nil {
		t.Fatalf("bad calls %d, good %v: %v", badCalls, good, err)
	}
	c.Enqueue(cache.NewObjectName("ns", "c")) // still processing after panics
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return good["c"], nil
	}); err != nil {
		t.Fatal("a key added after the panics was not processed")
	}
	cancel()
	<-done
	if got := testutil.ToFloat64(reconcilePanics.WithLabelValues("panics-test")); got < 3 {
		t.Errorf("kafkalink_reconcile_panics_total = %v, want >= 3", got)
	}
}

func TestMergeConditions(t *testing.T) {
	then, now := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(2000, 0))
	old := []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionTrue, LastTransitionTime: then},
		{Type: "Accepted", Status: metav1.ConditionFalse, LastTransitionTime: then},
		{Type: "Gone", Status: metav1.ConditionTrue, LastTransitionTime: then},
	}
	got := MergeConditions(old, []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Other"},
		{Type: "Accepted", Status: metav1.ConditionTrue},
		{Type: "New", Status: metav1.ConditionFalse},
	}, now)
	want := map[string]metav1.Time{"Ready": then, "Accepted": now, "New": now}
	if len(got) != 3 {
		t.Fatalf("got %d conditions", len(got))
	}
	for _, c := range got {
		if !c.LastTransitionTime.Equal(&metav1.Time{Time: want[c.Type].Time}) {
			t.Errorf("%s: lastTransitionTime %v, want %v", c.Type, c.LastTransitionTime, want[c.Type])
		}
	}
}

func TestTombstonesAndIndexes(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}}
	_ = idx.Add(obj)
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: obj}
	if Unwrap(tomb) != any(obj) || Unwrap(obj) != any(obj) {
		t.Error("Unwrap")
	}
	if keys := KeyOf(tomb); len(keys) != 1 || keys[0] != cache.NewObjectName("ns", "x") {
		t.Errorf("KeyOf(tombstone) = %v", keys)
	}
	if keys := KeysByIndex(idx, cache.NamespaceIndex, "ns"); len(keys) != 1 || keys[0].Name != "x" {
		t.Errorf("KeysByIndex = %v", keys)
	}
	if got := ByIndex[*metav1.PartialObjectMetadata](idx, cache.NamespaceIndex, "ns"); len(got) != 1 || got[0] != obj {
		t.Errorf("ByIndex = %v", got)
	}
	if got := ByIndex[*metav1.PartialObjectMetadata](idx, "no-such-index", "ns"); len(got) != 0 {
		t.Errorf("ByIndex on a missing index = %v", got)
	}
	if got := KeysByIndex(nil, cache.NamespaceIndex, "ns"); len(got) != 0 {
		t.Errorf("KeysByIndex(nil) = %v", got)
	}
}
