package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KafkaGatewayParameters holds the proxy settings that have no place in a Gateway: the other end of
// a KafkaGateway's spec.infrastructure.parametersRef.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=kgwp,categories=kafkalink
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Management Port",type=integer,JSONPath=`.spec.management.port`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KafkaGatewayParameters struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the proxy settings.
	// +required
	Spec KafkaGatewayParametersSpec `json:"spec"`
}

// KafkaGatewayParametersSpec holds the proxy settings.
//
// The seed example writes port and prometheusMetrics one level too high, beside an empty
// management. That form is accepted as written and means the same as management.port and
// management.prometheusMetrics; setting both forms to different values is refused.
//
// +kubebuilder:validation:XValidation:rule="!has(self.port) || !has(self.management) || !has(self.management.port) || self.port == self.management.port",message="port and management.port disagree: set management.port only"
// +kubebuilder:validation:XValidation:rule="!has(self.prometheusMetrics) || !has(self.management) || !has(self.management.prometheusMetrics) || self.prometheusMetrics == self.management.prometheusMetrics",message="prometheusMetrics and management.prometheusMetrics disagree: set management.prometheusMetrics only"
type KafkaGatewayParametersSpec struct {
	// Replicas is the number of proxy pods.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
	// Management configures the HTTP port that serves health probes and metrics. Health probes
	// are always served, so leaving it out keeps the default port.
	// +optional
	Management *ManagementSpec `json:"management,omitempty"`
	// Port is the seed's spelling of management.port.
	// +optional
	Port *PortNumber `json:"port,omitempty"`
	// PrometheusMetrics is the seed's spelling of management.prometheusMetrics.
	// +optional
	PrometheusMetrics *bool `json:"prometheusMetrics,omitempty"`
	// IngressDomains are OpenShift router domains: a route hostname under one of them is exposed
	// through passthrough OpenShift Routes.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`
	IngressDomains []string `json:"ingressDomains,omitempty"`
	// ParentRefs name a user-owned Gateway API Gateway (or ListenerSet): route hostnames are then
	// exposed through gateway.networking.k8s.io/v1 TLSRoutes attached to it, as in Strimzi's
	// tlsroute listener.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	ParentRefs []GatewayParentReference `json:"parentRefs,omitempty"`
	// Limits bound the proxy's resource use; a field left out keeps the proxy's default.
	// +optional
	Limits *ProxyLimits `json:"limits,omitempty"`
	// Pod sets the scheduling, image pull secrets and extra metadata of the proxy pods.
	// +optional
	Pod *ProxyPodSettings `json:"pod,omitempty"`
	// Resources of the proxy container. Left out, the container requests cpu 100m and memory
	// 128Mi and has no limits: enough to be scheduled and admitted under a ResourceQuota on
	// requests, without throttling TLS handshakes or risking an OOM kill at a guessed size.
	// Proxies whose routes run KafkaFilters (which decompress and parse what clients send) get a
	// memory limit when none is set: 1Gi, or four times limits.filterMemoryBytes, or the memory
	// request, whichever is largest. GOMEMLIMIT is set to 90% of any memory limit.
	// A namespace whose ResourceQuota also covers limits needs them set here (or a LimitRange).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.claims)",message="resources.claims is not supported"
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Logging sets the proxy's log verbosity and format.
	// +optional
	Logging *ProxyLogging `json:"logging,omitempty"`
	// Services sets annotations and load balancer settings of the Services generated for routes,
	// for all routes and per route.
	// +optional
	Services *GeneratedServices `json:"services,omitempty"`
	// Members are member clusters (docs/stretch.md) where the same proxy also runs: its
	// Deployment, ConfigMap, Services and the Secrets it mounts are applied into each, in the
	// gateway's namespace, so clients in each cluster keep a local entry point when another
	// cluster, the central one included, is lost. OpenShift Routes and TLSRoutes stay central.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Members []GatewayMember `json:"members,omitempty"`
}

// GatewayMember is a member cluster that runs a copy of the gateway's proxy.
type GatewayMember struct {
	// Name identifies the member in status.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Cluster says how to reach the member, in the shape of Strimzi's KafkaNodePool spec.target.
	// +required
	Cluster MemberCluster `json:"cluster"`
}

// MemberCluster reaches a Kubernetes cluster: a kubeconfig Secret (key kubeconfig) in the
// gateway's namespace, and optionally the API server URL to use instead of the kubeconfig's.
type MemberCluster struct {
	// ClusterURL is the member's API server URL; the kubeconfig's server when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https://`
	ClusterURL string `json:"clusterUrl,omitempty"`
	// Secret names the kubeconfig Secret in the gateway's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Secret string `json:"secret"`
}

