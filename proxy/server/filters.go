package server

import (
	"crypto/tls"
	"net"

	"github.com/kafkalink/kafkalink/proxy/filter"
	// The filter types kafkalink-proxy implements register themselves.
	_ "github.com/kafkalink/kafkalink/proxy/filter/all"
)

// filterBudget is the process's budget of filter memory: one for all virtual clusters, made
// anew only when its size changes (connections keep the budget their chain was built with).
func (s *Server) filterBudget(size int64) *filter.Budget {
	s.budgetMu.Lock()
	defer s.budgetMu.Unlock()
	if s.budget == nil || s.budgetSize != size {
		s.budget, s.budgetSize = filter.NewBudget(size), size
	}
	return s.budget
}

// connectionFilters is a route's filter chain as one connection's relay sees it, with the
// subject of the client's verified certificate when it presented one; nil without filters.
func connectionFilters(route *vcRoute, client net.Conn) *filter.Conn {
	if route.filters == nil {
		return nil
	}
	fc := route.filters.ForConnection()
	if tc, ok := client.(*tls.Conn); ok {
		if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
			fc.SetSubject(filter.SubjectFromCertificate(certs[0]))
		}
	}
	return fc
}
