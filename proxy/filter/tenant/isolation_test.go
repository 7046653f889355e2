package tenant

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

func TestEntityIsolationConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		config string
		err    string
	}{
		"Kroxylicious' example":         {config: `{"entityTypes":["GROUP_ID","TRANSACTIONAL_ID"],"mapper":"PrincipalEntityNameMapperService"}`},
		"with its mapper config":        {config: `{"entityTypes":["GROUP_ID"],"mapper":"PrincipalEntityNameMapperService","mapperConfig":{"separator":"_","principalType":"io.kroxylicious.proxy.authentication.User"}}`},
		"the fully qualified mapper":    {config: `{"entityTypes":["GROUP_ID"],"mapper":"io.kroxylicious.filter.entityisolation.PrincipalEntityNameMapperService"}`},
		"no entity types":               {config: `{"mapper":"PrincipalEntityNameMapperService"}`, err: "entityTypes is required"},
		"TOPIC_NAME as in Kroxylicious": {config: `{"entityTypes":["TOPIC_NAME"],"mapper":"PrincipalEntityNameMapperService"}`, err: "TOPIC_NAME is not supported"},
		"an unknown entity type":        {config: `{"entityTypes":["USER"],"mapper":"PrincipalEntityNameMapperService"}`, err: `"USER" is not GROUP_ID or TRANSACTIONAL_ID`},
		"another mapper":                {config: `{"entityTypes":["GROUP_ID"],"mapper":"Custom"}`, err: `mapper "Custom"`},
		"another principal type":        {config: `{"entityTypes":["GROUP_ID"],"mapper":"PrincipalEntityNameMapperService","mapperConfig":{"principalType":"com.example.Team"}}`, err: "principalType"},
		"an empty separator":            {config: `{"entityTypes":["GROUP_ID"],"mapper":"PrincipalEntityNameMapperService","mapperConfig":{"separator":""}}`, err: "separator"},
		"an illegal separator":          {config: `{"entityTypes":["GROUP_ID"],"mapper":"PrincipalEntityNameMapperService","mapperConfig":{"separator":":"}}`, err: "separator"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := filter.New(EntityIsolationType, []byte(tc.config), filter.Env{})
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
}

func TestMultiTenantConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		config, vc, prefix, err string
	}{
		"the virtual cluster's name":            {config: `{}`, vc: "teama", prefix: "teama-"},
		"the KafkaRoute of an operator's name":  {config: `{}`, vc: "payments/tls/payments-%.svc.cluster.local", prefix: "payments-"},
		"a custom prefix":                       {config: `{"tenantPrefix":"team_a"}`, vc: "x", prefix: "team_a-"},
		"a custom separator":                    {config: `{"prefixResourceNameSeparator":"_"}`, vc: "team-a", prefix: "team-a_"},
		"the operator's check (no cluster)":     {config: `{}`, prefix: "tenant-"},
		"a route name containing the separator": {config: `{}`, vc: "team-a/tls/team-a-%.svc", prefix: "team_a-"},
		"a route name and a dotted separator":   {config: `{"prefixResourceNameSeparator":"."}`, vc: "team.a/tls/x", prefix: "team_a."},
		"a tenantPrefix containing it":          {config: `{"tenantPrefix":"team-a"}`, vc: "x", err: `contains the separator "-"`},
		"a hand-written name with _ and sep _":  {config: `{"prefixResourceNameSeparator":"_"}`, vc: "team_a", err: `contains the separator "_"`},
		"an illegal tenantPrefix":               {config: `{"tenantPrefix":"team a"}`, err: "not a legal Kafka name prefix"},
		"an empty separator":                    {config: `{"prefixResourceNameSeparator":""}`, vc: "a", err: "must not be empty"},
		"an illegal virtual cluster name":       {config: `{}`, vc: "a*b", err: "the virtual cluster's name"},
		"an unknown field":                      {config: `{"prefix":"x"}`, err: "unknown field"},
		"Kroxylicious' config on another route": {config: `{"prefixResourceNameSeparator":"."}`, vc: "orders", prefix: "orders."},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := filter.New(MultiTenantType, []byte(tc.config), filter.Env{VirtualCluster: tc.vc})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p := f.(*multiTenant).n.prefix; p != tc.prefix {
				t.Errorf("prefix %q, want %q", p, tc.prefix)
			}
		})
	}
}

func isolationChain(t *testing.T, cfg string) *filter.Chain {
	t.Helper()
	c, err := filter.NewChain(context.Background(), "vc", []config.Filter{{Name: "iso", Type: EntityIsolationType, Config: []byte(cfg)}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func frame(req kmsg.Request) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, 9)
}

// TestEntityIsolationSubjects: a certificate's CN (with useCertificateCommonName) or a SASL user
// prefixes the group; a connection without a subject, or with a name Kafka would not accept,
// gets GROUP_AUTHORIZATION_FAILED from FindCoordinator and is closed on a JoinGroup; an
// idempotent producer's InitProducerId needs no subject.
func TestEntityIsolationSubjects(t *testing.T) {
	c := isolationChain(t, `{"entityTypes":["GROUP_ID","TRANSACTIONAL_ID"],"mapper":"PrincipalEntityNameMapperService","mapperConfig":{"useCertificateCommonName":true}}`)
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version, find.CoordinatorKeys = 4, []string{"g"}
	for name, tc := range map[string]struct {
		subject filter.Subject
		key     string
		code    int16
	}{
		"a certificate":              {subject: filter.Subject{User: "CN=alice,O=example", Mechanism: "TLS"}, key: "alice-g"},
		"a SASL user":                {subject: filter.Subject{User: "bob", Mechanism: "SCRAM-SHA-256"}, key: "bob-g"},
		"no subject":                 {code: kerr.GroupAuthorizationFailed.Code},
		"a user with the separator":  {subject: filter.Subject{User: "carol-x", Mechanism: "PLAIN"}, code: kerr.GroupAuthorizationFailed.Code},
		"a certificate without a CN": {subject: filter.Subject{User: "O=example", Mechanism: "TLS"}, code: kerr.GroupAuthorizationFailed.Code},
	} {
		t.Run(name, func(t *testing.T) {
			conn := c.ForConnection()
			conn.SetSubject(tc.subject)
			fwd, answer, _, err := conn.Request(frame(find))
			if err != nil {
				t.Fatal(err)
			}
			if tc.code != 0 {
				resp := kmsg.NewPtrFindCoordinatorResponse()
				resp.Version = 4
				if answer == nil || resp.ReadFrom(answer[9:]) != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != tc.code {
					t.Fatalf("answer %x, want code %d", answer, tc.code)
				}
				join := kmsg.NewPtrJoinGroupRequest()
				join.Group, join.ProtocolType = "g", "consumer"
				if _, _, _, err := conn.Request(frame(join)); err == nil {
					t.Error("a JoinGroup without a subject was forwarded")
				}
				init := kmsg.NewPtrInitProducerIDRequest()
				init.Version = 4
				if fwd, _, _, err := conn.Request(frame(init)); err != nil || fwd == nil {
					t.Errorf("an idempotent producer's InitProducerId: %v", err)
				}
				return
			}
			got := kmsg.NewPtrFindCoordinatorRequest()
			got.Version = 4
			if err := got.ReadFrom(fwd[4+2+2+4+2+1+1:]); err != nil || len(got.CoordinatorKeys) != 1 || got.CoordinatorKeys[0] != tc.key {
				t.Errorf("forwarded %v (%v), want key %s", got.CoordinatorKeys, err, tc.key)
			}
		})
	}
}
