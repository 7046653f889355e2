package oauthbearer

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafkalink/kafkalink/proxy/filter"
)

// authentications counts the OAUTHBEARER SaslAuthenticate requests the filter decided, by
// virtual cluster and result (docs/identity.md). Label values are bounded: the virtual clusters
// of the configuration and the results below.
var authentications = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafkalink_proxy_oauthbearer_authentications_total",
	Help: "OAUTHBEARER SaslAuthenticate requests the OauthBearerValidation filter decided, by result: valid (forwarded to the broker), invalid (refused by the proxy), jwks_unavailable (refused: the JWKS could not be fetched)."},
	[]string{"virtual_cluster", "result"})

func init() { filter.RegisterCollectors(authentications) }

// Results, the values of the result label.
const (
	resultValid = iota
	resultInvalid
	resultJWKSUnavailable
)

var resultNames = [...]string{resultValid: "valid", resultInvalid: "invalid", resultJWKSUnavailable: "jwks_unavailable"}

// metrics are one filter's series, created at 0 so that rate() sees their first increase.
type metrics struct {
	vc      string
	results [len(resultNames)]prometheus.Counter
	once    sync.Once
}

// users counts the live filters of each virtual cluster: a reload builds the new chain before it
// closes the old one, so the series go only with the last filter of a virtual cluster.
var (
	usersMu sync.Mutex
	users   = map[string]int{}
)

// newMetrics is the series of virtual cluster vc; the operator's check (no virtual cluster)
// gets counters that are not exposed.
func newMetrics(vc string) *metrics {
	m := &metrics{vc: vc}
	if vc == "" {
		for i := range m.results {
			m.results[i] = prometheus.NewCounter(prometheus.CounterOpts{Name: "unexposed"})
		}
		return m
	}
	usersMu.Lock()
	defer usersMu.Unlock()
	users[vc]++
	for i, name := range resultNames {
		m.results[i] = authentications.WithLabelValues(vc, name)
	}
	return m
}

func (m *metrics) result(r int) { m.results[r].Inc() }

// close deletes the virtual cluster's series when no other filter of it is live.
func (m *metrics) close() {
	if m.vc == "" {
		return
	}
	m.once.Do(func() {
		usersMu.Lock()
		defer usersMu.Unlock()
		if users[m.vc]--; users[m.vc] > 0 {
			return
		}
		delete(users, m.vc)
		authentications.DeletePartialMatch(prometheus.Labels{"virtual_cluster": m.vc})
	})
}
