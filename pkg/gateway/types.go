package gateway

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	filterv1alpha1 "github.com/kafkalink/kafkalink/apis/filter/v1alpha1"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
	"github.com/kafkalink/kafkalink/proxy/config"
)

// ControllerName is written in the controllerName of route parent and policy ancestor status.
const ControllerName = gatewaymodel.ControllerName

// ProxyName is the value of the proxy pods' wellknown.LabelName and the proxy container's name.
const ProxyName = "kafkalink-proxy"

// Paths inside the proxy container.
const (
	// ConfigDir is where the ConfigMap is mounted; ConfigFile is the configuration in it.
	ConfigDir  = "/opt/kafkalink/config"
	ConfigKey  = "proxy-config.yaml"
	ConfigFile = ConfigDir + "/" + ConfigKey
	// SecretsRoot is the reserved folder of every mounted Secret.
	SecretsRoot = "/opt/kroxylicious/secrets"
	// ListenerSecretsDir holds listener key pairs and client CAs: <dir>/<listener>/<secret>/.
	ListenerSecretsDir = SecretsRoot + "/tls"
	// BackendSecretsDir holds upstream trust anchors and the client certificate: <dir>/<secret>/.
	BackendSecretsDir = SecretsRoot + "/backend"
	// FilterSecretsDir holds Secrets named by KafkaFilter placeholders: <dir>/<secret>/.
	FilterSecretsDir = SecretsRoot + "/filter"
	// FilterConfigMapsDir holds ConfigMaps named by KafkaFilter ${configmap:…} references:
	// <dir>/<configmap>/.
	FilterConfigMapsDir = "/opt/kroxylicious/configmaps/filter"
)

// Condition types used beyond Gateway API's Accepted, Programmed, ResolvedRefs and Conflicted.
const (
	ConditionAccepted     = gatewaymodel.ConditionAccepted
	ConditionProgrammed   = "Programmed"
	ConditionResolvedRefs = "ResolvedRefs"
	ConditionConflicted   = "Conflicted"
	// ConditionReady is the seed's own gateway condition, beside Gateway API's: True when
	// Accepted and Programmed both are, so `kubectl wait --for=condition=Ready` written from the
	// seed returns.
	ConditionReady = "Ready"
)

