package tenant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter"
)

// EntityIsolationConfig is EntityIsolation's configuration, in Kroxylicious' shape.
type EntityIsolationConfig struct {
	EntityTypes  []string      `json:"entityTypes"`
	Mapper       string        `json:"mapper"`
	MapperConfig *MapperConfig `json:"mapperConfig,omitempty"`
}

// MapperConfig is PrincipalEntityNameMapperService's configuration.
type MapperConfig struct {
	Separator     *string `json:"separator,omitempty"`
	PrincipalType string  `json:"principalType,omitempty"`
	// UseCertificateCommonName (kafkalink's) names a client by its certificate's CN instead of
	// its subject DN, whose '=' and ',' Kafka does not allow in group ids.
	UseCertificateCommonName bool `json:"useCertificateCommonName,omitempty"`
}

// The mapper and principal type Kroxylicious names, short and fully qualified.
var (
	mappers        = []string{"PrincipalEntityNameMapperService", "io.kroxylicious.filter.entityisolation.PrincipalEntityNameMapperService"}
	principalTypes = []string{"", "User", "io.kroxylicious.proxy.authentication.User"}
	entityKinds    = map[string]kind{"GROUP_ID": groups, "TRANSACTIONAL_ID": txns}
)

type entityIsolation struct {
	kinds      kind
	sep        string
	commonName bool
	keys       []int16
}

func newEntityIsolation(cfg *EntityIsolationConfig, _ filter.Env) (filter.Filter, error) {
	e := &entityIsolation{sep: "-"}
	if len(cfg.EntityTypes) == 0 {
		return nil, errors.New("entityTypes is required: GROUP_ID, TRANSACTIONAL_ID or both")
	}
	for _, t := range cfg.EntityTypes {
		k, ok := entityKinds[t]
		if t == "TOPIC_NAME" {
			return nil, errors.New("entityTypes: TOPIC_NAME is not supported (as in Kroxylicious); MultiTenant prefixes topics per virtual cluster")
		}
		if !ok {
			return nil, fmt.Errorf("entityTypes: %q is not GROUP_ID or TRANSACTIONAL_ID", t)
		}
		e.kinds |= k
	}
	if !slices.Contains(mappers, cfg.Mapper) {
		return nil, fmt.Errorf("mapper %q: kafkalink-proxy implements PrincipalEntityNameMapperService only", cfg.Mapper)
	}
	if m := cfg.MapperConfig; m != nil {
		if !slices.Contains(principalTypes, m.PrincipalType) {
			return nil, fmt.Errorf("mapperConfig.principalType %q: kafkalink-proxy's subjects have one principal, io.kroxylicious.proxy.authentication.User", m.PrincipalType)
		}
		if m.Separator != nil {
			e.sep = *m.Separator
		}
		e.commonName = m.UseCertificateCommonName
	}
	if e.sep == "" || !legalName.MatchString(e.sep) {
		return nil, fmt.Errorf("mapperConfig.separator %q must be a non-empty legal Kafka name (letters, digits, '.', '_', '-')", e.sep)
	}
	e.keys = keys(e.kinds)
	return e, nil
}

func (e *entityIsolation) Keys() []int16 { return e.keys }

// principal is the name a subject's entities are prefixed with.
func (e *entityIsolation) principal(s filter.Subject) (string, error) {
	if s.Anonymous() {
		return "", errors.New("the connection has no authenticated subject (a client certificate or a SASL user)")
	}
	name := s.User
	if e.commonName && s.Mechanism == "TLS" {
		cn, err := commonName(s.User)
		if err != nil {
			return "", err
		}
		name = cn
	}
	if strings.Contains(name, e.sep) {
		// As Kroxylicious: "alice" and "alice-x" would share "alice-x-g".
		return "", fmt.Errorf("principal %q contains the mapping separator %q", name, e.sep)
	}
	if err := checkTenant("principal", name, e.sep); err != nil {
		return "", err
	}
	return name, nil
}

