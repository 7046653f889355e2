package all

import (
	"slices"
	"strings"
	"testing"
)

// TestTenancyFiltersRegistered: the tenancy and connection filters are in the operator's default
// --proxy-filter-types under both names, and its check refuses a bad config of each (the route
// then reports InvalidFilterConfig) and accepts a good one.
func TestTenancyFiltersRegistered(t *testing.T) {
	for name, tc := range map[string]struct {
		types      []string
		good, bad  string
		badMessage string
	}{
		"MultiTenant": {
			types: []string{"MultiTenant", "io.kroxylicious.filter.multitenant.MultiTenant"},
			good:  `{}`, bad: `{"tenantPrefix":"team-a"}`, badMessage: "contains the separator",
		},
		"EntityIsolation": {
			types: []string{"EntityIsolation", "io.kroxylicious.filter.entityisolation.EntityIsolation"},
			good:  `{"entityTypes":["GROUP_ID"],"mapper":"PrincipalEntityNameMapperService"}`, bad: `{"entityTypes":["TOPIC_NAME"],"mapper":"PrincipalEntityNameMapperService"}`, badMessage: "TOPIC_NAME",
		},
		"ConnectionExpiration": {
			types: []string{"ConnectionExpiration", "io.kroxylicious.filter.connectionexpiration.ConnectionExpiration"},
			good:  `{"maxAge":"1h","jitter":"5m"}`, bad: `{"maxAge":"1h","jitter":"2h"}`, badMessage: "jitter",
		},
		"ProtocolLogger": {
			types: []string{"ProtocolLogger", "io.kroxylicious.filter.protocollogger.ProtocolLogger"},
			good:  `{"apiKeyNames":["METADATA"]}`, bad: `{"apiKeyNames":["NOPE"]}`, badMessage: "unknown API key name",
		},
	} {
		for _, typ := range tc.types {
			if !slices.Contains(Types(), typ) {
				t.Errorf("%s: %s is not in Types()", name, typ)
			}
			if err := Check(typ, []byte(tc.good), nil); err != nil {
				t.Errorf("%s: a good config refused: %v", typ, err)
			}
			if err := Check(typ, []byte(tc.bad), nil); err == nil || !strings.Contains(err.Error(), tc.badMessage) {
				t.Errorf("%s: a bad config: %v, want %q", typ, err, tc.badMessage)
			}
		}
	}
}
