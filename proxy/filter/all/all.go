// Package all registers every filter type kafkalink-proxy implements; the proxy imports it to
// serve them, and the operator to default --proxy-filter-types to exactly them.
package all

import (
	"github.com/kafkalink/kafkalink/proxy/filter"
	// Each filter registers itself in init.
	_ "github.com/kafkalink/kafkalink/proxy/filter/encryption"
	_ "github.com/kafkalink/kafkalink/proxy/filter/validation"
)

// Types lists the filter types of kafkalink-proxy.
func Types() []string { return filter.Types() }

// Check checks a filter configuration as kafkalink-proxy would at start, without reading the
// files it names; a type kafkalink-proxy does not implement is not checked.
func Check(typ string, config []byte) error { return filter.Check(typ, config) }
