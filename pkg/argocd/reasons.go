package argocd

import (
	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/bindingcontroller"
	"github.com/kafkalink/kafkalink/pkg/gateway"
)

// Health is an Argo CD health status code.
type Health string

// The health status codes the checks return (Argo CD also knows Suspended, Missing and Unknown;
// Missing and Unknown are Argo CD's own verdicts, and nothing of kafkalink's is ever suspended).
const (
	Healthy     Health = "Healthy"
	Progressing Health = "Progressing"
	Degraded    Health = "Degraded"
)

// ConnectionReasons classifies every reason of a KafkaConnection's Ready condition. Healthy is
// the reason of Ready=True. Progressing is a reason that goes away by itself once another
// controller (Strimzi, kafkalink's gateway controller) catches up; Degraded needs a change to
// the connection or to what it names. A reason missing here is Degraded in the Lua, and fails
// TestEveryReasonClassified.
var ConnectionReasons = map[string]Health{
	bindingcontroller.ReasonBound: Healthy,

	// Strimzi writes these once it has reconciled the Kafka or the KafkaUser.
	binding.ReasonBootstrapNotReady:    Progressing,
	binding.ReasonUserNotReady:         Progressing,
	binding.ReasonUserSecretMissing:    Progressing,
	binding.ReasonCACertificateMissing: Progressing,
	// The operator asks discovery again (at most every 20 s) and binds once the CRDs appear:
	// in GitOps they often come from another application.
	binding.ReasonStrimziNotInstalled: Progressing,
	// The gateway has not accepted the route's current generation yet. A route it refuses is
	// Degraded on the KafkaRoute itself, whose health says why; the connection waits for it.
	binding.ReasonRouteNotAccepted: Progressing,

	binding.ReasonKafkaNotFound:                 Degraded,
	binding.ReasonKafkaInvalid:                  Degraded,
	binding.ReasonListenerNotFound:              Degraded,
	binding.ReasonListenerIncompatible:          Degraded,
	binding.ReasonNoCompatibleListener:          Degraded,
	binding.ReasonUserNotFound:                  Degraded,
	binding.ReasonUserInvalid:                   Degraded,
	binding.ReasonUserAuthenticationUnsupported: Degraded,
	binding.ReasonUserCredentialsMissing:        Degraded,
	binding.ReasonOAuthCredentialsMissing:       Degraded,
	binding.ReasonOAuthTokenEndpointUnknown:     Degraded,
	binding.ReasonGatewayCertificateUnresolved:  Degraded,
	binding.ReasonCertificateNotPEM:             Degraded,
	binding.ReasonCertificateInvalid:            Degraded,
	binding.ReasonPrivateKeyInvalid:             Degraded,
	binding.ReasonStoreFormatUnknown:            Degraded,
	binding.ReasonStoreEncodingFailed:           Degraded,
	binding.ReasonRefNotPermitted:               Degraded,
	binding.ReasonStretchAddressUnknown:         Degraded,
	binding.ReasonTargetsUnavailable:            Degraded,
	binding.ReasonRouteNotFound:                 Degraded,
	binding.ReasonGatewayNotFound:               Degraded,
	binding.ReasonHostnameNotFound:              Degraded,
	binding.ReasonHostnameInvalid:               Degraded,
	bindingcontroller.ReasonSecretNotOwned:      Degraded,
}

// GatewayReasons classifies every reason of the conditions the gateway controller writes on
// KafkaGateways (and their listeners), KafkaRoute parents and KafkaBackendTLSPolicy ancestors.
// A condition in its good state (Accepted, Programmed, ResolvedRefs, BrokerIDsMatch True) is
// Healthy unless its reason is Degraded here: an Accepted=True gateway whose labels the
// operator does not allow, or some of whose listeners are not valid, does not do all it says.
// A condition in its bad state is Progressing when its reason is, else Degraded.
var GatewayReasons = map[string]Health{
	gateway.ReasonAccepted:       Healthy,
	gateway.ReasonProgrammed:     Healthy,
	gateway.ReasonResolvedRefs:   Healthy,
	gateway.ReasonNoConflicts:    Healthy,
	gateway.ReasonBrokerIDsMatch: Healthy,
	gateway.ReasonReady:          Healthy,
	// A KafkaBackendTLSPolicy applies to a route's TLS backend port.
	gateway.ReasonBackendTLSPolicyFound: Healthy,

	// Waiting for the proxy pods, a LoadBalancer address or Strimzi.
	gateway.ReasonPending:                Progressing,
	gateway.ReasonDeploymentNotAvailable: Progressing,
	gateway.ReasonAddressNotAssigned:     Progressing,
	gateway.ReasonKafkaNotReady:          Progressing,

	gateway.ReasonNotAllowedByOperator:        Degraded,
	gateway.ReasonListenersNotValid:           Degraded,
	gateway.ReasonInvalid:                     Degraded,
	gateway.ReasonInvalidParameters:           Degraded,
	gateway.ReasonInvalidClientCertificateRef: Degraded,
	gateway.ReasonHostnameConflict:            Degraded,
	gateway.ReasonPortUnavailable:             Degraded,
	gateway.ReasonUnsupportedProtocol:         Degraded,
	gateway.ReasonInvalidCertificateRef:       Degraded,
	gateway.ReasonInvalidCACertificateRef:     Degraded,
	gateway.ReasonRefNotPermitted:             Degraded,
	gateway.ReasonUnsupportedValue:            Degraded,
	gateway.ReasonNoMatchingParent:            Degraded,
	gateway.ReasonNotAllowedByListeners:       Degraded,
	gateway.ReasonBackendNotFound:             Degraded,
	gateway.ReasonInvalidKind:                 Degraded,
	gateway.ReasonConflicted:                  Degraded,
	gateway.ReasonTargetNotFound:              Degraded,
	gateway.ReasonNameInUse:                   Degraded,
	gateway.ReasonFilterNotFound:              Degraded,
	gateway.ReasonInvalidFilterSecretRef:      Degraded,
	gateway.ReasonInvalidFilterConfig:         Degraded,
	gateway.ReasonInvalidBackendTLS:           Degraded,
	gateway.ReasonOpenShiftRoutesUnavailable:  Degraded,
	gateway.ReasonTLSRoutesUnavailable:        Degraded,
	// The generated TLSRoutes waited TLSRouteTimeout for a parent: the Gateway implementation
	// does not take them, which no amount of waiting changes.
	gateway.ReasonTLSRouteNotAccepted:        Degraded,
	gateway.ReasonLimitExceeded:              Degraded,
	gateway.ReasonInvalidDiscoveryCredential: Degraded,
	// The proxy serves the Kafka's broker ids, not the ones the route lists: the route works,
	// but not as written.
	gateway.ReasonBrokerIDsMismatch: Degraded,
	// The backend port serves TLS and no policy says how to connect: the proxy speaks plain TCP
	// to it, and clients fail.
	gateway.ReasonBackendTLSPolicyMissing: Degraded,
	// A parent Gateway listener terminates TLS: the proxy cannot route by SNI behind it.
	gateway.ReasonParentTerminatesTLS: Degraded,
}
