package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KafkaRoute exposes one Kafka cluster through the listeners of a KafkaGateway. Each parentRef
// carries its own brokers, hostnames and rules, so one route can be exposed under different
// hostnames on different listeners.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kroute,categories=kafkalink
// +kubebuilder:printcolumn:name="Gateway",type=string,JSONPath=`.spec.parentRefs[*].name`
// +kubebuilder:printcolumn:name="Hostnames",type=string,JSONPath=`.spec.parentRefs[*].hostnames[*]`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.parents[*].conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KafkaRoute struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the route.
	// +required
	Spec KafkaRouteSpec `json:"spec"`
	// Status reports, per parent, whether the route was accepted and its references resolved.
	// +optional
	Status RouteStatus `json:"status,omitempty"`
}

// Limits on what one route may ask for. Every hostname of a parentRef becomes one bootstrap host
// and one host per broker id, each with its own Service (and OpenShift Route or TLSRoute), so
// without a bound a single small route could ask for hundreds of thousands of objects. The
// schema enforces them at admission (the numbers are repeated in the markers below) and the
// translator again, for routes stored before the limits existed.
const (
	// MaxBrokerIDsPerParentRef bounds the broker ids of one parentRef, over all its brokers entries.
	MaxBrokerIDsPerParentRef = 256
	// MaxHostsPerRoute bounds the hosts of a route: the sum over its parentRefs of
	// len(hostnames) × (broker ids + 1).
	MaxHostsPerRoute = 1024
)

// KafkaRouteSpec is the route.
//
// +kubebuilder:validation:XValidation:rule="self.parentRefs.map(p, size(p.hostnames) * ((has(p.brokers) ? p.brokers.map(b, size(b.advertisedBrokerIds)).sum() : 0) + 1)).sum() <= 1024",message="the route asks for more than 1024 hosts: the sum over parentRefs of len(hostnames) x (broker ids + 1) must be at most 1024, as each host needs its own Service"
type KafkaRouteSpec struct {
	// ParentRefs are the gateway listeners the route attaches to.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	ParentRefs []KafkaRouteParentReference `json:"parentRefs"`
}

// KafkaRouteParentReference attaches the route to one listener of a KafkaGateway, with the brokers,
// hostnames and rules that apply there.
//
// +kubebuilder:validation:XValidation:rule="!has(self.group) || self.group == 'kroxylicious.io'",message="group must be kroxylicious.io"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind == 'KafkaGateway'",message="kind must be KafkaGateway"
// +kubebuilder:validation:XValidation:rule="!has(self.brokers) || self.brokers.map(b, size(b.advertisedBrokerIds)).sum() <= 256",message="brokers list more than 256 broker ids in all"
// +kubebuilder:validation:XValidation:rule="has(self.brokers) || self.rules.all(r, r.backendRefs.all(b, has(b.kind) && b.kind == 'Kafka'))",message="brokers is required unless the backend is a Strimzi Kafka, whose broker ids kafkalink reads from its node pools"
type KafkaRouteParentReference struct {
	// Group of the parent; must be kroxylicious.io.
	// +optional
	// +kubebuilder:default="kroxylicious.io"
	// +kubebuilder:validation:MaxLength=253
	Group *string `json:"group,omitempty"`
	// Kind of the parent; must be KafkaGateway.
	// +optional
	// +kubebuilder:default=KafkaGateway
	// +kubebuilder:validation:MaxLength=63
	Kind *string `json:"kind,omitempty"`
	// Name of the KafkaGateway, in the route's namespace.
	// +required
	Name ObjectName `json:"name"`
	// SectionName is the listener; every listener of the gateway when unset.
	// +optional
	SectionName *SectionName `json:"sectionName,omitempty"`
	// Brokers describes the node ids of the target cluster, so per-broker Services can be made.
	// Required for a Service backend. For a Strimzi Kafka backend the broker ids are read from the
	// Kafka's node pools and follow scale-outs; brokers given there must match them, or the route
	// says so in status.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Brokers []BrokerTopology `json:"brokers,omitempty"`
	// Hostnames are host patterns with one '%' in the first label, each a virtual cluster: for
	// "my-cluster-%.example.com" the bootstrap is my-cluster-bootstrap.example.com and broker N is
	// my-cluster-broker-N.example.com.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Hostnames []PercentHostname `json:"hostnames"`
	// Rules send the traffic to a backend, through filters.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1
	Rules []KafkaRouteRule `json:"rules"`
}

