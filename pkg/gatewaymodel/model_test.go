package gatewaymodel

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

func TestGranted(t *testing.T) {
	from := From{Group: Group, Kind: KindGateway, Namespace: "apps"}
	secret := To{Group: CoreGroup, Kind: KindSecret, Namespace: "certs", Name: "tls"}
	grant := func(ns string, name *string) *gatewayv1beta1.ReferenceGrant {
		g := &gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g"}}
		g.Spec.From = []gatewayv1beta1.ReferenceGrantFrom{{Group: Group, Kind: KindGateway, Namespace: "apps"}}
		g.Spec.To = []gatewayv1beta1.ReferenceGrantTo{{Group: CoreGroup, Kind: KindSecret, Name: (*gatewayv1beta1.ObjectName)(name)}}
		return g
	}
	tests := map[string]struct {
		grants []*gatewayv1beta1.ReferenceGrant
		from   From
		to     To
		want   bool
	}{
		"a reference within one namespace needs no grant": {
			from: from, to: To{Group: CoreGroup, Kind: KindSecret, Namespace: "apps", Name: "tls"}, want: true,
		},
		"a reference across namespaces without a grant is refused": {from: from, to: secret},
		"a grant of every Secret allows it": {
			grants: []*gatewayv1beta1.ReferenceGrant{grant("certs", nil)}, from: from, to: secret, want: true,
		},
		"a grant of that Secret by name allows it": {
			grants: []*gatewayv1beta1.ReferenceGrant{grant("certs", ptr.To("tls"))}, from: from, to: secret, want: true,
		},
		"a grant of another Secret does not": {
			grants: []*gatewayv1beta1.ReferenceGrant{grant("certs", ptr.To("other"))}, from: from, to: secret,
		},
		"a grant in another namespace than the target's does not": {
			grants: []*gatewayv1beta1.ReferenceGrant{grant("elsewhere", nil)}, from: from, to: secret,
		},
		"a grant from another kind does not": {
			grants: []*gatewayv1beta1.ReferenceGrant{grant("certs", nil)}, from: From{Group: Group, Kind: KindRoute, Namespace: "apps"}, to: secret,
		},
		"a grant from another namespace does not": {
			grants: []*gatewayv1beta1.ReferenceGrant{grant("certs", nil)}, from: From{Group: Group, Kind: KindGateway, Namespace: "other"}, to: secret,
		},
		"a grant to another kind does not": {
			grants: []*gatewayv1beta1.ReferenceGrant{grant("certs", nil)}, from: from, to: To{Group: CoreGroup, Kind: KindService, Namespace: "certs", Name: "tls"},
		},
		"a nil grant is skipped": {
			grants: []*gatewayv1beta1.ReferenceGrant{nil, grant("certs", nil)}, from: from, to: secret, want: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Granted(tc.grants, tc.from, tc.to); got != tc.want {
				t.Errorf("Granted = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestParametersName(t *testing.T) {
	gw := func(ref *kroxyliciousv1alpha1.LocalParametersReference) *kroxyliciousv1alpha1.KafkaGateway {
		g := &kroxyliciousv1alpha1.KafkaGateway{}
		g.Spec.Infrastructure = &kroxyliciousv1alpha1.GatewayInfrastructure{ParametersRef: ref}
		return g
	}
	tests := map[string]struct {
		gw   *kroxyliciousv1alpha1.KafkaGateway
		want string
	}{
		"no infrastructure names no parameters": {gw: &kroxyliciousv1alpha1.KafkaGateway{}},
		"no parametersRef names no parameters":  {gw: gw(nil)},
		"a KafkaGatewayParameters is named":     {gw: gw(&kroxyliciousv1alpha1.LocalParametersReference{Group: Group, Kind: KindParameters, Name: "p"}), want: "p"},
		"another kind is not parameters":        {gw: gw(&kroxyliciousv1alpha1.LocalParametersReference{Group: Group, Kind: "ConfigMap", Name: "p"})},
		"another group is not parameters":       {gw: gw(&kroxyliciousv1alpha1.LocalParametersReference{Group: "example.com", Kind: KindParameters, Name: "p"})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ParametersName(tc.gw); got != tc.want {
				t.Errorf("ParametersName = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParentGateways(t *testing.T) {
	r := &kroxyliciousv1alpha1.KafkaRoute{}
	r.Spec.ParentRefs = []kroxyliciousv1alpha1.KafkaRouteParentReference{
		{Name: "a"},
		{Name: "b", Group: ptr.To(Group), Kind: ptr.To(KindGateway)},
		{Name: "a", SectionName: ptr.To[kroxyliciousv1alpha1.SectionName]("other")},
		{Name: "c", Kind: ptr.To("Gateway")},
		{Name: "d", Group: ptr.To("gateway.networking.k8s.io")},
	}
	got := ParentGateways(r)
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("ParentGateways = %q, want [a b]: defaults name a KafkaGateway, other kinds and groups do not, each name once", got)
	}
}

func TestAdvertisedPort(t *testing.T) {
	parents := []kroxyliciousv1alpha1.GatewayParentReference{{Name: "no-port"}, {Name: "https", Port: ptr.To[kroxyliciousv1alpha1.PortNumber](8443)}}
	tests := map[string]struct {
		exposure Exposure
		parents  []kroxyliciousv1alpha1.GatewayParentReference
		want     int32
	}{
		"in-cluster hostnames use the listener's port":                {exposure: ExposeInCluster, parents: parents, want: 0},
		"LoadBalancer hostnames use the listener's port":              {exposure: ExposeLoadBalancer, want: 0},
		"OpenShift Routes use the router's TLS port":                  {exposure: ExposeOpenShiftRoute, parents: parents, want: 443},
		"TLSRoutes use the first parent port given":                   {exposure: ExposeTLSRoute, parents: parents, want: 8443},
		"TLSRoutes without a parent port use 443, as Strimzi assumes": {exposure: ExposeTLSRoute, parents: parents[:1], want: 443},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := AdvertisedPort(tc.exposure, tc.parents); got != tc.want {
				t.Errorf("AdvertisedPort = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestGatewaySecretRefs(t *testing.T) {
	gw := &kroxyliciousv1alpha1.KafkaGateway{}
	gw.Namespace = "apps"
	gw.Spec.Listeners = []kroxyliciousv1alpha1.Listener{
		{Name: "plain"},
		{Name: "tls", TLS: &kroxyliciousv1alpha1.ListenerTLSConfig{
			CertificateRefs:    []kroxyliciousv1alpha1.SecretObjectReference{{Name: "cert"}, {Name: "other-ns", Namespace: ptr.To[kroxyliciousv1alpha1.Namespace]("certs")}, {Name: "cm", Kind: ptr.To("ConfigMap")}},
			FrontendValidation: &kroxyliciousv1alpha1.FrontendTLSValidation{CACertificateRefs: []kroxyliciousv1alpha1.SecretObjectReference{{Name: "client-ca"}}},
		}},
	}
	gw.Spec.BackendTLS = &kroxyliciousv1alpha1.GatewayBackendTLS{ClientCertificateRef: &kroxyliciousv1alpha1.SecretObjectReference{Name: "client"}}
	var names []string
	for _, ref := range GatewaySecretRefs(gw) {
		names = append(names, string(ref.Name))
	}
	if want := []string{"cert", "other-ns", "cm", "client-ca", "client"}; !slices.Equal(names, want) {
		t.Errorf("GatewaySecretRefs names %q, want %q", names, want)
	}
	if got, want := CertificateSecrets(gw, gw.Spec.Listeners[1]), []string{"apps/cert", "certs/other-ns"}; !slices.Equal(got, want) {
		t.Errorf("CertificateSecrets = %q, want %q: Secrets only, namespaces defaulted", got, want)
	}
}
