package binding

import (
	"strings"
	"testing"

	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

func lst(name string, typ strimzi.ListenerType, tls bool, auth strimzi.ListenerAuthentication) strimzi.Listener {
	return strimzi.Listener{Name: name, Port: 9092, Type: typ, TLS: tls, Authentication: auth}
}

// kafkaWith builds a Kafka whose status has a bootstrap address for every listener.
func kafkaWith(ls ...strimzi.Listener) *strimzi.Kafka {
	k := &strimzi.Kafka{Namespace: "kafka", Name: "my-cluster", Listeners: ls}
	for _, l := range ls {
		k.Status.Listeners = append(k.Status.Listeners, strimzi.ListenerStatus{Name: l.Name, BootstrapServers: l.Name + ".kafka.svc:9092"})
	}
	return k
}

func user(auth strimzi.UserAuthentication) *strimzi.KafkaUser {
	return &strimzi.KafkaUser{Namespace: "kafka", Name: "alice", Authentication: auth,
		Status: strimzi.KafkaUserStatus{Conditions: []strimzi.Condition{{Type: "Ready", Status: "True"}}}}
}

const (
	none   = strimzi.ListenerAuthNone
	scram  = strimzi.ListenerAuthSCRAMSHA512
	tlsA   = strimzi.ListenerAuthTLS
	custom = strimzi.ListenerAuthCustom
	oauth  = strimzi.ListenerAuthOAuth
	intl   = strimzi.ListenerInternal
)

func TestChooseListener(t *testing.T) {
	tests := map[string]struct {
		in         ListenerInput
		want       string // listener name, when the choice succeeds
		protocol   string
		bootstrap  string
		reason     string // failure reason, when it fails
		inMessage  string // a part of the failure message
		wantStatus bool
	}{
		"without a user the TLS listener without authentication beats the plain one": {
			in:   ListenerInput{Kafka: kafkaWith(lst("plain", intl, false, none), lst("tls", intl, true, none))},
			want: "tls", protocol: ProtocolSSL,
		},
		"the listener already in status is kept even if another would rank higher": {
			in:   ListenerInput{Kafka: kafkaWith(lst("plain", intl, false, none), lst("tls", intl, true, none)), Current: "plain"},
			want: "plain", protocol: ProtocolPlaintext,
		},
		"an internal plain listener beats an external TLS one": {
			in:   ListenerInput{Kafka: kafkaWith(lst("lb", strimzi.ListenerLoadBalancer, true, none), lst("plain", intl, false, none))},
			want: "plain", protocol: ProtocolPlaintext,
		},
		"cluster-ip counts as in-cluster like internal": {
			in:   ListenerInput{Kafka: kafkaWith(lst("a", strimzi.ListenerNodePort, true, none), lst("z", strimzi.ListenerClusterIP, true, none))},
			want: "z", protocol: ProtocolSSL,
		},
		"the seed's type service counts as in-cluster like internal": {
			in:   ListenerInput{Kafka: kafkaWith(lst("a", strimzi.ListenerNodePort, true, none), lst("z", strimzi.ListenerService, true, none))},
			want: "z", protocol: ProtocolSSL,
		},
		"equal listeners are ordered by name": {
			in:   ListenerInput{Kafka: kafkaWith(lst("b", intl, true, none), lst("a", intl, true, none), lst("c", intl, true, none))},
			want: "a", protocol: ProtocolSSL,
		},
		"with external listeners allowed, every non-internal type ranks equally and falls back to name order": {
			in: ListenerInput{Kafka: kafkaWith(lst("route", strimzi.ListenerRoute, true, none), lst("ingress", strimzi.ListenerIngress, true, none),
				lst("tlsroute", strimzi.ListenerTLSRoute, true, none), lst("np", strimzi.ListenerNodePort, true, none)), AllowExternal: true},
			want: "ingress", protocol: ProtocolSSL,
		},
		"a SCRAM user gets the SCRAM listener over SASL_SSL": {
			in: ListenerInput{Kafka: kafkaWith(lst("plain", intl, false, none), lst("mtls", intl, true, tlsA),
				lst("scram", intl, true, scram)), User: user(strimzi.UserAuthSCRAMSHA512)},
			want: "scram", protocol: ProtocolSASLSSL,
		},
		"a SCRAM user on a plain SCRAM listener gets SASL_PLAINTEXT": {
			in:   ListenerInput{Kafka: kafkaWith(lst("plain", intl, false, scram)), User: user(strimzi.UserAuthSCRAMSHA512)},
			want: "plain", protocol: ProtocolSASLPlaintext,
		},
		"a TLS user gets the internal mTLS listener before the route": {
			in: ListenerInput{Kafka: kafkaWith(lst("route", strimzi.ListenerRoute, true, tlsA), lst("scram", intl, true, scram),
				lst("tls", intl, true, tlsA)), User: user(strimzi.UserAuthTLS)},
			want: "tls", protocol: ProtocolSSL,
		},
		"a tls-external user fits tls-auth listeners too": {
			in:   ListenerInput{Kafka: kafkaWith(lst("scram", intl, true, scram), lst("mtls", strimzi.ListenerClusterIP, true, tlsA)), User: user(strimzi.UserAuthTLSExternal)},
			want: "mtls", protocol: ProtocolSSL,
		},
		"only an external listener fits: not Ready, naming it and the fields that opt in (step 8)": {
			in:     ListenerInput{Kafka: kafkaWith(lst("scram", intl, true, scram), lst("route", strimzi.ListenerRoute, true, tlsA)), User: user(strimzi.UserAuthTLSExternal)},
			reason: ReasonNoInternalListener, inMessage: "route (route) would, from outside the cluster: name one in spec.kafka.listener.name, or set spec.allowExternalListener: true",
		},
		"only external listeners at all: not Ready": {
			in:     ListenerInput{Kafka: kafkaWith(lst("lb", strimzi.ListenerLoadBalancer, true, none), lst("np", strimzi.ListenerNodePort, true, none))},
			reason: ReasonNoInternalListener, inMessage: "has no in-cluster listener (type internal or cluster-ip) that can serve a connection without a KafkaUser; lb (loadbalancer), np (nodeport) would",
		},
		"a tlsroute listener is outside the cluster too": {
			in:     ListenerInput{Kafka: kafkaWith(lst("gw", strimzi.ListenerTLSRoute, true, none))},
			reason: ReasonNoInternalListener, inMessage: "gw (tlsroute)",
		},
		"an external listener in status stays only while external listeners are allowed": {
			in:     ListenerInput{Kafka: kafkaWith(lst("lb", strimzi.ListenerLoadBalancer, true, none)), Current: "lb"},
			reason: ReasonNoInternalListener, inMessage: "lb (loadbalancer)",
		},
		"with external listeners allowed, an external listener is chosen when no internal one fits": {
			in:   ListenerInput{Kafka: kafkaWith(lst("scram", intl, true, scram), lst("route", strimzi.ListenerRoute, true, tlsA)), User: user(strimzi.UserAuthTLSExternal), AllowExternal: true},
			want: "route", protocol: ProtocolSSL,
		},
		"with external listeners allowed, an in-cluster one still wins": {
			in:   ListenerInput{Kafka: kafkaWith(lst("lb", strimzi.ListenerLoadBalancer, true, none), lst("plain", intl, false, none)), AllowExternal: true},
			want: "plain", protocol: ProtocolPlaintext,
		},
		"a named external listener needs no opt-in": {
			in:   ListenerInput{Kafka: kafkaWith(lst("lb", strimzi.ListenerLoadBalancer, true, none), lst("plain", intl, false, none)), Requested: "lb"},
			want: "lb", protocol: ProtocolSSL,
		},
		"no listener fits at all: NoCompatibleListener, not NoInternalListener": {
			in:     ListenerInput{Kafka: kafkaWith(lst("lb", strimzi.ListenerLoadBalancer, true, scram)), User: user(strimzi.UserAuthTLS)},
			reason: ReasonNoCompatibleListener,
		},
		"a current listener that no longer fits the user is passed over": {
			in:   ListenerInput{Kafka: kafkaWith(lst("scram", intl, true, scram), lst("tls", intl, true, tlsA)), User: user(strimzi.UserAuthTLS), Current: "scram"},
			want: "tls", protocol: ProtocolSSL,
		},
		"a current listener that was removed is ignored": {
			in:   ListenerInput{Kafka: kafkaWith(lst("tls", intl, true, none)), Current: "gone"},
			want: "tls", protocol: ProtocolSSL,
		},
		"the requested listener wins over the current one": {
			in:   ListenerInput{Kafka: kafkaWith(lst("plain", intl, false, none), lst("tls", intl, true, none)), Requested: "plain", Current: "tls"},
			want: "plain", protocol: ProtocolPlaintext,
		},
		"a requested external listener is used even though internal ones fit": {
			in:   ListenerInput{Kafka: kafkaWith(lst("tls", intl, true, tlsA), lst("ext", strimzi.ListenerIngress, true, tlsA)), Requested: "ext", User: user(strimzi.UserAuthTLS)},
			want: "ext", protocol: ProtocolSSL,
		},
		"a requested listener that does not exist is refused and the others are named": {
			in:     ListenerInput{Kafka: kafkaWith(lst("plain", intl, false, none), lst("tls", intl, true, none)), Requested: "secure"},
			reason: ReasonListenerNotFound, inMessage: `has no listener "secure" (it has "plain", "tls")`,
		},
		"a requested SCRAM listener is refused for a TLS user": {
			in:     ListenerInput{Kafka: kafkaWith(lst("scram", intl, true, scram)), Requested: "scram", User: user(strimzi.UserAuthTLS)},
			reason: ReasonListenerIncompatible, inMessage: "requires scram-sha-512 authentication and the user uses tls",
		},
		"a requested mTLS listener is refused without a user": {
			in:     ListenerInput{Kafka: kafkaWith(lst("mtls", intl, true, tlsA)), Requested: "mtls"},
			reason: ReasonListenerIncompatible, inMessage: "requires tls client authentication and no KafkaUser is named",
		},
		"a requested listener without authentication is refused for a SCRAM user": {
			in:     ListenerInput{Kafka: kafkaWith(lst("plain", intl, false, none)), Requested: "plain", User: user(strimzi.UserAuthSCRAMSHA512)},
			reason: ReasonListenerIncompatible, inMessage: "has no authentication",
		},
		"a requested custom listener is refused": {
			in:     ListenerInput{Kafka: kafkaWith(lst("c", intl, true, custom)), Requested: "c"},
			reason: ReasonListenerIncompatible, inMessage: "uses custom authentication, which kafkalink cannot bind",
		},
		"custom listeners never fit, oauth ones need an OAuth client": {
			in:     ListenerInput{Kafka: kafkaWith(lst("c", intl, true, custom), lst("o", intl, true, oauth))},
			reason: ReasonNoCompatibleListener, inMessage: "c (it uses custom authentication, which kafkalink cannot bind); o (it requires oauth authentication and the connection has no spec.oauth client)",
		},
		"an OAuth client fits an oauth listener only": {
			in: ListenerInput{Kafka: kafkaWith(lst("s", intl, true, scram), lst("o", intl, true, oauth), lst("p", intl, true, none)),
				OAuth: &OAuthCredentials{SecretName: "ns/creds"}},
			want: "o", protocol: ProtocolSASLSSL,
		},
		"a listener with an unknown authentication type never fits": {
			in:     ListenerInput{Kafka: kafkaWith(lst("x", intl, true, "gssapi"))},
			reason: ReasonNoCompatibleListener, inMessage: `authentication "gssapi"`,
		},
		"a tls-auth listener without TLS never fits": {
			in:     ListenerInput{Kafka: kafkaWith(lst("odd", intl, false, tlsA)), User: user(strimzi.UserAuthTLS)},
			reason: ReasonNoCompatibleListener, inMessage: "tls authentication without TLS",
		},
		"a connection without a user on a Kafka with only SCRAM listeners has no listener": {
			in:     ListenerInput{Kafka: kafkaWith(lst("scram", intl, true, scram))},
			reason: ReasonNoCompatibleListener, inMessage: "a connection without a KafkaUser",
		},
		"a Kafka without listeners has no listener": {
			in:     ListenerInput{Kafka: kafkaWith()},
			reason: ReasonNoCompatibleListener, inMessage: "Kafka kafka/my-cluster has no listeners",
		},
		"a missing Kafka is reported": {
			in:     ListenerInput{},
			reason: ReasonKafkaNotFound,
		},
		"a user without authentication is refused before any listener is looked at": {
			in:     ListenerInput{Kafka: kafkaWith(lst("plain", intl, false, none)), User: user(strimzi.UserAuthNone)},
			reason: ReasonUserAuthenticationUnsupported, inMessage: "has no spec.authentication",
		},
		"a user with an unknown authentication type is refused": {
			in:     ListenerInput{Kafka: kafkaWith(lst("plain", intl, false, none)), User: user("scram-sha-256")},
			reason: ReasonUserAuthenticationUnsupported, inMessage: `"scram-sha-256"`,
		},
		"a chosen listener without status is not ready": {
			in: ListenerInput{Kafka: &strimzi.Kafka{Namespace: "kafka", Name: "my-cluster",
				Listeners: []strimzi.Listener{lst("tls", intl, true, none)}}},
			reason: ReasonBootstrapNotReady, inMessage: `no bootstrap address for listener "tls"`,
		},
		"a not-ready chosen listener is not skipped for a ready one": {
			in: ListenerInput{Kafka: &strimzi.Kafka{Namespace: "kafka", Name: "my-cluster",
				Listeners: []strimzi.Listener{lst("plain", intl, false, none), lst("tls", intl, true, none)},
				Status:    strimzi.KafkaStatus{Listeners: []strimzi.ListenerStatus{{Name: "plain", BootstrapServers: "p:9092"}}}}},
			reason: ReasonBootstrapNotReady,
		},
		"bootstrap servers fall back to the status addresses": {
			in: ListenerInput{Kafka: &strimzi.Kafka{Name: "k",
				Listeners: []strimzi.Listener{lst("external", strimzi.ListenerNodePort, true, none)},
				Status: strimzi.KafkaStatus{Listeners: []strimzi.ListenerStatus{{Name: "external", Addresses: []strimzi.ListenerAddress{
					{Host: "10.0.0.1", Port: 31001}, {Host: "fd00::1", Port: 31001}, {Host: "10.0.0.1", Port: 31001}, {Host: "", Port: 1}}}}}}, AllowExternal: true},
			want: "external", protocol: ProtocolSSL, bootstrap: "10.0.0.1:31001,[fd00::1]:31001",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, f := ChooseListener(tc.in)
			if tc.reason != "" {
				if f == nil {
					t.Fatalf("ChooseListener chose %q, want failure %s", got.Listener.Name, tc.reason)
				}
				if f.Reason != tc.reason || !strings.Contains(f.Message, tc.inMessage) {
					t.Fatalf("failure = %s: %s\nwant reason %s with message containing %q", f.Reason, f.Message, tc.reason, tc.inMessage)
				}
				return
			}
			if f != nil {
				t.Fatalf("ChooseListener failed: %v", f)
			}
			if got.Listener.Name != tc.want || got.SecurityProtocol != tc.protocol {
				t.Errorf("chose %q (%s), want %q (%s)", got.Listener.Name, got.SecurityProtocol, tc.want, tc.protocol)
			}
			wantBootstrap := tc.bootstrap
			if wantBootstrap == "" {
				wantBootstrap = tc.want + ".kafka.svc:9092"
			}
			if got.BootstrapServers != wantBootstrap {
				t.Errorf("bootstrap = %q, want %q", got.BootstrapServers, wantBootstrap)
			}
		})
	}
}

