package filter_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// builtFor records the virtual cluster each test.Named filter was built for.
var builtFor struct {
	sync.Mutex
	names []string
}

func init() {
	filter.RegisterTyped(func(_ *struct{}, env filter.Env) (filter.Filter, error) {
		builtFor.Lock()
		defer builtFor.Unlock()
		builtFor.names = append(builtFor.names, env.VirtualCluster)
		return counted{closed: new(atomic.Int32)}, nil
	}, "test.Named")
}

// TestFiltersAreBuiltForTheirVirtualCluster: a plan's chain builds its filters with the name of
// the virtual cluster it serves, so their metrics carry it; the operator's check, which serves
// none, builds with an empty name.
func TestFiltersAreBuiltForTheirVirtualCluster(t *testing.T) {
	named := []config.Filter{{Name: "n", Type: "test.Named", Config: json.RawMessage(`{}`)}}
	var cs filter.Chains
	p := cs.Plan()
	for _, vc := range []string{"orders", "payments"} {
		if _, err := p.Chain(context.Background(), vc, named, filter.DefaultLimits()); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := filter.NewChain(context.Background(), "audit", named); err != nil {
		t.Fatal(err)
	}
	if err := filter.Check("test.Named", json.RawMessage(`{}`), filter.Env{}); err != nil {
		t.Fatal(err)
	}
	builtFor.Lock()
	defer builtFor.Unlock()
	if want := []string{"orders", "payments", "audit", ""}; !slices.Equal(builtFor.names, want) {
		t.Errorf("built for %q, want %q", builtFor.names, want)
	}
}

// TestCollectorsAreKept: what a filter package registers is what the proxy gets to register.
func TestCollectorsAreKept(t *testing.T) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "kafkalink_proxy_test_filter_total", Help: "A test counter."})
	filter.RegisterCollectors(c)
	if !slices.Contains(filter.Collectors(), prometheus.Collector(c)) {
		t.Error("a registered collector is not among filter.Collectors()")
	}
}
