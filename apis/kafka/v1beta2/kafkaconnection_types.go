package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KafkaConnection asks for one Secret of type servicebinding.io/kafka that holds everything an
// application needs to reach a Kafka cluster as a user: bootstrap servers, security protocol,
// truststores and credentials. status.binding.name names that Secret, so a Service Binding
// implementation can project it into a workload.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kconn,categories=kafkalink
// +kubebuilder:metadata:labels="servicebinding.io/provisioned-service=true"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.kafka.name`
// +kubebuilder:printcolumn:name="User",type=string,JSONPath=`.spec.user.name`
// +kubebuilder:printcolumn:name="Listener",type=string,JSONPath=`.status.listener`
// +kubebuilder:printcolumn:name="Binding",type=string,JSONPath=`.status.binding.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Bootstrap",type=string,JSONPath=`.status.bootstrapServers`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KafkaConnection struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the Kafka cluster, optionally a listener, and optionally a user.
	// +required
	Spec KafkaConnectionSpec `json:"spec"`
	// Status names the binding Secret and reports readiness.
	// +optional
	Status KafkaConnectionStatus `json:"status,omitempty"`
}

// Store formats of the binding Secret's truststore and keystore.
const (
	// StoreFormatPEM writes ssl.truststore.crt and ssl.keystore.crt/.key (text).
	StoreFormatPEM = "PEM"
	// StoreFormatPKCS12 writes ssl.truststore.p12 and ssl.keystore.p12 with their passwords (binary).
	StoreFormatPKCS12 = "PKCS12"
	// StoreFormatJKS writes ssl.truststore.jks and ssl.keystore.jks with their passwords (binary).
	StoreFormatJKS = "JKS"
)

// KafkaConnectionSpec names the Kafka cluster, optionally a listener, and optionally a user.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.user) && has(self.oauth))",message="user and oauth are two ways to authenticate: name one"
type KafkaConnectionSpec struct {
	// Kafka is the cluster to connect to: a Strimzi Kafka, or a KafkaRoute in front of one.
	// +required
	Kafka KafkaReference `json:"kafka"`
	// User is the KafkaUser whose credentials go into the binding; none when unset.
	// +optional
	User *UserReference `json:"user,omitempty"`
	// OAuth binds an oauth listener (Strimzi's authentication type oauth, as Keycloak installs use):
	// the application authenticates with OAUTHBEARER, getting tokens from the token endpoint with
	// the client credentials of a Secret.
	// +optional
	OAuth *OAuthClient `json:"oauth,omitempty"`
	// StoreFormats are the truststore and keystore formats written to the binding Secret.
	// The default, PEM and PKCS12, is the proposal's. Spring Cloud Bindings (2.0.2 and later)
	// and Quarkus read every entry as UTF-8 text and fail to start on binary entries: set [PEM].
	// +optional
	// +listType=set
	// +kubebuilder:default={PEM,PKCS12}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:items:Enum=PEM;PKCS12;JKS
	StoreFormats []string `json:"storeFormats,omitempty"`
}

// Kinds a KafkaConnection can name in spec.kafka.
const (
	// KindKafka is a Strimzi Kafka (kafka.strimzi.io, v1 or v1beta2).
	KindKafka = "Kafka"
	// KindKafkaRoute is a kafkalink KafkaRoute (kroxylicious.io/v1alpha1): the proxied cluster
	// looks to the application exactly like a real one.
	KindKafkaRoute = "KafkaRoute"
)

