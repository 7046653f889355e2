package binding

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// tlsrouteGateway is a Gateway with a terminating listener "kafka" (certificate my-gw-tls) and a
// passthrough listener "passthrough".
func tlsrouteGateway() *gatewayv1.Gateway {
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "kafka-gateway"},
		Spec: gatewayv1.GatewaySpec{Listeners: []gatewayv1.Listener{
			{Name: "passthrough", Protocol: gatewayv1.TLSProtocolType, Port: 443,
				TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModePassthrough)}},
			{Name: "kafka", Protocol: gatewayv1.TLSProtocolType, Port: 443,
				TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModeTerminate),
					CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "my-gw-tls"}}}},
		}},
	}
}

func TestGatewayCertificateRef(t *testing.T) {
	gw := tlsrouteGateway()
	lookup := func(ns, name string) *gatewayv1.Gateway {
		if ns == gw.Namespace && name == gw.Name {
			return gw
		}
		return nil
	}
	ref := func(ns, section string) strimzi.GatewayParentRef {
		return strimzi.GatewayParentRef{Group: strimzi.GatewayAPIGroup, Kind: strimzi.KindGateway, Namespace: ns, Name: "kafka-gateway", SectionName: section}
	}
	for name, tc := range map[string]struct {
		refs           []strimzi.GatewayParentRef
		wantSecret     string
		wantProblem    string
		kafkaNamespace string
	}{
		"the named terminating listener":             {refs: []strimzi.GatewayParentRef{ref("infra", "kafka")}, wantSecret: "infra/my-gw-tls"},
		"without sectionName, the first terminating": {refs: []strimzi.GatewayParentRef{ref("infra", "")}, wantSecret: "infra/my-gw-tls"},
		"the Kafka's namespace by default":           {refs: []strimzi.GatewayParentRef{ref("", "kafka")}, kafkaNamespace: "infra", wantSecret: "infra/my-gw-tls"},
		"a passthrough listener":                     {refs: []strimzi.GatewayParentRef{ref("infra", "passthrough")}, wantProblem: "does not terminate TLS"},
		"a missing Gateway":                          {refs: []strimzi.GatewayParentRef{ref("elsewhere", "kafka")}, wantProblem: "Gateway elsewhere/kafka-gateway not found"},
		"no parentRefs":                              {wantProblem: "names no configuration.parentRefs"},
		"a ListenerSet parent": {refs: []strimzi.GatewayParentRef{{Group: strimzi.GatewayAPIGroup, Kind: "ListenerSet", Name: "ls"}},
			wantProblem: "is not a Gateway"},
		"a later parent that resolves": {refs: []strimzi.GatewayParentRef{ref("elsewhere", "kafka"), ref("infra", "kafka")}, wantSecret: "infra/my-gw-tls"},
	} {
		t.Run(name, func(t *testing.T) {
			l := strimzi.Listener{Name: "external", Type: strimzi.ListenerTLSRoute, ParentRefs: tc.refs}
			ns, secret, problem := GatewayCertificateRef(l, tc.kafkaNamespace, lookup)
			if tc.wantSecret != "" && ns+"/"+secret != tc.wantSecret {
				t.Errorf("secret %s/%s (problem %q), want %s", ns, secret, problem, tc.wantSecret)
			}
			if !strings.Contains(problem, tc.wantProblem) || (tc.wantProblem == "") != (problem == "") {
				t.Errorf("problem %q, want %q", problem, tc.wantProblem)
			}
		})
	}
}

func TestTLSRouteListenerWithoutTLSIsBoundAsTLSToTheGateway(t *testing.T) {
	p := loadPKI(t)
	l := strimzi.Listener{Name: "external", Port: 9094, Type: strimzi.ListenerTLSRoute, TLS: false, Authentication: strimzi.ListenerAuthSCRAMSHA512}
	choice := Choice{Listener: l, BootstrapServers: "kafka.example.com:443", SecurityProtocol: SecurityProtocol(l)}
	scramU := parseUserYAML(t, scramUser)
	gwCA := p.caSecret() // plays the Gateway listener's certificate Secret, with its ca.crt
	data, f := AssembleSecret(SecretInput{Choice: choice, User: scramU, UserSecret: p.scramSecret(),
		GatewayTrust: map[string]GatewayTrust{"external": {Secret: gwCA}}})
	if f != nil {
		t.Fatal(f)
	}
	if got := string(data[KeySecurityProtocol]); got != ProtocolSASLSSL {
		t.Errorf("security.protocol %s, want %s: TLS ends at the Gateway, not before the client", got, ProtocolSASLSSL)
	}
	if got := len(decodePEMCerts(t, data[KeyTruststoreCRT])); got != 1 {
		t.Errorf("the truststore holds %d certificates, want the Gateway certificate's CA", got)
	}
	_, f = AssembleSecret(SecretInput{Choice: choice, User: scramU, UserSecret: p.scramSecret(),
		GatewayTrust: map[string]GatewayTrust{"external": {Problem: "Gateway infra/kafka-gateway not found"}}})
	if f == nil || f.Reason != ReasonGatewayCertificateUnresolved || !strings.Contains(f.Message, "Gateway infra/kafka-gateway not found") {
		t.Errorf("without the Gateway's certificate: %v, want %s naming why", f, ReasonGatewayCertificateUnresolved)
	}
	// tls: true is TLS passthrough to the brokers: the cluster CA, as before.
	l.TLS = true
	if got := SecurityProtocol(l); got != ProtocolSASLSSL {
		t.Errorf("tls: true: %s", got)
	}
}
