package filter_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// counted is a filter that reads a file at build, and whose builds and closes are counted.
type counted struct{ closed *atomic.Int32 }

func (counted) Keys() []int16                                      { return nil }
func (counted) OnRequest(context.Context, *filter.Exchange) error  { return nil }
func (counted) OnResponse(context.Context, *filter.Exchange) error { return nil }
func (c counted) Close() error                                     { c.closed.Add(1); return nil }

var builds, closes atomic.Int32

func init() {
	filter.RegisterTyped(func(cfg *struct{ File, Fail string }, env filter.Env) (filter.Filter, error) {
		if cfg.Fail != "" {
			return nil, errors.New(cfg.Fail)
		}
		if _, err := env.ReadFile(cfg.File); err != nil {
			return nil, err
		}
		builds.Add(1)
		return counted{closed: &closes}, nil
	}, "test.Counted")
}

// countedFilters is a chain of one test.Counted filter reading file.
func countedFilters(file string, extra ...config.Filter) []config.Filter {
	raw, _ := json.Marshal(map[string]string{"File": file})
	return append([]config.Filter{{Name: "counted", Type: "test.Counted", Config: raw}}, extra...)
}

// TestChainsKeepWhatDidNotChange walks reloads through Chains: a virtual cluster whose filters,
// files and limits did not change keeps its chain (no new build); one whose config, file content
// or limits changed gets a new chain, and the old one is retired and closed; a removed one is
// retired; an aborted plan closes only what it built.
func TestChainsKeepWhatDidNotChange(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("one")
	ctx := context.Background()
	lim := filter.DefaultLimits()
	var cs filter.Chains
	apply := func(vcs map[string][]config.Filter, lim filter.Limits) (map[string]*filter.Chain, []*filter.Chain) {
		t.Helper()
		p := cs.Plan()
		out := map[string]*filter.Chain{}
		for name, fs := range vcs {
			c, err := p.Chain(ctx, name, fs, lim)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = c
		}
		retired := p.Commit()
		if err := filter.CloseAll(retired); err != nil {
			t.Fatal(err)
		}
		return out, retired
	}
	expect := func(step string, wantBuilds, wantCloses int32) {
		t.Helper()
		if b, c := builds.Swap(0), closes.Swap(0); b != wantBuilds || c != wantCloses {
			t.Fatalf("%s: %d builds and %d closes, want %d and %d", step, b, c, wantBuilds, wantCloses)
		}
	}
	builds.Store(0)
	closes.Store(0)

	first, _ := apply(map[string][]config.Filter{"a": countedFilters(file), "b": countedFilters(file)}, lim)
	expect("first load", 2, 0)
	if cs.Changed() {
		t.Fatal("Changed() right after the load")
	}

	again, retired := apply(map[string][]config.Filter{"a": countedFilters(file), "b": countedFilters(file)}, lim)
	expect("unchanged reload", 0, 0)
	if again["a"] != first["a"] || again["b"] != first["b"] || len(retired) != 0 {
		t.Fatal("an unchanged reload replaced a chain")
	}

	renamed := countedFilters(file)
	renamed[0].Name = "renamed"
	changed, retired := apply(map[string][]config.Filter{"a": renamed, "b": countedFilters(file)}, lim)
	expect("a's filter renamed", 1, 1)
	if changed["a"] == first["a"] || changed["b"] != first["b"] || len(retired) != 1 || retired[0] != first["a"] {
		t.Fatal("a changed filter did not replace exactly its own chain")
	}

	write("two")
	if !cs.Changed() {
		t.Fatal("Changed() is false after the file the chains read changed")
	}
	_, _ = apply(map[string][]config.Filter{"a": renamed, "b": countedFilters(file)}, lim)
	expect("the file both read changed", 2, 2)

	smaller := lim
	smaller.MaxBatch /= 2
	_, _ = apply(map[string][]config.Filter{"a": renamed}, smaller)
	expect("limits changed, b removed", 1, 2)

	p := cs.Plan()
	if _, err := p.Chain(ctx, "a", renamed, smaller); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Chain(ctx, "c", countedFilters(file), smaller); err != nil {
		t.Fatal(err)
	}
	if err := p.Abort(); err != nil {
		t.Fatal(err)
	}
	expect("aborted plan: a reused, c built and closed", 1, 1)

	failing := countedFilters(file, config.Filter{Name: "bad", Type: "test.Counted", Config: json.RawMessage(`{"Fail":"no"}`)})
	if _, err := cs.Plan().Chain(ctx, "d", failing, lim); err == nil {
		t.Fatal("a chain with a failing filter was built")
	}
	expect("a chain whose second filter fails closes its first", 1, 1)

	missing := filepath.Join(dir, "missing")
	p = cs.Plan()
	if _, err := p.Chain(ctx, "e", countedFilters(missing), lim); err == nil {
		t.Fatal("a filter whose file is missing was built")
	}
	_ = p.Commit()
	if cs.Changed() {
		t.Fatal("Changed() while the missing file is still missing")
	}
	write2 := os.WriteFile(missing, []byte("here"), 0o600)
	if write2 != nil || !cs.Changed() {
		t.Fatal("Changed() is false after the file a failed build missed appeared")
	}
}
