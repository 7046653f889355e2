package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metrics are the proxy's Prometheus metrics, labelled by virtual cluster where it applies.
type Metrics struct {
	Registry          *prometheus.Registry
	ConnectionsActive *prometheus.GaugeVec
	ConnectionsTotal  *prometheus.CounterVec
	Bytes             *prometheus.CounterVec
	HandshakeFailures *prometheus.CounterVec
	UpstreamErrors    *prometheus.CounterVec
	Rewrites          *prometheus.CounterVec
	MalformedFrames   *prometheus.CounterVec
	Refused           *prometheus.GaugeVec
	Reloads           *prometheus.CounterVec
	ConnectionLimit   prometheus.Counter
	Refusals          *prometheus.CounterVec
	Panics            prometheus.Counter
	LoadErrors        *prometheus.GaugeVec
}

// NewMetrics registers the proxy metrics on a fresh registry.
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
	}
	m.Registry.MustRegister(m.ConnectionsActive, m.ConnectionsTotal, m.Bytes, m.HandshakeFailures, m.UpstreamErrors,
		m.Rewrites, m.MalformedFrames, m.Refused, m.Reloads, m.ConnectionLimit, m.Refusals, m.Panics, m.LoadErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// rewriteStats adapts Metrics to kafka.Stats for one virtual cluster.
type rewriteStats struct {
	m  *Metrics
	vc string
}

func (s rewriteStats) Rewrote(key int16, n int) {
	s.m.Rewrites.WithLabelValues(s.vc, kmsg.NameForKey(key)).Add(float64(n))
}
