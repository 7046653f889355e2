package controller

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Registry is the Prometheus registry of the operator's /metrics: Go and process collectors,
// and the work-queue metrics of every controller.
var Registry = prometheus.NewRegistry()

var registerOnce sync.Once

// reconcilePanics counts syncs that panicked, by controller.
var reconcilePanics = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "kafkalink_reconcile_panics_total",
	Help: "Syncs that panicked (recovered, logged and retried with backoff), by controller.",
}, []string{"controller"})

// RegisterMetrics registers the standard collectors and makes every work queue created afterwards
// report depth, adds, latency, work duration, unfinished work and retries, labelled by queue name.
func RegisterMetrics() {
	registerOnce.Do(func() {
		Registry.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}), reconcilePanics)
		p := &queueMetrics{
			depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "depth",
				Help: "Current depth of the work queue."}, []string{"name"}),
			adds: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "adds_total",
				Help: "Total number of adds handled by the work queue."}, []string{"name"}),
			latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "queue_duration_seconds",
				Help: "How long an item stays in the work queue before being processed.", Buckets: prometheus.ExponentialBuckets(1e-6, 10, 10)}, []string{"name"}),
			workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "work_duration_seconds",
				Help: "How long processing an item takes.", Buckets: prometheus.ExponentialBuckets(1e-6, 10, 10)}, []string{"name"}),
			unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "unfinished_work_seconds",
				Help: "Seconds of work in progress that has not been observed by work_duration."}, []string{"name"}),
			longest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "longest_running_processor_seconds",
				Help: "Seconds the longest running processor has been running."}, []string{"name"}),
			retries: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "retries_total",
				Help: "Total number of retries handled by the work queue."}, []string{"name"}),
		}
		Registry.MustRegister(p.depth, p.adds, p.latency, p.workDuration, p.unfinished, p.longest, p.retries)
		workqueue.SetProvider(p)
	})
}

// queueMetrics is the work-queue metrics provider: one series per queue name of each metric.
type queueMetrics struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, workDuration      *prometheus.HistogramVec
}

// NewDepthMetric is the depth gauge of the queue name.
func (m *queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}

// NewAddsMetric is the adds counter of the queue name.
func (m *queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name)
}

// NewLatencyMetric is the queue-latency histogram of the queue name.
func (m *queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}

// NewWorkDurationMetric is the work-duration histogram of the queue name.
func (m *queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name)
}

// NewUnfinishedWorkSecondsMetric is the unfinished-work gauge of the queue name.
func (m *queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name)
}

// NewLongestRunningProcessorSecondsMetric is the longest-running-processor gauge of the queue name.
func (m *queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longest.WithLabelValues(name)
}

// NewRetriesMetric is the retries counter of the queue name.
func (m *queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name)
}
