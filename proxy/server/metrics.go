package server

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
)

// Metrics are the proxy's Prometheus metrics, labelled by virtual cluster where it applies.
//
// Label values are bounded (docs/monitoring.md lists every metric): virtual_cluster by the
// configuration, which the operator bounds (routes per gateway); api by kmsg's fixed table of
// API keys (apiNames); node_id by the brokers the upstream cluster advertises, since a connection
// is only counted once its broker is known; listener, reason, direction and result by constants
// in this package; kind and name of LoadErrors by the configuration.
type Metrics struct {
	Registry          *prometheus.Registry
	ConnectionsActive *prometheus.GaugeVec
	ConnectionsTotal  *prometheus.CounterVec
	Bytes             *prometheus.CounterVec
	HandshakeFailures *prometheus.CounterVec
	UpstreamErrors    *prometheus.CounterVec
	Rewrites          *prometheus.CounterVec
	DroppedEndpoints  *prometheus.CounterVec
	MalformedFrames   *prometheus.CounterVec
	Refused           *prometheus.GaugeVec
	Reloads           *prometheus.CounterVec
	ConnectionLimit   prometheus.Counter
	Refusals          *prometheus.CounterVec
	Panics            prometheus.Counter
	LoadErrors        *prometheus.GaugeVec
	// Requests counts Kafka requests read from clients (direction in) and responses written to
	// them (direction out), by virtual cluster and API.
	Requests *prometheus.CounterVec
	// RequestDuration is the time from a request's header being read until its response has
	// left the proxy (flushed to the client socket), by virtual cluster and API.
	RequestDuration *prometheus.HistogramVec
	// NodeConnections are the client connections open now by virtual cluster and the broker
	// they are relayed to (node_id "bootstrap" for the bootstrap address).
	NodeConnections *prometheus.GaugeVec

	mu  sync.Mutex
	vcs map[string]*vcMetrics
}

// DurationBuckets are RequestDuration's buckets, in seconds: from sub-millisecond
// metadata answers to Fetch long polls (fetch.max.wait.ms, 500 ms by default) and group joins
// that wait for a rebalance.
var DurationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// NewMetrics registers the proxy metrics on a fresh registry, the filters' (filter.Collectors)
// included.
func NewMetrics() *Metrics {
	vc := []string{"virtual_cluster"}
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		ConnectionsActive: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kafkalink_proxy_connections_active",
			Help: "Client connections open now."}, vc),
		ConnectionsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_connections_total",
			Help: "Client connections routed to a virtual cluster."}, vc),
		Bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_bytes_total",
			Help: "Bytes relayed; direction in is client to broker, out is broker to client."}, []string{"virtual_cluster", "direction"}),
		HandshakeFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_handshake_failures_total",
			Help: "Refused or failed downstream TLS handshakes, by reason."}, []string{"listener", "reason"}),
		UpstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_upstream_errors_total",
			Help: "Upstream failures (dial, unknown broker, broker closed), by reason."}, []string{"virtual_cluster", "reason"}),
		Rewrites: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_rewrites_total",
			Help: "Broker addresses rewritten in responses, by API."}, []string{"virtual_cluster", "api"}),
		DroppedEndpoints: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_fetch_endpoints_dropped_total",
			Help: "Fetch responses over the buffering limit whose NodeEndpoints (KIP-951) did not fit once rewritten and were dropped; clients then refresh metadata."}, vc),
		MalformedFrames: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_malformed_frames_total",
			Help: "Connections closed because of a malformed Kafka frame."}, vc),
		Refused: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kafkalink_proxy_virtual_cluster_refused",
			Help: "1 for a configured virtual cluster the proxy refuses to serve (for example, it asks for filters)."}, vc),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_config_reloads_total",
			Help: "Configuration and key material reloads, by result."}, []string{"result"}),
		ConnectionLimit: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafkalink_proxy_connection_limit_rejections_total",
			Help: "Connections closed at once because limits.maxConnections was reached."}),
		Refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_connections_refused_total",
			Help: "Client connections closed before they were relayed, by reason: max_connections, per_source, handshake_rate, draining, first_request_timeout."},
			[]string{"reason"}),
		Panics: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafkalink_proxy_connection_panics_total",
			Help: "Connections closed because their handling panicked (a bug); the proxy itself keeps running."}),
		LoadErrors: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kafkalink_proxy_config_load_errors",
			Help: "1 for each listener, certificate or virtual cluster of the configuration that failed to load and is left out, by kind and name."},
			[]string{"kind", "name"}),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_requests_total",
			Help: "Kafka requests read from clients (direction in) and responses written to them (direction out), by virtual cluster and API; Produce with acks=0 has no response."},
			[]string{"virtual_cluster", "api", "direction"}),
		RequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kafkalink_proxy_request_duration_seconds",
			Help:    "Time from a request's header being read by the proxy until its response has been flushed to the client, by virtual cluster and API.",
			Buckets: DurationBuckets}, []string{"virtual_cluster", "api"}),
		NodeConnections: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kafkalink_proxy_node_connections_active",
			Help: "Client connections open now, by virtual cluster and the broker node id they are relayed to (bootstrap for the bootstrap address)."},
			[]string{"virtual_cluster", "node_id"}),
		vcs: map[string]*vcMetrics{},
	}
	m.Registry.MustRegister(m.ConnectionsActive, m.ConnectionsTotal, m.Bytes, m.HandshakeFailures, m.UpstreamErrors,
		m.Rewrites, m.DroppedEndpoints, m.MalformedFrames, m.Refused, m.Reloads, m.ConnectionLimit, m.Refusals, m.Panics, m.LoadErrors,
		m.Requests, m.RequestDuration, m.NodeConnections,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Registry.MustRegister(filter.Collectors()...)
	// Reported as 0 from the start, so rate() sees the first refusal and dashboards have a series.
	for _, r := range []string{refusedMaxConnections, refusedPerSource, refusedHandshakeRate, refusedDraining, refusedFirstRequest} {
		m.Refusals.WithLabelValues(r)
	}
	m.Reloads.WithLabelValues("success")
	m.Reloads.WithLabelValues("error")
	return m
}