// KafkaReference names the cluster: a Strimzi Kafka, or a KafkaRoute that proxies one.
//
// +kubebuilder:validation:XValidation:rule="self.kind in ['Kafka', 'KafkaRoute']",message="kind must be Kafka or KafkaRoute"
// +kubebuilder:validation:XValidation:rule="self.kind != 'Kafka' || self.apiVersion.startsWith('kafka.strimzi.io/')",message="a Kafka's apiVersion must be in the kafka.strimzi.io group, such as kafka.strimzi.io/v1beta2"
// +kubebuilder:validation:XValidation:rule="self.kind != 'KafkaRoute' || self.apiVersion == 'kroxylicious.io/v1alpha1'",message="a KafkaRoute's apiVersion must be kroxylicious.io/v1alpha1"
// +kubebuilder:validation:XValidation:rule="self.kind == 'KafkaRoute' || (!has(self.hostname) && !has(self.caSecret))",message="hostname and caSecret apply to a KafkaRoute only"
type KafkaReference struct {
	// APIVersion of the cluster object. For a Kafka either kafka.strimzi.io/v1 or v1beta2 is
	// fine: the operator reads whichever version the API server serves.
	// +required
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// Kind is Kafka or KafkaRoute.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name of the Kafka or KafkaRoute.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the Kafka or KafkaRoute; the KafkaConnection's namespace when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`
	// Listener picks a listener by name: a Kafka listener, or for a KafkaRoute the gateway
	// listener (sectionName). When unset the operator picks one that fits the user.
	// +optional
	Listener *ListenerReference `json:"listener,omitempty"`
	// Hostname picks, for a KafkaRoute, one of its hostnames as written in the route (such as
	// my-cluster-%.my-namespace.svc.cluster.local); the first in-cluster one when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Hostname string `json:"hostname,omitempty"`
	// CASecret names, for a KafkaRoute, a Secret in the route's namespace whose ca.crt signs the
	// gateway listener's certificate; the certificate Secret's own ca.crt (as cert-manager
	// writes it) when unset.
	// +optional
	CASecret *SecretReference `json:"caSecret,omitempty"`
}

// SecretReference names a Secret.
type SecretReference struct {
	// Name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ListenerReference names a listener of a Kafka.
type ListenerReference struct {
	// Name of the listener.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// UserReference names a Strimzi KafkaUser.
//
// +kubebuilder:validation:XValidation:rule="self.kind == 'KafkaUser'",message="kind must be KafkaUser"
// +kubebuilder:validation:XValidation:rule="self.apiVersion.startsWith('kafka.strimzi.io/')",message="apiVersion must be in the kafka.strimzi.io group, such as kafka.strimzi.io/v1beta2"
type UserReference struct {
	// APIVersion of the KafkaUser.
	// +required
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// Kind must be KafkaUser.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name of the KafkaUser.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the KafkaUser; the KafkaConnection's namespace when unset. Another namespace
	// needs a ReferenceGrant there that allows KafkaConnections from this one.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`
}

// KafkaConnectionStatus names the binding Secret and reports readiness.
type KafkaConnectionStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions holds Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Binding is the Service Binding provisioned-service reference to the binding Secret.
	// +optional
	Binding *BindingReference `json:"binding,omitempty"`
	// Listener is the listener chosen; later choices prefer it, so the binding does not flap.
	// +optional
	Listener string `json:"listener,omitempty"`
	// BootstrapServers are the bootstrap servers written to the binding.
	// +optional
	BootstrapServers string `json:"bootstrapServers,omitempty"`
}

// BindingReference names the binding Secret.
type BindingReference struct {
	// Name of the Secret.
	// +required
	Name string `json:"name"`
}

// KafkaConnectionList is a list of KafkaConnections.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type KafkaConnectionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the KafkaConnections.
	Items []KafkaConnection `json:"items"`
}

// OAuthClient is an OAuth 2.0 client of the client-credentials grant.
type OAuthClient struct {
	// ClientSecretRef names a Secret in the connection's namespace with the keys clientId and
	// clientSecret.
	// +required
	ClientSecretRef SecretReference `json:"clientSecretRef"`
	// TokenEndpointURI is where clients get tokens; the listener's tokenEndpointUri when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	TokenEndpointURI string `json:"tokenEndpointUri,omitempty"`
	// Scope is the OAuth scope to ask for; none when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Scope string `json:"scope,omitempty"`
}
