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
func (s *Server) filterChain(ctx context.Context, vc config.VirtualCluster) (kafka.Filters, error) {
	if len(vc.Filters) == 0 {
		return nil, nil // a nil interface, not a nil *filter.Chain: the relay checks for nil
	}
	chain, err := filter.NewChain(ctx, vc.Filters)
	if err != nil {
		return nil, err
	}
	return chain, nil
}