// apiNames are the values of the api label: kmsg's names for keys 0..kmsg.MaxKey, and
// "Unknown" for any other key (a client may send anything), so the label has at most
// kmsg.MaxKey+2 values whatever the traffic.
var apiNames = func() (names [kmsg.MaxKey + 2]string) {
	for k := range names {
		names[k] = kmsg.NameForKey(int16(k)) // "Unknown" for the last slot and for gaps
	}
	return names
}()

func apiIndex(key int16) int {
	if key < 0 || key > kmsg.MaxKey {
		return kmsg.MaxKey + 1
	}
	return int(key)
}

// vcMetrics is one virtual cluster's kafka.Stats. Every request and response updates it, so the
// label children are resolved once per API key and kept in an array: the hot path is an index
// and an atomic load, with no label hashing or map lookup.
type vcMetrics struct {
	m    *Metrics
	name string
	apis [kmsg.MaxKey + 2]atomic.Pointer[apiMetrics]
}

type apiMetrics struct {
	in, out  prometheus.Counter
	duration prometheus.Observer
}

// api returns the children of key, creating them at its first use: only the APIs clients
// actually use appear in /metrics.
func (v *vcMetrics) api(key int16) *apiMetrics {
	i := apiIndex(key)
	if a := v.apis[i].Load(); a != nil {
		return a
	}
	name := apiNames[i]
	a := &apiMetrics{
		in:       v.m.Requests.WithLabelValues(v.name, name, "in"),
		out:      v.m.Requests.WithLabelValues(v.name, name, "out"),
		duration: v.m.RequestDuration.WithLabelValues(v.name, name),
	}
	// A racing first use resolved the same children; either copy will do.
	v.apis[i].CompareAndSwap(nil, a)
	return v.apis[i].Load()
}

// Requested implements kafka.Stats.
func (v *vcMetrics) Requested(key int16) { v.api(key).in.Inc() }

// Responded implements kafka.Stats.
func (v *vcMetrics) Responded(key int16, d time.Duration) {
	a := v.api(key)
	a.out.Inc()
	a.duration.Observe(d.Seconds())
}

// Rewrote implements kafka.Stats. Rewrites happen on metadata-like responses only, so the label
// lookup here is not on the hot path.
func (v *vcMetrics) Rewrote(key int16, n int) {
	v.m.Rewrites.WithLabelValues(v.name, apiNames[apiIndex(key)]).Add(float64(n))
}

// DroppedEndpoints implements kafka.Stats.
func (v *vcMetrics) DroppedEndpoints() { v.m.DroppedEndpoints.WithLabelValues(v.name).Inc() }

// virtualCluster returns the Stats of a virtual cluster; a connection asks once.
func (m *Metrics) virtualCluster(name string) *vcMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.vcs[name]
	if v == nil {
		v = &vcMetrics{m: m, name: name}
		m.vcs[name] = v
		// The error series of a virtual cluster start at 0 with its first connection.
		for _, r := range upstreamErrorReasons {
			m.UpstreamErrors.WithLabelValues(name, r)
		}
		m.MalformedFrames.WithLabelValues(name)
		m.DroppedEndpoints.WithLabelValues(name)
	}
	return v
}

// connectionOpened counts a relayed connection to node nodeID (negative: the bootstrap address)
// and returns the function that uncounts it.
func (m *Metrics) connectionOpened(vc string, nodeID int32) (closed func()) {
	node := "bootstrap"
	if nodeID >= 0 {
		node = strconv.Itoa(int(nodeID))
	}
	g := m.NodeConnections.WithLabelValues(vc, node)
	g.Inc()
	return g.Dec
}

// forgetVirtualCluster drops the per-connection and per-request series of a virtual cluster the
// configuration no longer has, so names that come and go do not pile up in /metrics. Counters of
// its last connections may still tick on detached children until those connections close.
func (m *Metrics) forgetVirtualCluster(name string) {
	m.mu.Lock()
	delete(m.vcs, name)
	m.mu.Unlock()
	vc := prometheus.Labels{"virtual_cluster": name}
	m.ConnectionsActive.DeleteLabelValues(name)
	m.NodeConnections.DeletePartialMatch(vc)
	m.Requests.DeletePartialMatch(vc)
	m.RequestDuration.DeletePartialMatch(vc)
	m.UpstreamErrors.DeletePartialMatch(vc)
	m.MalformedFrames.DeletePartialMatch(vc)
}

// upstreamErrorReasons are the reason values of kafkalink_proxy_upstream_errors_total.
var upstreamErrorReasons = []string{"dial", "unknown_broker", "relay", "authentication"}