// Condition reasons. The Gateway API names come first; the rest are kafkalink's own, for
// failures Gateway API has no word for.
const (
	ReasonAccepted                    = "Accepted"
	ReasonProgrammed                  = "Programmed"
	ReasonResolvedRefs                = "ResolvedRefs"
	ReasonPending                     = "Pending"
	ReasonInvalid                     = "Invalid"
	ReasonInvalidParameters           = "InvalidParameters"
	ReasonListenersNotValid           = "ListenersNotValid"
	ReasonAddressNotAssigned          = "AddressNotAssigned"
	ReasonInvalidClientCertificateRef = "InvalidClientCertificateRef"
	ReasonNoConflicts                 = "NoConflicts"
	ReasonHostnameConflict            = "HostnameConflict"
	ReasonPortUnavailable             = "PortUnavailable"
	ReasonUnsupportedProtocol         = "UnsupportedProtocol"
	ReasonInvalidCertificateRef       = "InvalidCertificateRef"
	ReasonInvalidCACertificateRef     = "InvalidCACertificateRef"
	ReasonRefNotPermitted             = "RefNotPermitted"
	ReasonUnsupportedValue            = "UnsupportedValue"
	ReasonNoMatchingParent            = "NoMatchingParent"
	ReasonNotAllowedByListeners       = "NotAllowedByListeners"
	ReasonBackendNotFound             = "BackendNotFound"
	ReasonInvalidKind                 = "InvalidKind"
	ReasonConflicted                  = "Conflicted"
	ReasonTargetNotFound              = "TargetNotFound"
	ReasonReady                       = "Ready"

	// ReasonNameInUse: a generated object's name is held by an object this gateway does not control.
	ReasonNameInUse = "NameInUse"
	// ReasonFilterNotFound: a rule names a KafkaFilter that does not exist.
	ReasonFilterNotFound = "FilterNotFound"
	// ReasonInvalidFilterSecretRef: a KafkaFilter placeholder names a missing Secret, ConfigMap
	// or key, or is malformed.
	ReasonInvalidFilterSecretRef = "InvalidFilterSecretRef"
	// ReasonInvalidFilterConfig: a KafkaFilter's config is one its type's filter cannot start with.
	ReasonInvalidFilterConfig = "InvalidFilterConfig"
	// ReasonInvalidBackendTLS: the KafkaBackendTLSPolicy of the backend cannot be applied.
	ReasonInvalidBackendTLS = "InvalidBackendTLS"
	// ReasonOpenShiftRoutesUnavailable: hostnames under an ingress domain need route.openshift.io/v1.
	ReasonOpenShiftRoutesUnavailable = "OpenShiftRoutesUnavailable"
	// ReasonTLSRoutesUnavailable: parentRefs need gateway.networking.k8s.io/v1 TLSRoutes.
	ReasonTLSRoutesUnavailable = "TLSRoutesUnavailable"
	// ReasonTLSRouteNotAccepted: a generated TLSRoute has no parent in its status after the timeout.
	ReasonTLSRouteNotAccepted = "TLSRouteNotAccepted"
	// ReasonNotAllowedByOperator: the gateway is accepted, but some of its labels, annotations or
	// ingress domains are outside what the operator's flags allow, and are not applied.
	ReasonNotAllowedByOperator = "NotAllowedByOperator"
	// ReasonLimitExceeded: a route asks for more broker ids or hosts than a route, or the
	// gateway as a whole, may have.
	ReasonLimitExceeded = "LimitExceeded"
	// ReasonDeploymentNotAvailable: the proxy Deployment does not report Available.
	ReasonDeploymentNotAvailable = "DeploymentNotAvailable"
	// ReasonInvalidDiscoveryCredential: a rule's discoveryCredential Secret is missing, lacks
	// the password key, or is in another namespace without a ReferenceGrant.
	ReasonInvalidDiscoveryCredential = "InvalidDiscoveryCredential"
	// ReasonKafkaNotReady: a Strimzi Kafka backend has not reported its listener or has no
	// broker nodes yet.
	ReasonKafkaNotReady = "KafkaNotReady"
	// ReasonBrokerIDsMatch and ReasonBrokerIDsMismatch are the reasons of ConditionBrokerIDsMatch.
	ReasonBrokerIDsMatch    = "BrokerIDsMatch"
	ReasonBrokerIDsMismatch = "BrokerIDsMismatch"
)

// ConditionBrokerIDsMatch is a route parent condition, present when a parentRef with a Strimzi
// Kafka backend also lists brokers: whether they are the Kafka's broker node ids.
const ConditionBrokerIDsMatch = "BrokerIDsMatch"

// Kinds of the foreign objects the translator generates.
var (
	// OpenShiftRouteGVK is route.openshift.io/v1 Route.
	OpenShiftRouteGVK = schema.GroupVersionKind{Group: "route.openshift.io", Version: "v1", Kind: "Route"}
	// TLSRouteGVK is gateway.networking.k8s.io/v1 TLSRoute.
	TLSRouteGVK = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "TLSRoute"}
)

