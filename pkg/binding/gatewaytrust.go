package binding

import (
	"fmt"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// GatewayTrust is what clients of a tlsroute listener with tls: false trust: TLS ends at the
// Gateway, so the Gateway listener's certificate Secret (its ca.crt, as cert-manager writes it),
// or why kafkalink cannot find it.
type GatewayTrust struct {
	// Secret is the Gateway listener's certificate Secret; nil when it cannot be resolved.
	Secret *SecretData
	// Problem says why Secret is nil.
	Problem string
}

// GatewayCertificateRef finds the certificate Secret of the Gateway listener a tlsroute listener
// attaches to: its first parentRef that is a Gateway, that Gateway's listener named by
// sectionName (else its first listener that terminates TLS), and that listener's first
// certificateRef. gateway looks a Gateway up, nil when it does not exist. problem says why there
// is no answer.
func GatewayCertificateRef(l strimzi.Listener, kafkaNamespace string, gateway func(namespace, name string) *gatewayv1.Gateway) (namespace, name, problem string) {
	if len(l.ParentRefs) == 0 {
		return "", "", "it names no configuration.parentRefs"
	}
	var why []string
	for _, ref := range l.ParentRefs {
		if ref.Group != strimzi.GatewayAPIGroup || ref.Kind != strimzi.KindGateway {
			why = append(why, fmt.Sprintf("parent %s %s/%s is not a Gateway, the only parent kafkalink reads", ref.Group, ref.Kind, ref.Name))
			continue
		}
		ns := ref.Namespace
		if ns == "" {
			ns = kafkaNamespace
		}
		gw := gateway(ns, ref.Name)
		if gw == nil {
			why = append(why, fmt.Sprintf("Gateway %s/%s not found", ns, ref.Name))
			continue
		}
		secretNS, secret, p := terminatingCertificate(gw, ref.SectionName)
		if p != "" {
			why = append(why, fmt.Sprintf("Gateway %s/%s: %s", ns, ref.Name, p))
			continue
		}
		return secretNS, secret, ""
	}
	return "", "", joinReasons(why)
}

// terminatingCertificate is the certificate Secret of a Gateway listener that terminates TLS.
func terminatingCertificate(gw *gatewayv1.Gateway, section string) (namespace, name, problem string) {
	for _, gl := range gw.Spec.Listeners {
		if section != "" && string(gl.Name) != section {
			continue
		}
		if gl.TLS == nil || (gl.TLS.Mode != nil && *gl.TLS.Mode != gatewayv1.TLSModeTerminate) {
			if section != "" {
				return "", "", fmt.Sprintf("listener %s does not terminate TLS (its tls.mode is not Terminate), while the Kafka listener has tls: false", section)
			}
			continue
		}
		if len(gl.TLS.CertificateRefs) == 0 {
			return "", "", fmt.Sprintf("listener %s has no tls.certificateRefs", gl.Name)
		}
		ref := gl.TLS.CertificateRefs[0]
		if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Secret") {
			return "", "", fmt.Sprintf("listener %s's certificate is not a core Secret", gl.Name)
		}
		ns := gw.Namespace
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = string(*ref.Namespace)
		}
		return ns, string(ref.Name), ""
	}
	if section != "" {
		return "", "", fmt.Sprintf("it has no listener %s", section)
	}
	return "", "", "it has no listener that terminates TLS"
}

func joinReasons(why []string) string {
	out := ""
	for i, w := range why {
		if i > 0 {
			out += "; "
		}
		out += w
	}
	return out
}
