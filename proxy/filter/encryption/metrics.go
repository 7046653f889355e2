package encryption

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

// The filter's metrics (docs/monitoring.md). Label values are bounded: virtual_cluster by the
// configuration; topic is a topic's name only when its KEK exists (the KMS's keys bound those),
// and "" for every other topic, a name no legal topic has; operation, outcome and cache by the
// constants below.
var (
	recordsEncrypted = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_encryption_records_encrypted_total",
		Help: "Produced records whose value the filter encrypted, by virtual cluster and topic."}, []string{"virtual_cluster", "topic"})
	recordsUnencrypted = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_encryption_records_unencrypted_total",
		Help: `Produced records the filter forwarded with their value in the clear: those of topics without a KEK (topic ""), and tombstones (null values) of topics with one.`},
		[]string{"virtual_cluster", "topic"})
	recordsDecrypted = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_encryption_records_decrypted_total",
		Help: `Fetched records whose value the filter decrypted, by virtual cluster and topic ("" for a topic whose KEK does not exist now).`},
		[]string{"virtual_cluster", "topic"})
	kmsOperations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_encryption_kms_operations_total",
		Help: "KMS calls by operation (exists, generate_dek, decrypt_dek) and outcome: ok, not_found (no such KEK), unavailable (retried by clients), refused (never retried), throttled (over the virtual cluster's KMS call rate, not sent)."},
		[]string{"virtual_cluster", "operation", "outcome"})
	deksCreated = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_encryption_deks_created_total",
		Help: "Data keys (DEKs) the KMS made for the filter."}, []string{"virtual_cluster"})
	cacheLookups = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_encryption_cache_lookups_total",
		Help: "Look-ups in the filter's caches by cache (kek_exists: whether a KEK exists; decrypted_dek: unwrapped DEKs) and result (hit, miss)."},
		[]string{"virtual_cluster", "cache", "result"})

	metricVecs = []*prometheus.CounterVec{recordsEncrypted, recordsUnencrypted, recordsDecrypted, kmsOperations, deksCreated, cacheLookups}
)

func init() {
	filter.RegisterCollectors(recordsEncrypted, recordsUnencrypted, recordsDecrypted, kmsOperations, deksCreated, cacheLookups)
}

// KMS operations and their outcomes, the values of the operation and outcome labels.
const (
	opExists = iota
	opGenerateDEK
	opDecryptDEK
)

const (
	outcomeOK = iota
	outcomeNotFound
	outcomeUnavailable
	outcomeRefused
	outcomeThrottled
)

var (
	operationNames = [...]string{opExists: "exists", opGenerateDEK: "generate_dek", opDecryptDEK: "decrypt_dek"}
	outcomeNames   = [...]string{outcomeOK: "ok", outcomeNotFound: "not_found", outcomeUnavailable: "unavailable", outcomeRefused: "refused", outcomeThrottled: "throttled"}
)

// outcomeOf classifies a KMS call's error; anything unclassified is retried, as a KMS that
// cannot answer.
func outcomeOf(err error) int {
	switch {
	case err == nil:
		return outcomeOK
	case errors.Is(err, errKMSBusy):
		return outcomeThrottled
	case errors.Is(err, ErrKEKNotFound):
		return outcomeNotFound
	case errors.Is(err, ErrKMSRefused):
		return outcomeRefused
	default:
		return outcomeUnavailable
	}
}

// metrics are one filter's series. Its fixed series are resolved once (the hot path indexes
// them); those by topic are looked up per partition.
type metrics struct {
	vc    string
	kms   [len(operationNames)][len(outcomeNames)]prometheus.Counter
	deks  prometheus.Counter
	keks  [2]prometheus.Counter // miss, hit
	opens [2]prometheus.Counter
	once  sync.Once
}

// users counts the live filters of each virtual cluster. A reload builds a virtual cluster's new
// chain before it closes the old one, so a closing filter deletes the series only when it is the
// last of its virtual cluster: the new chain's series stay, and a dropped virtual cluster's go.
var (
	usersMu sync.Mutex
	users   = map[string]int{}
)

// newMetrics is the series of virtual cluster vc, its fixed ones created at 0 so that rate()
// sees their first increase and dashboards have a series from the start.
func newMetrics(vc string) *metrics {
	usersMu.Lock()
	defer usersMu.Unlock()
	users[vc]++
	m := &metrics{vc: vc, deks: deksCreated.WithLabelValues(vc)}
	for op := range m.kms {
		for out := range m.kms[op] {
			m.kms[op][out] = kmsOperations.WithLabelValues(vc, operationNames[op], outcomeNames[out])
		}
	}
	for i, result := range []string{"miss", "hit"} {
		m.keks[i] = cacheLookups.WithLabelValues(vc, "kek_exists", result)
		m.opens[i] = cacheLookups.WithLabelValues(vc, "decrypted_dek", result)
	}
	recordsUnencrypted.WithLabelValues(vc, "")
	return m
}

// close deletes the virtual cluster's series when no other filter of it is live.
func (m *metrics) close() {
	m.once.Do(func() {
		usersMu.Lock()
		defer usersMu.Unlock()
		if users[m.vc]--; users[m.vc] > 0 {
			return
		}
		delete(users, m.vc)
		for _, v := range metricVecs {
			v.DeletePartialMatch(prometheus.Labels{"virtual_cluster": m.vc})
		}
	})
}

func (m *metrics) kmsCall(op, outcome int) { m.kms[op][outcome].Inc() }

func (m *metrics) kekLookup(hit bool) { m.keks[b2i(hit)].Inc() }

func (m *metrics) dekLookup(hit bool) { m.opens[b2i(hit)].Inc() }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (m *metrics) encrypted(topic string, n int) {
	if n > 0 {
		recordsEncrypted.WithLabelValues(m.vc, topic).Add(float64(n))
	}
}

func (m *metrics) unencrypted(topic string, n int) {
	if n > 0 {
		recordsUnencrypted.WithLabelValues(m.vc, topic).Add(float64(n))
	}
}

func (m *metrics) decrypted(topic string, n int) {
	if n > 0 {
		recordsDecrypted.WithLabelValues(m.vc, topic).Add(float64(n))
	}
}

// countRecords is the number of records in raw's whole v2 batches, as their headers say,
// without decoding them: what a topic without a KEK forwards is never decompressed.
func countRecords(raw []byte) int {
	const numRecordsAt = 57 // after the v2 header's fixed fields (Kafka's DefaultRecordBatch)
	batches, _, _ := records.Split(raw)
	n := 0
	for _, b := range batches {
		if len(b) >= numRecordsAt+4 && b[16] == 2 {
			n += max(0, int(int32(binary.BigEndian.Uint32(b[numRecordsAt:]))))
		}
	}
	return n
}