// Environment is what the operator knows beyond the objects: its flags, which optional APIs the
// cluster serves, and the time of the snapshot.
type Environment struct {
	// ClusterDomain is the in-cluster DNS suffix, svc.cluster.local by default.
	ClusterDomain string
	// ProxyImage is the kafkalink-proxy image.
	ProxyImage string
	// FilterTypes are the KafkaFilter types the proxy image implements. A route rule naming a
	// filter of another type is not served: the proxy would refuse the whole virtual cluster.
	FilterTypes []string
	// CheckFilter checks a KafkaFilter's configuration, with Secret placeholders already paths,
	// as the proxy would at start, given the content those paths will have (files, by path);
	// nil checks nothing.
	CheckFilter func(typ string, config []byte, files map[string][]byte) error
	// OpenShiftRoutes reports whether route.openshift.io/v1 Route is served.
	OpenShiftRoutes bool
	// TLSRoutes reports whether gateway.networking.k8s.io/v1 TLSRoute is served.
	TLSRoutes bool
	// ReferenceGrants reports whether Gateway API's ReferenceGrant is served. While it is not, a
	// RefNotPermitted condition about a reference no ReferenceGrant allows ends with
	// gatewaymodel.GrantAPIMissing, as no ReferenceGrant can exist yet.
	ReferenceGrants bool
	// StrimziKafkas reports whether Strimzi's Kafka API is served, for the message of a Kafka
	// backend that is not found.
	StrimziKafkas bool
	// VisibleNamespaces are the namespaces whose objects the snapshot can hold; nil means all.
	// A reference into another namespace cannot be checked, so it is refused.
	VisibleNamespaces []string
	// AllowedMetadataPrefixes, when not nil, restrict the infrastructure labels and annotations a
	// gateway may put on generated objects (pods included) to keys starting with one of them,
	// such as "example.com/". Others are not applied and are reported in the gateway's status.
	AllowedMetadataPrefixes []string
	// AllowedIngressDomains, when not nil, are the only KafkaGatewayParameters ingressDomains
	// (OpenShift Route hosts) a gateway may use: an ingress domain equal to or under one of them.
	// Others are not applied; route hostnames under them are refused rather than exposed
	// another way.
	AllowedIngressDomains []string
	// TLSRouteTimeout is how long a generated TLSRoute may go without a parent in its status.
	TLSRouteTimeout time.Duration
	// MaxGeneratedObjects bounds the Services, OpenShift Routes and TLSRoutes one gateway
	// generates for its routes (--max-generated-objects-per-gateway); 0 is
	// DefaultMaxGeneratedObjectsPerGateway.
	MaxGeneratedObjects int
	// FreshBrokerKey is a random key (config.BrokerKeySize bytes) for the brokerIdentityMapping
	// hash, used only while the gateway has no key Secret yet: the generated Secret then keeps it.
	FreshBrokerKey []byte
	// Now is the time of the snapshot, for the TLSRoute deadline.
	Now time.Time
}

// maxGeneratedObjects is MaxGeneratedObjects, or its default when unset.
func (e *Environment) maxGeneratedObjects() int {
	if e.MaxGeneratedObjects > 0 {
		return e.MaxGeneratedObjects
	}
	return DefaultMaxGeneratedObjectsPerGateway
}

// ObjectKey names an object of some kind in the gateway's namespace.
type ObjectKey struct {
	// Kind is one of the Kind* constants: Service, ConfigMap, Deployment, PodDisruptionBudget, Secret, Route or TLSRoute.
	Kind string
	// Name is the object's name.
	Name string
}