// PercentHostname is a DNS name whose first label holds one '%' after a non-empty prefix. The
// '%' stands for "bootstrap" or "broker-N".
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:XValidation:rule="!self.contains('*')",message="hostname must not contain '*': write one '%' in the first label instead, as in my-cluster-%.example.com"
// +kubebuilder:validation:XValidation:rule="self.matches('^[^.]*%')",message="hostname must have a '%' in its first label, as in my-cluster-%.example.com"
// +kubebuilder:validation:XValidation:rule="self.matches('^[^%]*%[^%]*$')",message="hostname must have exactly one '%'"
// +kubebuilder:validation:XValidation:rule="!self.startsWith('%')",message="hostname needs a prefix before '%', as in my-cluster-%.example.com"
// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9][-a-z0-9]*%[-a-z0-9]*(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$')",message="hostname must be lower-case DNS labels with at least two labels, as in my-cluster-%.example.com"
type PercentHostname string

// BrokerIdentityMappingIdentity names broker N's host by its node id: prefix-broker-N.suffix.
const BrokerIdentityMappingIdentity = "identity"

// BrokerIdentityMappingHash names each broker's host by a keyed token that does not reveal its
// node id: prefix-broker-<26 characters>.suffix, stable while the gateway's key Secret lives.
const BrokerIdentityMappingHash = "hash"

// BrokerTopology lists node ids of the target cluster.
type BrokerTopology struct {
	// AdvertisedBrokerIds are the node ids clients are told about.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:Minimum=0
	AdvertisedBrokerIds []int32 `json:"advertisedBrokerIds"`
	// BrokerIdentityMapping is how broker host names are made from node ids: identity (the
	// default: prefix-broker-N.suffix) or hash (a keyed token per node id, which hides the ids
	// from host names). Other values are accepted by the schema and reported as
	// UnsupportedValue in the route's status.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	BrokerIdentityMapping *string `json:"brokerIdentityMapping,omitempty"`
}

// KafkaRouteRule sends traffic through filters to a backend.
type KafkaRouteRule struct {
	// Name of the rule.
	// +required
	Name SectionName `json:"name"`
	// Filters are KafkaFilters applied in order.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Filters []FilterReference `json:"filters,omitempty"`
	// BackendRefs is the Kafka cluster: its bootstrap Service, or a Strimzi Kafka.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1
	BackendRefs []BackendReference `json:"backendRefs"`
	// DiscoveryCredential is a SCRAM user the proxy authenticates as for its own Metadata
	// request, which finds a broker's address when a proxy replica has not relayed the cluster's
	// metadata yet (after a restart, or when a client's broker connection lands on another
	// replica than its bootstrap). Set it for a Service backend whose listener requires SASL;
	// without it such a replica cannot find the broker. A Strimzi Kafka backend needs none for
	// that: its broker addresses are known. It is also the proxy's own identity at the cluster
	// when a SaslTermination filter authenticates the clients: every upstream connection then
	// authenticates as this user (one not needed when the listener requires no SASL).
	// +optional
	DiscoveryCredential *DiscoveryCredential `json:"discoveryCredential,omitempty"`
}

// DiscoveryCredential is a SCRAM user in a Secret: key password, and key username or else the
// Secret's name, as a Strimzi KafkaUser's Secret has them.
type DiscoveryCredential struct {
	// SecretRef is the Secret; another namespace needs a ReferenceGrant there.
	// +required
	SecretRef SecretObjectReference `json:"secretRef"`
	// Mechanism is the SASL mechanism.
	// +optional
	// +kubebuilder:default=SCRAM-SHA-512
	// +kubebuilder:validation:Enum=SCRAM-SHA-256;SCRAM-SHA-512
	Mechanism string `json:"mechanism,omitempty"`
}

