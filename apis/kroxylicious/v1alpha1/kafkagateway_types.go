package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProtocolKafkaTLS is the listener protocol of a KafkaGateway: Kafka over TLS, routed by SNI.
const ProtocolKafkaTLS = "kroxylicious.io/kafka-tls"

// KafkaGateway is a Kafka proxy deployment: the listeners (ports and certificates) that KafkaRoutes
// attach to. Apart from kind and apiVersion it is a compatible subset of Gateway API's Gateway.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kgw,categories=kafkalink
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.addresses[*].value`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Programmed",type=string,JSONPath=`.status.conditions[?(@.type=="Programmed")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KafkaGateway struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the gateway.
	// +required
	Spec KafkaGatewaySpec `json:"spec"`
	// Status is the observed state of the gateway, shaped as Gateway API's GatewayStatus.
	// +optional
	Status KafkaGatewayStatus `json:"status,omitempty"`
}

// KafkaGatewaySpec is the desired state of a KafkaGateway.
type KafkaGatewaySpec struct {
	// Listeners are the ports the proxy serves, each with the certificates it presents.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Listeners []Listener `json:"listeners"`
	// Infrastructure holds labels and annotations for the generated objects and a reference to
	// KafkaGatewayParameters.
	// +optional
	Infrastructure *GatewayInfrastructure `json:"infrastructure,omitempty"`
	// BackendTLS configures how the proxy presents itself to TLS backends.
	// +optional
	BackendTLS *GatewayBackendTLS `json:"backendTLS,omitempty"`
}

// Listener is one port of the proxy. Every KafkaRoute attached to it shares the port, told apart
// by the TLS server name (SNI) the client sends.
//
// +kubebuilder:validation:XValidation:rule="has(self.tls)",message="tls is required: listeners route by TLS server name (SNI)"
type Listener struct {
	// Name is unique within the KafkaGateway; KafkaRoutes attach to it through sectionName.
	// +required
	Name SectionName `json:"name"`
	// Port is the network port the proxy listens on.
	// +required
	Port PortNumber `json:"port"`
	// Protocol is the listener protocol; kafkalink serves kroxylicious.io/kafka-tls.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Protocol string `json:"protocol"`
	// TLS is the TLS configuration of the listener.
	// +optional
	TLS *ListenerTLSConfig `json:"tls,omitempty"`
}

// TLSModeTerminate terminates TLS at the proxy, the only mode kafkalink supports.
const TLSModeTerminate = "Terminate"

// ListenerTLSConfig is the TLS configuration of a listener.
type ListenerTLSConfig struct {
	// Mode is the TLS mode; only Terminate is supported.
	// +optional
	// +kubebuilder:default=Terminate
	// +kubebuilder:validation:Enum=Terminate
	Mode *string `json:"mode,omitempty"`
	// CertificateRefs are the Secrets (tls.crt and tls.key) the proxy may present. For each
	// virtual cluster the proxy picks the certificate whose names cover its hosts.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	CertificateRefs []SecretObjectReference `json:"certificateRefs"`
	// FrontendValidation makes the proxy require client certificates signed by these CAs.
	// +optional
	FrontendValidation *FrontendTLSValidation `json:"frontendValidation,omitempty"`
}

// FrontendTLSValidation configures client certificate validation (mutual TLS).
type FrontendTLSValidation struct {
	// CACertificateRefs are Secrets (ca.crt) holding the CAs that sign client certificates.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	CACertificateRefs []SecretObjectReference `json:"caCertificateRefs,omitempty"`
	// Options are TLS protocol and cipher settings for client connections.
	// +optional
	Options TLSOptions `json:"options,omitempty"`
}

// GatewayInfrastructure is the infrastructure section of a Gateway.
type GatewayInfrastructure struct {
	// Labels are added to every object generated for this gateway.
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are added to every object generated for this gateway.
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	Annotations map[string]string `json:"annotations,omitempty"`
	// ParametersRef points at the KafkaGatewayParameters of this gateway.
	// +optional
	ParametersRef *LocalParametersReference `json:"parametersRef,omitempty"`
}

// LocalParametersReference points at a KafkaGatewayParameters in the gateway's namespace.
//
// +kubebuilder:validation:XValidation:rule="self.group == 'kroxylicious.io'",message="group must be kroxylicious.io"
// +kubebuilder:validation:XValidation:rule="self.kind == 'KafkaGatewayParameters'",message="kind must be KafkaGatewayParameters"
type LocalParametersReference struct {
	// Group must be kroxylicious.io.
	// +required
	Group string `json:"group"`
	// Kind must be KafkaGatewayParameters.
	// +required
	Kind string `json:"kind"`
	// Name of the KafkaGatewayParameters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// GatewayBackendTLS configures TLS from the proxy to the Kafka clusters behind it.
type GatewayBackendTLS struct {
	// ClientCertificateRef is the Secret (tls.crt and tls.key) the proxy presents to backends
	// that ask for a client certificate.
	// +optional
	ClientCertificateRef *SecretObjectReference `json:"clientCertificateRef,omitempty"`
}

// KafkaGatewayStatus is the observed state of a KafkaGateway; its schema is Gateway's.
type KafkaGatewayStatus struct {
	// Addresses are the addresses the gateway is reachable at (LoadBalancer ingress).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Addresses []GatewayStatusAddress `json:"addresses,omitempty"`
	// Conditions are Accepted and Programmed, as in Gateway API.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Listeners is the status of each listener.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Listeners []ListenerStatus `json:"listeners,omitempty"`
	// Members report the proxy in each member cluster of the gateway's parameters.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Members []GatewayMemberStatus `json:"members,omitempty"`
}

// GatewayMemberStatus is the proxy's state in one member cluster.
type GatewayMemberStatus struct {
	// Name is the member's name in the parameters.
	// +required
	Name string `json:"name"`
	// Cluster is the member's cluster, kept so its proxy can be removed after the member left
	// the parameters.
	// +required
	Cluster MemberCluster `json:"cluster"`
	// Reachable is whether the member's API server answered kafkalink's last request.
	// +required
	Reachable bool `json:"reachable"`
	// Programmed is whether the member runs the current proxy configuration with at least one
	// available replica.
	// +required
	Programmed bool `json:"programmed"`
	// Message says what is missing or failed; it never holds credentials.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// GatewayStatusAddress is an address of the gateway.
type GatewayStatusAddress struct {
	// Type is IPAddress or Hostname.
	// +optional
	Type *string `json:"type,omitempty"`
	// Value is the address.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Value string `json:"value"`
}

// ListenerStatus is the status of one listener, as in Gateway API.
type ListenerStatus struct {
	// Name of the listener.
	// +required
	Name SectionName `json:"name"`
	// SupportedKinds are the route kinds the listener accepts.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	SupportedKinds []RouteGroupKind `json:"supportedKinds"`
	// AttachedRoutes counts the routes accepted on this listener.
	// +required
	AttachedRoutes int32 `json:"attachedRoutes"`
	// Conditions are Accepted, ResolvedRefs, Conflicted and Programmed.
	// +required
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions"`
}

// RouteGroupKind names a route kind.
type RouteGroupKind struct {
	// Group of the route kind.
	// +optional
	Group *string `json:"group,omitempty"`
	// Kind of the route.
	// +required
	Kind string `json:"kind"`
}

// KafkaGatewayList is a list of KafkaGateways.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type KafkaGatewayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the KafkaGateways.
	Items []KafkaGateway `json:"items"`
}