// ProxyPodSettings are pod template settings of the proxy Deployment. kafkalink's own labels
// and annotations, and the gateway's infrastructure ones, win over labels and annotations here;
// the operator's --allowed-metadata-prefixes restricts these as it does infrastructure metadata.
type ProxyPodSettings struct {
	// Labels are added to the proxy pods (not to the Deployment), for example for network
	// policies or cost reports.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are added to the proxy pods (not to the Deployment).
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Annotations map[string]string `json:"annotations,omitempty"`
	// NodeSelector is the pods' nodeSelector.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations are the pods' tolerations.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Affinity is the pods' affinity.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// TopologySpreadConstraints are the pods' topology spread constraints. Select the proxy
	// pods with the labels app.kubernetes.io/name: kafkalink-proxy and
	// app.kubernetes.io/instance: <gateway name>.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// PriorityClassName is the pods' priority class.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PriorityClassName *string `json:"priorityClassName,omitempty"`
	// ImagePullSecrets name Secrets of the gateway's namespace that pull the proxy image.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// ProxyLogging sets the proxy's log verbosity and format, passed as its -v and
// --logging-format flags.
type ProxyLogging struct {
	// Verbosity is the klog verbosity: 0 logs changes and problems, 2 state changes, 4 per
	// connection detail. Left out, the proxy's default (0).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Verbosity *int32 `json:"verbosity,omitempty"`
	// Format is text or json. Left out, the proxy's default (text).
	// +optional
	// +kubebuilder:validation:Enum=text;json
	Format *string `json:"format,omitempty"`
}

// GeneratedServices sets the Services generated for routes: the inline settings apply to every
// route, and an entry of routes overrides them for one route.
type GeneratedServices struct {
	ServiceSettings `json:",inline"`
	// Routes override the settings above for one KafkaRoute each: a field set in the entry
	// replaces the one above, and annotations are merged (the entry's win).
	// +optional
	// +listType=map
	// +listMapKey=route
	// +kubebuilder:validation:MaxItems=64
	Routes []RouteServiceSettings `json:"routes,omitempty"`
}

// RouteServiceSettings are the Service settings of one route.
type RouteServiceSettings struct {
	// Route is the name of a KafkaRoute in the gateway's namespace.
	// +required
	Route ObjectName `json:"route"`

	ServiceSettings `json:",inline"`
}

// ServiceSettings are settings of generated Services. Annotations go on every Service of the
// route; inClusterType only on the per-host Services of hostnames in the cluster domain; the
// other fields only on LoadBalancer Services (route hostnames outside the cluster domain), since
// Kubernetes refuses them on ClusterIP Services.
type ServiceSettings struct {
	// InClusterType is the form of the per-host Services (bootstrap and brokers) of hostnames
	// in the cluster domain: ClusterIP (the default) gives each a cluster IP; Headless sets
	// clusterIP: None, so cluster DNS answers a host with the proxy pods' own addresses. Every
	// ClusterIP Service takes an address from the cluster's Service range and costs the API
	// server an allocation whose work grows with the Services already there (docs/scale.md);
	// headless Services take none. A client then dials a proxy pod directly, on the listener's
	// port, which is the port the proxy listens on and the port kafkalink advertises, so nothing
	// else changes. Kubernetes does not let a Service change between the two forms: kafkalink
	// deletes and recreates the route's in-cluster Services when this changes (connections
	// through the old form break, and clients resolve the new one). Services of OpenShift
	// Route, TLSRoute and LoadBalancer exposure are not affected.
	// +optional
	// +kubebuilder:validation:Enum=ClusterIP;Headless
	InClusterType *InClusterServiceType `json:"inClusterType,omitempty"`
	// Annotations are added to the Services, for example a cloud load balancer's settings.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Annotations map[string]string `json:"annotations,omitempty"`
	// LoadBalancerClass selects the load balancer implementation. Kubernetes does not allow it
	// to change once a Service has it: delete the Service to change it (kafkalink recreates it).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	LoadBalancerClass *string `json:"loadBalancerClass,omitempty"`
	// ExternalTrafficPolicy is Cluster or Local; Local keeps the client's source address, which
	// limits.maxConnectionsPerSource then sees.
	// +optional
	// +kubebuilder:validation:Enum=Cluster;Local
	ExternalTrafficPolicy *corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`
	// LoadBalancerSourceRanges are the client CIDRs the load balancer accepts, such as
	// 203.0.113.0/24. (The schema checks their shape only, since CEL's isCIDR needs Kubernetes
	// 1.31; the operator refuses one that does not parse, with InvalidParameters.)
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:items:Pattern=`^[0-9a-fA-F:.]+/[0-9]{1,3}$`
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`
}

// InClusterServiceType is the form of the per-host Services of in-cluster hostnames.
type InClusterServiceType string

// The in-cluster Service forms.
const (
	// InClusterServiceClusterIP gives each per-host Service a cluster IP (the default).
	InClusterServiceClusterIP InClusterServiceType = "ClusterIP"
	// InClusterServiceHeadless makes each per-host Service headless (clusterIP: None).
	InClusterServiceHeadless InClusterServiceType = "Headless"
)

// ProxyLimits are passed to the proxy configuration's limits as written.
// +kubebuilder:validation:XValidation:rule="!has(self.maxFilteredFrameBytes) || !has(self.maxFrameBytes) || self.maxFilteredFrameBytes <= self.maxFrameBytes",message="maxFilteredFrameBytes must not exceed maxFrameBytes"
type ProxyLimits struct {
	// MaxConnections caps concurrent client connections over all listeners.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxConnections *int32 `json:"maxConnections,omitempty"`
	// MaxConnectionsPerSource caps concurrent client connections from one source address.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxConnectionsPerSource *int32 `json:"maxConnectionsPerSource,omitempty"`
	// HandshakesPerSecond caps new TLS handshakes per second over all listeners.
	// +optional
	// +kubebuilder:validation:Minimum=1
	HandshakesPerSecond *int32 `json:"handshakesPerSecond,omitempty"`
	// MaxFrameBytes is the largest Kafka frame accepted in either direction.
	// +optional
	// +kubebuilder:validation:Minimum=1024
	MaxFrameBytes *int32 `json:"maxFrameBytes,omitempty"`
	// IdleTimeout closes a connection whose client has sent no request for this long (responses
	// still flowing do not count).
	// +optional
	IdleTimeout *LimitDuration `json:"idleTimeout,omitempty"`
	// FirstRequestTimeout closes a client connection that sends no complete request this long
	// after its TLS handshake.
	// +optional
	FirstRequestTimeout *LimitDuration `json:"firstRequestTimeout,omitempty"`
	// WriteTimeout closes a connection whose peer does not accept written bytes for this long.
	// +optional
	WriteTimeout *LimitDuration `json:"writeTimeout,omitempty"`
	// MaxFilteredFrameBytes is the largest frame a KafkaFilter decodes (default 16 MiB), at
	// most maxFrameBytes.
	// +optional
	// +kubebuilder:validation:Minimum=1024
	MaxFilteredFrameBytes *int32 `json:"maxFilteredFrameBytes,omitempty"`
	// MaxBatchBytes is the largest record batch a KafkaFilter decompresses (default 8 MiB).
	// +optional
	// +kubebuilder:validation:Minimum=1024
	MaxBatchBytes *int32 `json:"maxBatchBytes,omitempty"`
	// DecompressionRatio bounds what a request's or response's records may take once
	// decompressed, as a multiple of its size (default 128; at least 64 KiB, at most
	// maxFrameBytes).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	DecompressionRatio *int32 `json:"decompressionRatio,omitempty"`
	// FilterMemoryBytes is the proxy's budget for KafkaFilter buffers over all connections
	// (default 256 MiB): requests beyond it wait briefly, then get a retriable error. Keep it
	// well under the container's memory limit.
	// +optional
	// +kubebuilder:validation:Minimum=1048576
	FilterMemoryBytes *int64 `json:"filterMemoryBytes,omitempty"`
}

// LimitDuration is a positive Go duration string such as "30s" or "10m".
//
// +kubebuilder:validation:MaxLength=32
// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 30s"
type LimitDuration string

// ManagementSpec configures the proxy's management HTTP port.
type ManagementSpec struct {
	// Port serves /livez, /readyz and, when enabled, /metrics.
	// +optional
	// +kubebuilder:default=9190
	Port *PortNumber `json:"port,omitempty"`
	// PrometheusMetrics serves Prometheus metrics on /metrics and annotates the pods for scraping.
	// +optional
	PrometheusMetrics *bool `json:"prometheusMetrics,omitempty"`
}

// GatewayParentReference is a Gateway API parentRef for generated TLSRoutes.
type GatewayParentReference struct {
	// Group of the parent; gateway.networking.k8s.io when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Group *string `json:"group,omitempty"`
	// Kind of the parent; Gateway when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Kind *string `json:"kind,omitempty"`
	// Namespace of the parent; the gateway's namespace when unset.
	// +optional
	Namespace *Namespace `json:"namespace,omitempty"`
	// Name of the parent.
	// +required
	Name ObjectName `json:"name"`
	// SectionName is the listener of the parent.
	// +optional
	SectionName *SectionName `json:"sectionName,omitempty"`
	// Port of the parent listener.
	// +optional
	Port *PortNumber `json:"port,omitempty"`
}

// KafkaGatewayParametersList is a list of KafkaGatewayParameters.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type KafkaGatewayParametersList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the KafkaGatewayParameters.
	Items []KafkaGatewayParameters `json:"items"`
}
