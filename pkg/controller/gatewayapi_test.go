package controller

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestGatewayAPICertificates(t *testing.T) {
	ref := func(ns, name string) gatewayv1.SecretObjectReference {
		r := gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(name)}
		if ns != "" {
			r.Namespace = ptr.To(gatewayv1.Namespace(ns))
		}
		return r
	}
	gw := func(listeners ...gatewayv1.Listener) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "gw"}, Spec: gatewayv1.GatewaySpec{Listeners: listeners}}
	}
	tls := func(refs ...gatewayv1.SecretObjectReference) gatewayv1.Listener {
		return gatewayv1.Listener{Name: "tls", Protocol: gatewayv1.TLSProtocolType, TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: refs}}
	}
	cases := map[string]struct {
		obj  any
		want []string
	}{
		"a reference without a namespace names the Gateway's": {gw(tls(ref("", "a"))), []string{"edge/a"}},
		"a reference with a namespace names that namespace":   {gw(tls(ref("certs", "b"))), []string{"certs/b"}},
		"every listener's every certificate":                  {gw(tls(ref("", "a"), ref("certs", "b")), tls(ref("", "c"))), []string{"edge/a", "certs/b", "edge/c"}},
		"a listener without TLS names none":                   {gw(gatewayv1.Listener{Name: "tcp", Protocol: gatewayv1.TCPProtocolType}), nil},
		"another type is not indexed":                         {&gatewayv1.GatewayClass{}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := GatewayAPICertificates(tc.obj)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("GatewayAPICertificates = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
