package bindingcontroller

import (
	"testing"

	"k8s.io/client-go/tools/cache"
)

func TestOwnWrites(t *testing.T) {
	a, b := cache.ObjectName{Namespace: "apps", Name: "a"}, cache.ObjectName{Namespace: "apps", Name: "b"}
	type step struct {
		op           string // wrote, pending, forget
		key          cache.ObjectName
		before, next string // wrote: the versions; pending: the cached version in before
		want         bool
	}
	for name, tc := range map[string]struct {
		steps []step
		left  int // records kept at the end
	}{
		"nothing written: nothing pending": {steps: []step{{op: "pending", key: a, before: "5", want: false}}},
		"the cache still shows the replaced version": {steps: []step{
			{op: "wrote", key: a, before: "5", next: "6"},
			{op: "pending", key: a, before: "5", want: true},
			{op: "pending", key: a, before: "5", want: true},
			{op: "pending", key: b, before: "5", want: false},
		}, left: 1},
		"the cache caught up: the record goes": {steps: []step{
			{op: "wrote", key: a, before: "5", next: "6"},
			{op: "pending", key: a, before: "6", want: false},
			{op: "pending", key: a, before: "5", want: false},
		}},
		"someone else wrote after us: not pending": {steps: []step{
			{op: "wrote", key: a, before: "5", next: "6"},
			{op: "pending", key: a, before: "9", want: false},
		}},
		"a patch that changed nothing brings no event: not pending": {steps: []step{
			{op: "wrote", key: a, before: "5", next: "5"},
			{op: "pending", key: a, before: "5", want: false},
		}},
		"a deleted connection is forgotten": {steps: []step{
			{op: "wrote", key: a, before: "5", next: "6"},
			{op: "forget", key: a},
			{op: "pending", key: a, before: "5", want: false},
		}},
	} {
		steps := tc.steps
		t.Run(name, func(t *testing.T) {
			var w ownWrites
			for i, s := range steps {
				switch s.op {
				case "wrote":
					w.wrote(s.key, s.before, s.next)
				case "forget":
					w.forget(s.key)
				case "pending":
					if got := w.pending(s.key, s.before); got != s.want {
						t.Errorf("step %d: pending(%s, %s) = %v, want %v", i, s.key, s.before, got, s.want)
					}
				}
			}
			if n := len(w.replaced); n != tc.left {
				t.Errorf("%d records left, want %d", n, tc.left)
			}
		})
	}
}
