// Package gatewaycompat turns a KafkaGateway into the Gateway API Gateway it corresponds to. It
// pins down the promise that a KafkaGateway is, apart from kind and apiVersion, a compatible
// subset of Gateway, and it names the known deviations (see the README):
//
//  1. Gateway requires spec.gatewayClassName; KafkaGateway has no class.
//  2. The protocol kroxylicious.io/kafka-tls is not a valid Gateway protocol name: Gateway API
//     allows no '-' after the '/'.
//  3. Gateway API moved backendTLS to spec.tls.backend and listener frontendValidation to
//     spec.tls.frontend.
package gatewaycompat

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// GatewayProtocol is the Gateway API spelling of the kroxylicious.io/kafka-tls protocol.
const GatewayProtocol = "kroxylicious.io/kafkatls"

// ToGateway converts a KafkaGateway object to a Gateway of the given class. The input is not
// modified.
func ToGateway(kafkaGateway *unstructured.Unstructured, gatewayClassName string) (*unstructured.Unstructured, error) {
	if kafkaGateway.GetKind() != "KafkaGateway" {
		return nil, fmt.Errorf("kind %q is not KafkaGateway", kafkaGateway.GetKind())
	}
	gw := kafkaGateway.DeepCopy()
	gw.SetAPIVersion("gateway.networking.k8s.io/v1")
	gw.SetKind("Gateway")
	delete(gw.Object, "status")
	spec, ok := gw.Object["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("spec is missing")
	}
	spec["gatewayClassName"] = gatewayClassName

	var tls map[string]any
	ensureTLS := func() map[string]any {
		if tls == nil {
			tls = map[string]any{}
			spec["tls"] = tls
		}
		return tls
	}
	if backendTLS, ok := spec["backendTLS"]; ok {
		ensureTLS()["backend"] = backendTLS
		delete(spec, "backendTLS")
	}
	listeners, _ := spec["listeners"].([]any)
	for _, l := range listeners {
		listener, ok := l.(map[string]any)
		if !ok {
			continue
		}
		if listener["protocol"] == "kroxylicious.io/kafka-tls" {
			listener["protocol"] = GatewayProtocol
		}
		listenerTLS, _ := listener["tls"].(map[string]any)
		validation, ok := listenerTLS["frontendValidation"].(map[string]any)
		if !ok {
			continue
		}
		delete(listenerTLS, "frontendValidation")
		// Gateway keeps TLS options on the listener and CA references in a per-port frontend
		// validation.
		if options, ok := validation["options"]; ok {
			listenerTLS["options"] = options
			delete(validation, "options")
		}
		frontend, _ := ensureTLS()["frontend"].(map[string]any)
		if frontend == nil {
			// Gateway requires a default; the first listener's validation serves, and every
			// listener also gets its own per-port entry.
			frontend = map[string]any{"default": map[string]any{"validation": validation}}
			tls["frontend"] = frontend
		}
		perPort, _ := frontend["perPort"].([]any)
		frontend["perPort"] = append(perPort, map[string]any{
			"port": listener["port"],
			"tls":  map[string]any{"validation": validation},
		})
	}
	return gw, nil
}
