// Package tenant is the MultiTenant and EntityIsolation filters: a prefix on the names of what a
// tenant owns, added on the way to the broker and taken off on the way back, so that several
// tenants share one Kafka cluster without seeing each other.
//
// MultiTenant makes a virtual cluster one tenant's view of the cluster: topic names, group ids
// and transactional ids become <tenantPrefix><separator><name> at the broker, every listing
// (Metadata, ListGroups, ListTransactions, DescribeTopicPartitions, DescribeLogDirs, OffsetFetch)
// shows only the tenant's own, and Metadata and DescribeCluster report a cluster id of the
// tenant's own, derived from the broker's and the tenant's name. Its configuration takes
// Kroxylicious' shape, with one field of kafkalink's:
//
//	prefixResourceNameSeparator: "-"   # default "-"
//	tenantPrefix: team_a               # kafkalink: default the virtual cluster's name, or the
//	                                   # KafkaRoute's name for the operator's virtual clusters,
//	                                   # each separator in it made "_" (team-a: team_a-orders)
//
// EntityIsolation keeps group ids and transactional ids private to each client (its subject:
// a client certificate's, or a SASL user's), for teams that share topics but not groups:
//
//	entityTypes: [GROUP_ID, TRANSACTIONAL_ID]
//	mapper: PrincipalEntityNameMapperService
//	mapperConfig: {separator: "-", principalType: io.kroxylicious.proxy.authentication.User}
//	# kafkalink: useCertificateCommonName: true takes a certificate's CN instead of its DN
//
// Which API keys are rewritten, passed, or refused is the table in rules.go; a key the proxy
// forwards that the table does not place fails TestEveryKeyHasARule.
package tenant

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
)

// Types, as Kroxylicious names them.
const (
	MultiTenantType     = "MultiTenant"
	EntityIsolationType = "EntityIsolation"
)

func init() {
	filter.RegisterTyped(newMultiTenant, MultiTenantType, "io.kroxylicious.filter.multitenant.MultiTenant", "io.kroxylicious.proxy.filter.multitenant.MultiTenant")
	filter.RegisterTyped(newEntityIsolation, EntityIsolationType, "io.kroxylicious.filter.entityisolation.EntityIsolation")
}

// legalName is what Kafka accepts in topic names and group ids, as Kroxylicious checks prefixes.
var legalName = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// maxNameLength is Kafka's longest topic name.
const maxNameLength = 249

// maxKeyScan bounds the keys the filters claim beyond kmsg's: a request of a key kmsg does not
// know goes to the chain, which cannot decode it and closes the connection, instead of to the
// broker unrewritten.
const maxKeyScan = 1024

// checkTenant checks a tenant name and separator: legal Kafka names, and the tenant without the
// separator, so that no tenant's prefix starts another's ("team" and "team-a" with "-" would
// share "team-a-orders").
func checkTenant(field, tenant, sep string) error {
	switch {
	case !legalName.MatchString(tenant + sep):
		return fmt.Errorf("%s %q with separator %q is not a legal Kafka name prefix (letters, digits, '.', '_', '-')", field, tenant, sep)
	case len(tenant)+len(sep) > maxNameLength-1:
		return fmt.Errorf("%s %q is longer than a Kafka name allows", field, tenant)
	case sep == "":
		return fmt.Errorf("prefixResourceNameSeparator must not be empty: tenants' prefixes would overlap")
	case strings.Contains(tenant, sep):
		return fmt.Errorf("%s %q contains the separator %q, so its prefix could start another tenant's; set prefixResourceNameSeparator to a string the tenant names do not contain (such as \"_\"), or tenantPrefix", field, tenant, sep)
	}
	return nil
}

// keys are the API keys a filter isolating kinds takes: those it rewrites or refuses, and
// every key kmsg does not know.
func keys(isolates kind) []int16 {
	var out []int16
	for k := int16(0); k < maxKeyScan; k++ {
		if action(k, isolates) != "pass" {
			out = append(out, k)
		}
	}
	return out
}

// MultiTenantConfig is MultiTenant's configuration.
type MultiTenantConfig struct {
	PrefixResourceNameSeparator *string `json:"prefixResourceNameSeparator,omitempty"`
	TenantPrefix                string  `json:"tenantPrefix,omitempty"`
}

