package gatewaymodel

import (
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

// RefNamespace is the namespace a reference names: its own namespace when set and not empty,
// else the referrer's. Every namespaced reference of the gateway model defaults this way.
func RefNamespace(ns *kroxyliciousv1alpha1.Namespace, referrer string) string {
	if ns != nil && *ns != "" {
		return string(*ns)
	}
	return referrer
}

// IsSecretRef reports whether a certificate reference names a core Secret, the only kind
// kafkalink reads certificates from (group "" and kind Secret are also the defaults).
func IsSecretRef(ref kroxyliciousv1alpha1.SecretObjectReference) bool {
	return (ref.Group == nil || *ref.Group == CoreGroup) && (ref.Kind == nil || *ref.Kind == KindSecret)
}

// IsGatewayParent reports whether a route parentRef names a KafkaGateway (of the route's
// namespace): group kroxylicious.io and kind KafkaGateway, which are also the defaults.
func IsGatewayParent(pr kroxyliciousv1alpha1.KafkaRouteParentReference) bool {
	return (pr.Group == nil || *pr.Group == Group) && (pr.Kind == nil || *pr.Kind == KindGateway)
}

// ParentGateways are the names of the KafkaGateways (in the route's namespace) a route's
// parentRefs name, each once, in the order of the parentRefs.
func ParentGateways(r *kroxyliciousv1alpha1.KafkaRoute) []string {
	seen := map[string]bool{}
	var out []string
	for _, pr := range r.Spec.ParentRefs {
		if IsGatewayParent(pr) && !seen[string(pr.Name)] {
			seen[string(pr.Name)] = true
			out = append(out, string(pr.Name))
		}
	}
	return out
}

// IsParametersRef reports whether a gateway's parametersRef names a KafkaGatewayParameters:
// group kroxylicious.io AND kind KafkaGatewayParameters.
func IsParametersRef(ref *kroxyliciousv1alpha1.LocalParametersReference) bool {
	return ref != nil && ref.Group == Group && ref.Kind == KindParameters
}

// ParametersRef is the gateway's parametersRef as written, or nil when it has none.
func ParametersRef(gw *kroxyliciousv1alpha1.KafkaGateway) *kroxyliciousv1alpha1.LocalParametersReference {
	if gw.Spec.Infrastructure == nil {
		return nil
	}
	return gw.Spec.Infrastructure.ParametersRef
}

// ParametersName is the KafkaGatewayParameters (in the gateway's namespace) a gateway names, or
// "" when it names none or its parametersRef is of another group or kind.
func ParametersName(gw *kroxyliciousv1alpha1.KafkaGateway) string {
	if ref := ParametersRef(gw); IsParametersRef(ref) {
		return ref.Name
	}
	return ""
}

// CertificateSecrets are the namespace/name keys of the Secrets a listener presents (its
// tls.certificateRefs that name core Secrets), in order.
func CertificateSecrets(gw *kroxyliciousv1alpha1.KafkaGateway, l kroxyliciousv1alpha1.Listener) []string {
	if l.TLS == nil {
		return nil
	}
	var out []string
	for _, ref := range l.TLS.CertificateRefs {
		if IsSecretRef(ref) {
			out = append(out, RefNamespace(ref.Namespace, gw.Namespace)+"/"+string(ref.Name))
		}
	}
	return out
}

// GatewaySecretRefs are every Secret reference of a gateway, in spec order: each listener's
// certificateRefs and frontendValidation caCertificateRefs, then backendTLS.clientCertificateRef.
// Their kinds are not checked here.
func GatewaySecretRefs(gw *kroxyliciousv1alpha1.KafkaGateway) []kroxyliciousv1alpha1.SecretObjectReference {
	var out []kroxyliciousv1alpha1.SecretObjectReference
	for _, l := range gw.Spec.Listeners {
		if l.TLS == nil {
			continue
		}
		out = append(out, l.TLS.CertificateRefs...)
		if fv := l.TLS.FrontendValidation; fv != nil {
			out = append(out, fv.CACertificateRefs...)
		}
	}
	if b := gw.Spec.BackendTLS; b != nil && b.ClientCertificateRef != nil {
		out = append(out, *b.ClientCertificateRef)
	}
	return out
}
