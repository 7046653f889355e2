package v1alpha1

import (
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
}

// ProxyLimits are passed to the proxy configuration's limits as written.
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
