package controller

import (
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// IndexGatewayAPICertificate is the index of Informers.GatewayAPIGateways by the namespace/name
// of each listener certificate Secret. The operator adds it when it builds the informer (an
// optional informer takes its indexes up front); the binding controller reads it to find the
// Gateways a changed Secret concerns. Its prefix is no controller's queue name: the index
// belongs to the shared informer.
var IndexGatewayAPICertificate = IndexName("gatewayapi", "certificate")

// GatewayAPICertificates indexes a cached *gatewayv1.Gateway by the namespace/name of each of
// its listeners' certificate Secrets (a reference without a namespace names the Gateway's).
func GatewayAPICertificates(obj any) ([]string, error) {
	g, ok := obj.(*gatewayv1.Gateway)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, l := range g.Spec.Listeners {
		if l.TLS == nil {
			continue
		}
		for _, ref := range l.TLS.CertificateRefs {
			ns := g.Namespace
			if ref.Namespace != nil && *ref.Namespace != "" {
				ns = string(*ref.Namespace)
			}
			out = append(out, ns+"/"+string(ref.Name))
		}
	}
	return out, nil
}
