// Package all registers every filter type kafkalink-proxy implements; the proxy imports it to
// serve them, and the operator to default --proxy-filter-types to exactly them.
package all

import (
	"io/fs"

	"github.com/kafkalink/kafkalink/proxy/filter"
	// Each filter registers itself in init.
	_ "github.com/kafkalink/kafkalink/proxy/filter/authorization"
	_ "github.com/kafkalink/kafkalink/proxy/filter/encryption"
	_ "github.com/kafkalink/kafkalink/proxy/filter/expiration"
	_ "github.com/kafkalink/kafkalink/proxy/filter/oauthbearer"
	_ "github.com/kafkalink/kafkalink/proxy/filter/protocollogger"
	_ "github.com/kafkalink/kafkalink/proxy/filter/saslinspection"
	_ "github.com/kafkalink/kafkalink/proxy/filter/sasltermination"
	_ "github.com/kafkalink/kafkalink/proxy/filter/tenant"
	_ "github.com/kafkalink/kafkalink/proxy/filter/validation"
)

// Types lists the filter types of kafkalink-proxy.
func Types() []string { return filter.Types() }

// Check checks a filter configuration as kafkalink-proxy would at start, with files (by path)
// the content the proxy's pod will have; a type kafkalink-proxy does not implement is not
// checked.
func Check(typ string, config []byte, files map[string][]byte) error {
	return filter.Check(typ, config, filter.Env{ReadFile: func(path string) ([]byte, error) {
		if b, ok := files[path]; ok {
			return b, nil
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}})
}
