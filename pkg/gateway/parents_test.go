package gateway

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

// A parentRef's TLSRoutes attach to the TLS listeners it selects; any of them that terminates
// TLS (Terminate, or no mode, Gateway API's default) would hand the proxy plain TCP.
func TestTerminatingListener(t *testing.T) {
	mode := func(m gatewayv1.TLSModeType) *gatewayv1.ListenerTLSConfig {
		return &gatewayv1.ListenerTLSConfig{Mode: &m}
	}
	gw := &gatewayv1.Gateway{Spec: gatewayv1.GatewaySpec{Listeners: []gatewayv1.Listener{
		{Name: "web", Port: 443, Protocol: gatewayv1.HTTPSProtocolType, TLS: mode(gatewayv1.TLSModeTerminate)},
		{Name: "pass", Port: 9443, Protocol: gatewayv1.TLSProtocolType, TLS: mode(gatewayv1.TLSModePassthrough)},
		{Name: "term", Port: 9444, Protocol: gatewayv1.TLSProtocolType, TLS: mode(gatewayv1.TLSModeTerminate)},
		{Name: "default", Port: 9445, Protocol: gatewayv1.TLSProtocolType, TLS: &gatewayv1.ListenerTLSConfig{}},
	}}}
	tests := map[string]struct {
		section string
		port    int32
		want    string
	}{
		"a Passthrough listener by name":                     {section: "pass"},
		"a Terminate listener by name":                       {section: "term", want: "term"},
		"a TLS listener without a mode terminates":           {section: "default", want: "default"},
		"an HTTPS listener takes no TLSRoute":                {section: "web"},
		"a Passthrough listener by port":                     {port: 9443},
		"a Terminate listener by port":                       {port: 9444, want: "term"},
		"every listener, when the parentRef selects none":    {want: "term"},
		"a name and a port that select no listener together": {section: "term", port: 9443},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := kroxyliciousv1alpha1.GatewayParentReference{Name: "gw"}
			if tc.section != "" {
				p.SectionName = ptr.To(kroxyliciousv1alpha1.SectionName(tc.section))
			}
			if tc.port != 0 {
				p.Port = ptr.To(kroxyliciousv1alpha1.PortNumber(tc.port))
			}
			got := ""
			if l := terminatingListener(gw, p); l != nil {
				got = string(l.Name)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A terminating parent is refused only when a host needs a TLSRoute under it.
func TestTerminatingParentUnusedWithoutTLSRoutes(t *testing.T) {
	s := loadCase(t, filepath.Join("testdata", "tlsroute-terminate.in.yaml"))
	if c := meta.FindStatusCondition(Translate(s).GatewayStatus.Conditions, ConditionProgrammed); c == nil || c.Reason != ReasonParentTerminatesTLS {
		t.Fatalf("with TLSRoutes, Programmed: %+v", c)
	}
	s.Routes[0].Spec.ParentRefs[0].Hostnames = []kroxyliciousv1alpha1.PercentHostname{"kafka-%.svc.cluster.local"}
	if c := meta.FindStatusCondition(Translate(s).GatewayStatus.Conditions, ConditionProgrammed); c == nil || c.Reason == ReasonParentTerminatesTLS {
		t.Errorf("without TLSRoutes, Programmed: %+v", c)
	}
}