// commonName is the CN of an RFC 2253 distinguished name.
func commonName(dn string) (string, error) {
	for _, part := range strings.Split(dn, ",") { // a CN holding an escaped comma is refused by checkTenant anyway
		if k, v, ok := strings.Cut(part, "="); ok && strings.EqualFold(strings.TrimSpace(k), "CN") {
			return v, nil
		}
	}
	return "", fmt.Errorf("the certificate subject %q has no CN", dn)
}

// OnRequest prefixes the request's group and transactional ids with the subject's name. A
// connection without a usable subject gets GROUP_AUTHORIZATION_FAILED or
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED from FindCoordinator and InitProducerId (the first
// requests that name one), and is closed on any other request that names one, as Kroxylicious
// closes it.
func (e *entityIsolation) OnRequest(_ context.Context, x *filter.Exchange) error {
	if action(x.Key, e.kinds) == "refuse" {
		return refused(x.Key, EntityIsolationType)
	}
	if !e.namesEntity(x.Request) {
		if x.Key != kmsg.ApiVersions.Int16() {
			// An idempotent producer's Produce, a coordinator of a kind not isolated: nothing
			// to rename either way.
			x.RequestUnchanged()
			x.ResponseNotNeeded()
		}
		return nil
	}
	name, err := e.principal(x.Conn.Subject())
	if err != nil {
		if answer := authorizationError(x.Request, err); answer != nil {
			x.Answer(answer)
			return nil
		}
		return fmt.Errorf("%s: %s names a group or transactional id: %w", EntityIsolationType, kmsg.NameForKey(x.Key), err)
	}
	n := namer{prefix: name + e.sep, kinds: e.kinds}
	st := &isolated{n: n}
	if r, ok := x.Request.(*kmsg.FindCoordinatorRequest); ok {
		st.coordinator = coordinatorKind(r.CoordinatorType)
	}
	x.Set(e, st)
	answer, err := n.request(x)
	if answer != nil {
		x.Answer(answer)
	}
	if err == nil && answer == nil {
		n.dataPath(x) // a transactional Produce's response names no transactional id
	}
	return err
}

// isolated is what an exchange keeps for its response.
type isolated struct {
	n           namer
	coordinator kind
}

// namesEntity reports whether a request names a group or transactional id the filter isolates:
// an idempotent producer's Produce and InitProducerId name none, nor does a FindCoordinator of a
// kind not isolated.
func (e *entityIsolation) namesEntity(req kmsg.Request) bool {
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		return false
	case *kmsg.ProduceRequest:
		return r.TransactionID != nil && *r.TransactionID != "" && e.kinds&txns != 0
	case *kmsg.InitProducerIDRequest:
		return r.TransactionalID != nil && *r.TransactionalID != "" && e.kinds&txns != 0
	case *kmsg.FindCoordinatorRequest:
		return coordinatorKind(r.CoordinatorType)&e.kinds != 0
	}
	return true
}

// authorizationError answers FindCoordinator and InitProducerId of a client without a usable
// subject with Kafka's authorization error for what they name.
func authorizationError(req kmsg.Request, why error) kmsg.Response {
	msg := "kafkalink-proxy EntityIsolation: " + why.Error()
	switch r := req.(type) {
	case *kmsg.FindCoordinatorRequest:
		code := kerr.GroupAuthorizationFailed.Code
		if coordinatorKind(r.CoordinatorType) == txns {
			code = kerr.TransactionalIDAuthorizationFailed.Code
		}
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID = code, &msg, -1
		for _, k := range r.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.ErrorCode, c.ErrorMessage = k, -1, code, &msg
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	case *kmsg.InitProducerIDRequest:
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = kerr.TransactionalIDAuthorizationFailed.Code, -1, -1
		return resp
	}
	return nil
}

// OnResponse strips the subject's prefix and hides others' groups and transactions.
func (e *entityIsolation) OnResponse(_ context.Context, x *filter.Exchange) error {
	if r, ok := x.Response.(*kmsg.ApiVersionsResponse); ok {
		apiVersions(r, e.kinds)
		return nil
	}
	st, ok := x.Get(e).(*isolated)
	if !ok {
		return nil // the request named no entity
	}
	st.n.response(x.Response, st.coordinator, nil) // the cluster is not isolated
	return nil
}
