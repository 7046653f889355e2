package server

import (
	"context"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	// The filter types kafkalink-proxy implements register themselves.
	_ "github.com/kafkalink/kafkalink/proxy/filter/all"
	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// filterChain builds a virtual cluster's filters, nil when it has none. An unknown type or a
// filter that cannot start (bad config, unreadable file) is an error: the virtual cluster is then
// refused, never served unfiltered.
func (s *Server) filterChain(ctx context.Context, vc config.VirtualCluster, lim config.Limits) (*filter.Chain, error) {
	if len(vc.Filters) == 0 {
		return nil, nil
	}
	chain, err := filter.NewChain(ctx, vc.Filters)
	if err != nil {
		return nil, err
	}
	return chain.WithLimits(filter.LimitsFrom(lim, s.filterBudget(lim.FilterMemoryBytes))), nil
}

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

// connectionFilters is a route's filter chain as one connection's relay sees it; nil (a nil
// interface, which the relay checks for) without filters.
func connectionFilters(route *vcRoute) kafka.Filters {
	if route.filters == nil {
		return nil
	}
	return route.filters.ForConnection()
}
