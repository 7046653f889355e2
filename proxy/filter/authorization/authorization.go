// Package authorization is the Authorization filter: Kafka-style ACLs enforced at the proxy, on
// top of the broker's own, with the rules language of Kroxylicious' AclAuthorizerService
// (package proxy/acl). Its configuration is Kroxylicious':
//
//	authorizer: AclAuthorizerService
//	authorizerConfig:
//	  aclFile: /opt/kroxylicious/secrets/filter/acl/rules.acl   # from $(secretFile:…)
//
// Every request names the resources it acts on; the filter checks each with the subject of the
// connection (filter.Conn.Subject: a client certificate's DN, or a SASL identity) as Kafka's
// broker authorizer would, for every API key the proxy forwards (enforce.go lists them). What
// is denied gets Kafka's own error (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED,
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED) per partition or per
// resource, never a closed connection: a request partly denied is forwarded with the allowed
// parts only and the broker's response merged with the denied parts' errors, a request wholly
// denied is answered by the proxy. Metadata, ListGroups, ListTransactions,
// DescribeTopicPartitions and the describe APIs show only what the subject may describe. A key
// the filter has no rule for is taken out of ApiVersions and refused, as in Kroxylicious (it
// fails closed: a new API could name a topic the filter would not check).
package authorization

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/acl"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

// Type is the filter type, as Kroxylicious names it.
const Type = "Authorization"

// The authorizer Kroxylicious' config names: the only one kafkalink implements.
const (
	aclService     = "AclAuthorizerService"
	aclServiceFQCN = "io.kroxylicious.authorizer.provider.acl.AclAuthorizerService"
)

func init() {
	filter.RegisterTyped(build, Type, "io.kroxylicious.filter.authorization.Authorization")
}

// Config is the filter's configuration (Kroxylicious' AuthorizationConfig).
type Config struct {
	// Authorizer is the authorizer service: AclAuthorizerService.
	Authorizer string `json:"authorizer"`
	// AuthorizerConfig is its configuration.
	AuthorizerConfig AuthorizerConfig `json:"authorizerConfig"`
}

// AuthorizerConfig is AclAuthorizerService's configuration.
type AuthorizerConfig struct {
	// AclFile is the rules file's path (mounted from a Secret or ConfigMap).
	AclFile string `json:"aclFile"`
}

// authorizer is the filter.
type authorizer struct {
	rules *acl.Rules
}

func build(cfg *Config, env filter.Env) (filter.Filter, error) {
	switch cfg.Authorizer {
	case aclService, aclServiceFQCN:
	case "":
		return nil, fmt.Errorf("authorizer: required (%s)", aclService)
	default:
		return nil, fmt.Errorf("authorizer: %q is not implemented by kafkalink-proxy (it implements %s)", cfg.Authorizer, aclService)
	}
	if cfg.AuthorizerConfig.AclFile == "" {
		return nil, fmt.Errorf("authorizerConfig.aclFile: required")
	}
	src, err := env.ReadFile(cfg.AuthorizerConfig.AclFile)
	if err != nil {
		return nil, fmt.Errorf("authorizerConfig.aclFile: %w", err)
	}
	rules, err := acl.Parse(cfg.AuthorizerConfig.AclFile, src)
	if err != nil {
		return nil, fmt.Errorf("authorizerConfig.aclFile: %w", err)
	}
	return &authorizer{rules: rules}, nil
}

// Keys are every key below maxKey: the filter decides on each kmsg knows (enforce.go), and a
// request of any other is one the chain cannot decode, which closes the connection (fail
// closed: Kafka's keys end well below 128, and a broker refuses keys it does not know too).
func (a *authorizer) Keys() []int16 {
	keys := make([]int16, maxKey)
	for k := range keys {
		keys[k] = int16(k)
	}
	return keys
}

// connState is what the filter keeps per connection: the view of its subject's rules.
type connState struct {
	user string
	view *acl.View
}

// view is the rules that apply to the connection's subject now (a re-authentication may change
// it).
func (a *authorizer) view(c *filter.Conn) *acl.View {
	st := c.State(a, func() any { return &connState{view: a.rules.For("")} }).(*connState)
	user := c.Subject().User
	if user != st.user {
		// Only OnRequest calls view: a connection's requests are filtered one at a time.
		st.user, st.view = user, a.rules.For(user)
	}
	return st.view
}

// pending is what OnResponse needs of a request: the response's merge.
type pending func(resp kmsg.Response, v *acl.View)

// inFlight is a forwarded request's merge, with the view it was decided with: responses are
// filtered on another goroutine than requests, so OnResponse does not touch the connection's
// state.
type inFlight struct {
	merge pending
	view  *acl.View
}

func (a *authorizer) OnRequest(_ context.Context, x *filter.Exchange) error {
	v := a.view(x.Conn)
	e := enforcements[x.Key]
	if e == nil {
		resp, ok := refuse(x.Request)
		if !ok {
			// A response without an error code would say it succeeded; clients never send
			// a key ApiVersions does not offer.
			return fmt.Errorf("authorization: %s is not enforced (%s) and not offered in ApiVersions", kmsg.NameForKey(x.Key), refusedKeys[kmsg.Key(x.Key)])
		}
		x.Answer(resp)
		return nil
	}
	merge, answer := e(x, v)
	switch {
	case answer:
		resp := x.Request.ResponseKind()
		resp.SetVersion(x.Version)
		if merge != nil {
			merge(resp, v)
		}
		x.Answer(resp)
	case merge == nil:
		x.RequestUnchanged()
		x.ResponseNotNeeded()
	default:
		x.Set(a, inFlight{merge, v})
	}
	return nil
}

func (a *authorizer) OnResponse(_ context.Context, x *filter.Exchange) error {
	if f, ok := x.Get(a).(inFlight); ok {
		f.merge(x.Response, f.view)
	}
	return nil
}

// keepEnforced takes the keys the filter has no rule for out of an ApiVersions response, so
// that clients do not send them, and offers the keys that later name topics by id only up to
// the last version that names them.
func keepEnforced(r *kmsg.ApiVersionsResponse) {
	keys := r.ApiKeys[:0]
	for _, k := range r.ApiKeys {
		if k.ApiKey < 0 || int(k.ApiKey) >= maxKey || enforcements[k.ApiKey] == nil {
			continue
		}
		if top, ok := namedVersions[kmsg.Key(k.ApiKey)]; ok {
			k.MaxVersion = min(k.MaxVersion, top)
		}
		keys = append(keys, k)
	}
	r.ApiKeys = keys
}
