package gatewaymodel

import (
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

// DefaultExternalTLSPort is the port of an OpenShift router's TLS passthrough, and the port
// assumed for a Gateway API parent whose port is not given (as Strimzi's tlsroute listener does).
const DefaultExternalTLSPort = 443

// AdvertisedPort is the port clients are told for a hostname of the given exposure, or 0 when
// it is the gateway listener's own port (in-cluster and LoadBalancer hostnames reach the proxy
// directly). parents are the KafkaGatewayParameters' Gateway API parentRefs: the first with a
// port gives the port of TLSRoute hostnames.
func AdvertisedPort(e Exposure, parents []kroxyliciousv1alpha1.GatewayParentReference) int32 {
	switch e {
	case ExposeOpenShiftRoute:
		return DefaultExternalTLSPort
	case ExposeTLSRoute:
		for _, ref := range parents {
			if ref.Port != nil {
				return int32(*ref.Port)
			}
		}
		return DefaultExternalTLSPort
	default:
		return 0
	}
}
