package controller

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// reconcileErrors counts failed syncs by controller and reason. The reason is one of a fixed set
// (errorReason), never an error message, so the label stays bounded.
var reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "kafkalink_reconcile_errors_total",
	Help: "Syncs that returned an error and were retried with backoff, by controller and reason: panic, conflict, an API status reason (such as Forbidden, NotFound, Timeout, TooManyRequests, InternalError) or other.",
}, []string{"controller", "reason"})

// ReasonOther is the reconcile error reason of errors that carry no API status reason.
const ReasonOther = "other"

// errorReason classifies a sync error for kafkalink_reconcile_errors_total.
func errorReason(err error) string {
	if errors.As(err, new(errPanic)) {
		return "panic"
	}
	if apierrors.IsConflict(err) {
		return "conflict"
	}
	// StatusReason values are a fixed set of constants in apimachinery.
	if r := apierrors.ReasonForError(err); r != metav1.StatusReasonUnknown {
		return string(r)
	}
	return ReasonOther
}

// countError counts one failed sync of a controller.
func countError(controller string, err error) {
	reconcileErrors.WithLabelValues(controller, errorReason(err)).Inc()
}

// RegisterMetrics registers the standard collectors and makes every work queue created afterwards
// report depth, adds, latency, work duration, unfinished work and retries, labelled by queue name.
func RegisterMetrics() {
	registerOnce.Do(func() {
		Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), reconcilePanics, reconcileErrors, objectConditions)
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

// ConditionSource gives kafkalink_object_conditions one kind's objects, read from an informer
// cache at scrape time: each call to List returns, per object, its namespace and its condition
// lists (its own, and those of its listeners or parents).
type ConditionSource struct {
	Kind string
	List func() []ObjectConditions
}

// ObjectConditions are one object's condition lists.
type ObjectConditions struct {
	Namespace  string
	Conditions [][]metav1.Condition
}

// objectConditions is the collector of kafkalink_object_conditions.
var objectConditions = &conditionCollector{}

// SetConditionSources replaces the sources of kafkalink_object_conditions (the operator sets them
// once its informers exist; a later Run in the same process replaces them).
func SetConditionSources(sources ...ConditionSource) {
	objectConditions.mu.Lock()
	defer objectConditions.mu.Unlock()
	objectConditions.sources = sources
}

const objectConditionsHelp = "kafkalink objects by kind, namespace and condition: how many objects have a condition of this type, status and reason, " +
	"among their own conditions and their listeners' (KafkaGateway) or parents' (KafkaRoute). Read from the operator's caches at scrape time."

var objectConditionsDesc = prometheus.NewDesc("kafkalink_object_conditions", objectConditionsHelp,
	[]string{"kind", "object_namespace", "condition", "status", "reason"}, nil)

type conditionCollector struct {
	mu      sync.Mutex
	sources []ConditionSource
}

func (c *conditionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- objectConditionsDesc }

func (c *conditionCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	sources := c.sources
	c.mu.Unlock()
	for _, src := range sources {
		for key, n := range CountConditions(src.List()) {
			ch <- prometheus.MustNewConstMetric(objectConditionsDesc, prometheus.GaugeValue, float64(n),
				src.Kind, key.Namespace, key.Type, key.Status, key.Reason)
		}
	}
}

// ConditionKey is one series of kafkalink_object_conditions within a kind.
type ConditionKey struct {
	Namespace, Type, Status, Reason string
}

// CountConditions counts objects per namespace, condition type, status and reason. An object
// counts once per distinct key even when several of its listeners or parents carry it, so the
// value is a number of objects. Label values come from condition types and reasons, which are
// constants in kafkalink's code, and from the namespaces that hold objects.
func CountConditions(objs []ObjectConditions) map[ConditionKey]int {
	counts := map[ConditionKey]int{}
	for _, o := range objs {
		seen := map[ConditionKey]bool{}
		for _, list := range o.Conditions {
			for _, c := range list {
				k := ConditionKey{Namespace: o.Namespace, Type: c.Type, Status: string(c.Status), Reason: c.Reason}
				if !seen[k] {
					seen[k] = true
					counts[k]++
				}
			}
		}
	}
	return counts
}
