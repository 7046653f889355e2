package filter

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Filter packages keep their metrics in package-level collectors, labelled by virtual cluster
// (Env.VirtualCluster), registered here from init: the proxy registers them in its registry, and
// each test proxy in its own (a collector may be in several registries).
var (
	collectorsMu sync.Mutex
	collectors   []prometheus.Collector
)

// RegisterCollectors adds a filter package's collectors to those the proxy exposes.
func RegisterCollectors(cs ...prometheus.Collector) {
	collectorsMu.Lock()
	defer collectorsMu.Unlock()
	collectors = append(collectors, cs...)
}

// Collectors are the collectors filter packages registered.
func Collectors() []prometheus.Collector {
	collectorsMu.Lock()
	defer collectorsMu.Unlock()
	return slices.Clone(collectors)
}
