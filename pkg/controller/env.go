package controller

import (
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	kafkalinkinformers "github.com/kafkalink/kafkalink/generated/informers/externalversions"
)

// Env is what a controller constructor gets: clients, the informers of one watched namespace,
// an event recorder and the options. The operator (package operator) builds one per watched
// namespace; controllers read it and build nothing of their own.
type Env struct {
	// Clients are the API clients.
	Clients Clients
	// Informers are the shared informers of the controller's watched namespace.
	Informers Informers
	// Recorder records events on the controller's objects.
	Recorder record.EventRecorder
	// Options are the controllers' settings.
	Options Options
}

// Clients are the API clients controllers use.
type Clients struct {
	// Config is the configuration every client was built from.
	Config *rest.Config
	// Kube is the client of the built-in kinds.
	Kube kubernetes.Interface
	// KafkaLink is the client of kafkalink's own kinds.
	KafkaLink kafkalinkclient.Interface
	// Gateway is the client of Gateway API's kinds.
	Gateway gatewayclient.Interface
	// Dynamic serves the optional APIs and the generated objects' server-side applies.
	Dynamic dynamic.Interface
	// Discovery tells which optional APIs the cluster serves.
	Discovery discovery.DiscoveryInterface
}

// Informers are the shared informer factories for one namespace ("" for all), and the shared
// informers of optional APIs. Controllers ask for informers before Start; the operator starts them.
// A resource has one informer per watched namespace in the whole process: controllers that read
// the same resource ask the same factory.
type Informers struct {
	// Namespace is the watched namespace; "" for all.
	Namespace string
	// Kube is the factory of the built-in kinds' informers.
	Kube kubeinformers.SharedInformerFactory
	// KafkaLink is the factory of kafkalink's own kinds' informers.
	KafkaLink kafkalinkinformers.SharedInformerFactory
	// ReferenceGrants watches Gateway API's ReferenceGrants, an optional API: every controller
	// shares this one informer. Its cache holds *gatewayv1beta1.ReferenceGrant whichever version
	// (v1beta1 or v1) the cluster serves. Until the API is served it is not Ready, and
	// cross-namespace references report RefNotPermitted.
	ReferenceGrants *OptionalInformer
	// Kafkas and KafkaNodePools watch Strimzi's kinds, optional APIs too (kafka.strimzi.io v1 or
	// v1beta2), pruned to what package strimzi parses: the binding controller reads Kafkas, the
	// gateway controller both, through these shared informers.
	Kafkas, KafkaNodePools *OptionalInformer
	// GatewayAPIGateways watches Gateway API Gateways (gateway.networking.k8s.io/v1), an optional
	// API too. Its cache holds *gatewayv1.Gateway without managedFields or status (no reader
	// needs the status), indexed by IndexGatewayAPICertificate. The binding controller reads it
	// for the certificates tlsroute listeners trust, the gateway controller for the TLS mode of
	// the TLSRoutes' parents: both through this one informer.
	GatewayAPIGateways *OptionalInformer
}

// Options are the controllers' settings: the part of the operator's options (package operator)
// that controllers read.
//
// Each field is the operator's flag of the same name (operator.Options.AddFlags), which says
// what it does and its default.
type Options struct {
	// ClusterDomain is --cluster-domain.
	ClusterDomain string
	// ProxyImage is --proxy-image.
	ProxyImage string
	// ProxyFilterTypes are the KafkaFilter types the proxy image implements: by default
	// kafkalink-proxy's (package filter/all, which cmd/kafkalink-operator sets); a different
	// proxy image may implement others.
	ProxyFilterTypes []string
	// CheckFilter checks a KafkaFilter's configuration as kafkalink-proxy would at start, with
	// the content of the files it names; a type kafkalink-proxy does not implement is not checked.
	// cmd/kafkalink-operator sets it (package filter/all); nil checks nothing.
	CheckFilter func(typ string, config []byte, files map[string][]byte) error
	// AllowedMetadataPrefixes restrict the labels and annotations gateways put on generated
	// objects and connections put on binding Secrets; nil allows any.
	AllowedMetadataPrefixes []string
	// AllowedIngressDomains restrict the ingress domains (OpenShift Route hosts) of gateways;
	// nil allows any.
	AllowedIngressDomains []string
	// AllowedMemberServers are the member-cluster API servers the operator may reach.
	AllowedMemberServers []string

	// Gateway controller.
	// TLSRouteAttachTimeout is how long a generated TLSRoute may wait for a Gateway API parent
	// to list it in its status before the KafkaGateway reports TLSRouteNotAccepted.
	TLSRouteAttachTimeout time.Duration
	// MaxGeneratedObjectsPerGateway is --max-generated-objects-per-gateway: the Services,
	// OpenShift Routes and TLSRoutes one gateway may generate for its routes.
	MaxGeneratedObjectsPerGateway int
}