// FilterReference points at a KafkaFilter in the route's namespace.
//
// +kubebuilder:validation:XValidation:rule="!has(self.group) || self.group == 'filter.kroxylicious.io'",message="group must be filter.kroxylicious.io"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind == 'KafkaFilter'",message="kind must be KafkaFilter"
type FilterReference struct {
	// Group must be filter.kroxylicious.io.
	// +optional
	// +kubebuilder:default="filter.kroxylicious.io"
	// +kubebuilder:validation:MaxLength=253
	Group *string `json:"group,omitempty"`
	// Kind must be KafkaFilter.
	// +optional
	// +kubebuilder:default=KafkaFilter
	// +kubebuilder:validation:MaxLength=63
	Kind *string `json:"kind,omitempty"`
	// Name of the KafkaFilter.
	// +required
	Name ObjectName `json:"name"`
}

// BackendReference points at a Kafka cluster: the bootstrap Service of any Kafka (group "", kind
// Service), or a Strimzi Kafka (group kafka.strimzi.io, kind Kafka), from which kafkalink derives the
// bootstrap address, the upstream TLS trust, the broker ids and every broker's address.
//
// +kubebuilder:validation:XValidation:rule="(!has(self.group) || size(self.group) == 0) && (!has(self.kind) || self.kind == 'Service') || has(self.group) && self.group == 'kafka.strimzi.io' && has(self.kind) && self.kind == 'Kafka'",message="a backendRef is a core Service (group \"\", kind Service) or a Strimzi Kafka (group kafka.strimzi.io, kind Kafka)"
type BackendReference struct {
	// Group is "" (core) for a Service, kafka.strimzi.io for a Kafka.
	// +optional
	// +kubebuilder:default=""
	// +kubebuilder:validation:MaxLength=253
	Group *string `json:"group,omitempty"`
	// Kind is Service or, with group kafka.strimzi.io, Kafka.
	// +optional
	// +kubebuilder:default=Service
	// +kubebuilder:validation:MaxLength=63
	Kind *string `json:"kind,omitempty"`
	// Name of the Service or Kafka.
	// +required
	Name ObjectName `json:"name"`
	// Namespace of the Service or Kafka; the route's namespace when unset. Another namespace needs
	// a ReferenceGrant there.
	// +optional
	Namespace *Namespace `json:"namespace,omitempty"`
	// Port of the Service or, for a Kafka, of the listener (spec.kafka.listeners[].port) to use.
	// +required
	Port PortNumber `json:"port"`
}

// RouteStatus is Gateway API's route status.
type RouteStatus struct {
	// Parents is the status per parentRef.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Parents []RouteParentStatus `json:"parents,omitempty"`
}

// RouteParentStatus is the status of a route for one parent.
type RouteParentStatus struct {
	// ParentRef is the parent this status is about.
	// +required
	ParentRef ParentReference `json:"parentRef"`
	// ControllerName is the controller that wrote this entry.
	// +required
	ControllerName string `json:"controllerName"`
	// Conditions are Accepted and ResolvedRefs.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ParentReference identifies a parent (a gateway listener) in status.
type ParentReference struct {
	// Group of the parent.
	// +optional
	Group *string `json:"group,omitempty"`
	// Kind of the parent.
	// +optional
	Kind *string `json:"kind,omitempty"`
	// Namespace of the parent.
	// +optional
	Namespace *Namespace `json:"namespace,omitempty"`
	// Name of the parent.
	// +required
	Name ObjectName `json:"name"`
	// SectionName is the listener.
	// +optional
	SectionName *SectionName `json:"sectionName,omitempty"`
}

// KafkaRouteList is a list of KafkaRoutes.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type KafkaRouteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the KafkaRoutes.
	Items []KafkaRoute `json:"items"`
}