func TestChooseListenerDoesNotDependOnSpecOrder(t *testing.T) {
	ls := []strimzi.Listener{
		lst("ext", strimzi.ListenerRoute, true, none), lst("b", intl, true, none), lst("a", intl, false, none),
		lst("c", strimzi.ListenerClusterIP, true, none), lst("s", intl, true, scram),
	}
	// Every rotation of the spec gives the same choice.
	for i := range ls {
		rot := append(append([]strimzi.Listener{}, ls[i:]...), ls[:i]...)
		got, f := ChooseListener(ListenerInput{Kafka: kafkaWith(rot...)})
		if f != nil {
			t.Fatal(f)
		}
		if got.Listener.Name != "b" {
			t.Errorf("rotation %d chose %q, want b", i, got.Listener.Name)
		}
	}
}

func TestSecurityProtocol(t *testing.T) {
	tests := map[string]struct {
		l    strimzi.Listener
		want string
	}{
		"plain without authentication is PLAINTEXT":    {lst("a", intl, false, none), ProtocolPlaintext},
		"TLS without authentication is SSL":            {lst("a", intl, true, none), ProtocolSSL},
		"TLS with client certificates is SSL":          {lst("a", intl, true, tlsA), ProtocolSSL},
		"plain with SCRAM is SASL_PLAINTEXT":           {lst("a", intl, false, scram), ProtocolSASLPlaintext},
		"TLS with SCRAM is SASL_SSL":                   {lst("a", intl, true, scram), ProtocolSASLSSL},
		"an external route with SCRAM is SASL_SSL too": {lst("a", strimzi.ListenerRoute, true, scram), ProtocolSASLSSL},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := SecurityProtocol(tc.l); got != tc.want {
				t.Errorf("SecurityProtocol = %s, want %s", got, tc.want)
			}
		})
	}
}