// Snapshot is everything Translate reads: one KafkaGateway and what it refers to, as read from
// informer caches.
type Snapshot struct {
	// Gateway is the gateway to translate.
	Gateway *kroxyliciousv1alpha1.KafkaGateway
	// Parameters is the KafkaGatewayParameters the gateway's parametersRef names; nil when there
	// is no reference or it was not found.
	Parameters *kroxyliciousv1alpha1.KafkaGatewayParameters
	// Routes are KafkaRoutes of the gateway's namespace; those that do not name the gateway are ignored.
	Routes []*kroxyliciousv1alpha1.KafkaRoute
	// Filters are the KafkaFilters of the gateway's namespace.
	Filters []*filterv1alpha1.KafkaFilter
	// Policies are the KafkaBackendTLSPolicies of every visible namespace.
	Policies []*kroxyliciousv1alpha1.KafkaBackendTLSPolicy
	// Services are the backend Services the routes name, and the gateway's own Services
	// (whose load balancer status gives the addresses).
	Services []*corev1.Service
	// Kafkas are the Strimzi Kafkas the routes name as backends, parsed; KafkaErrors are those
	// that could not be parsed, with why.
	Kafkas      []*strimzi.Kafka
	KafkaErrors map[types.NamespacedName]error
	// NodePools are the KafkaNodePools of those Kafkas' namespaces.
	NodePools []*strimzi.KafkaNodePool
	// Secrets are the Secrets the gateway, routes, filters and policies name.
	Secrets []*corev1.Secret
	// ConfigMaps are the ConfigMaps the filters name (${configmap:…}), with their data.
	ConfigMaps []*corev1.ConfigMap
	// ReferenceGrants are the ReferenceGrants of every visible namespace.
	ReferenceGrants []*gatewayv1beta1.ReferenceGrant
	// Deployment is the proxy Deployment as it is now, for the Programmed condition.
	Deployment *appsv1.Deployment
	// ParentGateways are the Gateway API Gateways the parameters' parentRefs name, as far as
	// the operator can see them, to check their listeners' TLS mode.
	ParentGateways []*gatewayv1.Gateway
	// TLSRoutes are the generated TLSRoutes as they are now, for their parent status.
	TLSRoutes []*gatewayv1.TLSRoute
	// Foreign lists names in the gateway's namespace held by objects the gateway does not
	// control; those objects are never adopted.
	Foreign []ObjectKey
	// Env is the operator's side of the snapshot.
	Env Environment
}

// Result is what Translate produces.
type Result struct {
	// Hold is set when the gateway cannot be translated at all (for example its parameters are
	// missing): the controller then leaves every generated object as it is and writes status only,
	// so a passing mistake does not tear down a running proxy.
	Hold bool
	// Objects are the desired objects, all in the gateway's namespace, sorted by kind and name.
	// They carry labels and annotations but no owner reference: the controller adds it.
	Objects []*unstructured.Unstructured
	// Config is the proxy configuration in the ConfigMap; nil when Hold is set.
	Config *config.Config
	// GatewayStatus is the gateway's status. Conditions have no lastTransitionTime.
	GatewayStatus kroxyliciousv1alpha1.KafkaGatewayStatus
	// RouteParents are, per route name, the parent status entries for this gateway. Routes that
	// no longer name the gateway have an empty entry, so stale status is removed.
	RouteParents map[string][]kroxyliciousv1alpha1.RouteParentStatus
	// PolicyAncestors are, per policy, the ancestor status entry for this gateway; nil removes it.
	PolicyAncestors map[types.NamespacedName]*kroxyliciousv1alpha1.PolicyAncestorStatus
	// RequeueAfter asks for another translation after this long (a TLSRoute deadline); 0 for none.
	RequeueAfter time.Duration
	// RecreateServices name generated Services that must be deleted before they are applied:
	// their live spec.clusterIP is None and the desired one is not, or the other way round,
	// which Kubernetes does not change in place (services.inClusterType changed).
	RecreateServices []string
	// PruneKinds are the kinds whose stale generated objects may be deleted; a kind whose API is
	// not served is left out.
	PruneKinds []string
	// KeepCopies, when Hold is set, names the generated Secrets to keep: the cross-namespace
	// Secret copies that are still permitted, and the broker identity key Secret. Every other
	// generated Secret is a copy made under a ReferenceGrant since withdrawn, or for a reference
	// since removed, and is deleted even while the gateway is held: a revoked grant must not
	// leave the copy readable in the gateway's namespace.
	KeepCopies map[string]bool
}

// Condition builds a condition without a transition time; the controller keeps the previous
// time when the status did not change.
func Condition(conditionType string, status bool, reason, message string, generation int64) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: conditionType, Status: s, Reason: reason, Message: message, ObservedGeneration: generation}
}