type multiTenant struct {
	tenant string
	n      namer
	keys   []int16
	// upstreamIDs maps the cluster ids the tenant was shown to the broker's: clients send the
	// one they know in ApiVersions (v5+), and the broker refuses another cluster's.
	mu          sync.Mutex
	upstreamIDs map[string]string
}

// maxClusterIDs bounds upstreamIDs: a virtual cluster has one upstream cluster, two while it
// is moved to another.
const maxClusterIDs = 8

// shown records the cluster id the tenant was shown for the broker's upstream id.
func (m *multiTenant) shown(upstream string) string {
	id := clusterID(upstream, m.tenant)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.upstreamIDs[id]; !ok && len(m.upstreamIDs) >= maxClusterIDs {
		clear(m.upstreamIDs)
	}
	m.upstreamIDs[id] = upstream
	return id
}

// upstreamID is the broker's id for the id the tenant was shown; empty when not known (the
// proxy restarted since): the client's check is then left out.
func (m *multiTenant) upstreamID(shown string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.upstreamIDs[shown]
}

// defaultTenant is the tenant of a virtual cluster named vc: its name, or for the operator's
// virtual clusters ("<KafkaRoute>/<listener>/<host pattern>") the KafkaRoute's name, with each
// separator in it made "_". Kubernetes names never hold "_", so no route's tenant then holds the
// separator and no route's prefix starts another's ("team-a" is "team_a-", "team" is "team-"),
// and a route name is never refused for it.
func defaultTenant(vc, sep string) string {
	route, _, _ := strings.Cut(vc, "/")
	if sep == "" {
		return route
	}
	return strings.ReplaceAll(route, sep, "_")
}

func newMultiTenant(cfg *MultiTenantConfig, env filter.Env) (filter.Filter, error) {
	sep := "-"
	if cfg.PrefixResourceNameSeparator != nil {
		sep = *cfg.PrefixResourceNameSeparator
	}
	tenant, field := cfg.TenantPrefix, "tenantPrefix"
	if tenant == "" {
		tenant, field = defaultTenant(env.VirtualCluster, sep), "the virtual cluster's name (the default tenantPrefix)"
	}
	if tenant == "" {
		// The operator's check: no virtual cluster, so only the separator can be checked.
		tenant = "tenant"
	}
	if err := checkTenant(field, tenant, sep); err != nil {
		return nil, err
	}
	isolates := topics | groups | txns | cluster
	return &multiTenant{tenant: tenant, n: namer{prefix: tenant + sep, kinds: isolates}, keys: keys(isolates), upstreamIDs: map[string]string{}}, nil
}

func (m *multiTenant) Keys() []int16 { return m.keys }

// OnRequest prefixes the request's names; a key the filter refuses ends the connection.
func (m *multiTenant) OnRequest(_ context.Context, x *filter.Exchange) error {
	if action(x.Key, m.n.kinds) == "refuse" {
		return refused(x.Key, MultiTenantType)
	}
	switch r := x.Request.(type) {
	case *kmsg.FindCoordinatorRequest:
		x.Set(m, coordinatorKind(r.CoordinatorType))
	case *kmsg.ApiVersionsRequest:
		if r.ClusterID != nil {
			if up := m.upstreamID(*r.ClusterID); up != "" {
				r.ClusterID = &up
			} else {
				r.ClusterID = nil
			}
		}
	}
	answer, err := m.n.request(x)
	if answer != nil {
		x.Answer(answer)
	}
	if err == nil && answer == nil {
		m.n.dataPath(x)
	}
	return err
}

// OnResponse strips the prefix and hides other tenants' resources.
func (m *multiTenant) OnResponse(_ context.Context, x *filter.Exchange) error {
	if r, ok := x.Response.(*kmsg.ApiVersionsResponse); ok {
		apiVersions(r, m.n.kinds)
		return nil
	}
	coordinator, _ := x.Get(m).(kind)
	m.n.response(x.Response, coordinator, m.shown)
	return nil
}

// refused is the error that ends a connection sending a key the filter refuses (clients do
// not: the key is not in the filter's ApiVersions answer).
func refused(key int16, typ string) error {
	return fmt.Errorf("%s refuses %s (%d): %s", typ, kmsg.NameForKey(key), key, why(key))
}

func why(key int16) string {
	if r, ok := rules[key]; ok {
		return r.why
	}
	return "an API key kafkalink-proxy does not know"
}
