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
// +kubebuilder:printcolumn:name="Targets",type=string,JSONPath=`.status.targetsSynced`
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
// +kubebuilder:validation:XValidation:rule="!has(self.allowExternalListener) || !self.allowExternalListener || self.kafka.kind == 'Kafka'",message="allowExternalListener applies to a Kafka only: a KafkaRoute's hostname chooses where the application connects"
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
	// Targets are member clusters where the same binding Secret is also written, for
	// applications that run there (a stretch Kafka's member clusters, for example). Each is
	// reached through a kubeconfig Secret in this namespace, as Strimzi's KafkaNodePool
	// spec.target names one. The copies are removed when the connection or the target goes
	// (finalizer kafkalink.io/member-bindings). docs/stretch.md has the model and the RBAC.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Targets []BindingTarget `json:"targets,omitempty"`
	// AllowExternalListener lets kafkalink choose, when spec.kafka.listener names none, a
	// listener reached from outside the cluster (route, loadbalancer, nodeport, ingress,
	// tlsroute) when no in-cluster one (internal, cluster-ip) fits. Unset, such a connection is
	// not Ready (NoInternalListener), as the Strimzi proposal's step 8 says: applications in the
	// cluster are not sent out and back through a load balancer by surprise.
	// +optional
	AllowExternalListener bool `json:"allowExternalListener,omitempty"`
	// SecretName names the binding Secret, in the connection's namespace; the connection's own
	// name when unset (the Strimzi Access Operator's field of the same name). Changing it
	// writes the new Secret, points status.binding at it, and removes the old one.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName,omitempty"`
	// Template adds labels and annotations to the binding Secret, in the Strimzi Access
	// Operator's shape (spec.template.secret.metadata). The operator's
	// --allowed-metadata-prefixes restricts their keys.
	// +optional
	Template *ConnectionTemplate `json:"template,omitempty"`
}

// ConnectionTemplate customizes what a KafkaConnection generates.
type ConnectionTemplate struct {
	// Secret customizes the binding Secret.
	// +optional
	Secret *SecretTemplate `json:"secret,omitempty"`
}

// SecretTemplate customizes the binding Secret.
type SecretTemplate struct {
	// Metadata holds the labels and annotations put on the binding Secret.
	// +optional
	Metadata *MetadataTemplate `json:"metadata,omitempty"`
}

// MetadataTemplate holds labels and annotations for a generated object. Keys are Kubernetes
// qualified names (an optional DNS subdomain prefix and a slash, then a name of at most 63
// characters); kafkalink's own keys (kafkalink.io/ and app.kubernetes.io/managed-by) are refused.
//
// +kubebuilder:validation:XValidation:rule="!has(self.labels) || self.labels.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="label keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 characters of [A-Za-z0-9-_.] starting and ending alphanumeric"
// +kubebuilder:validation:XValidation:rule="!has(self.annotations) || self.annotations.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="annotation keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 characters of [A-Za-z0-9-_.] starting and ending alphanumeric"
// +kubebuilder:validation:XValidation:rule="!has(self.labels) || self.labels.all(k, !k.startsWith('kafkalink.io/') && k != 'app.kubernetes.io/managed-by')",message="labels kafkalink.io/* and app.kubernetes.io/managed-by are kafkalink's own"
// +kubebuilder:validation:XValidation:rule="!has(self.annotations) || self.annotations.all(k, !k.startsWith('kafkalink.io/'))",message="annotations kafkalink.io/* are kafkalink's own"
type MetadataTemplate struct {
	// Labels put on the generated object.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 317)",message="a label key is at most 317 characters (a 253-character prefix, '/', a 63-character name)"
	Labels map[string]LabelValue `json:"labels,omitempty"`
	// Annotations put on the generated object; each value at most 4096 characters.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 317)",message="an annotation key is at most 317 characters (a 253-character prefix, '/', a 63-character name)"
	Annotations map[string]AnnotationValue `json:"annotations,omitempty"`
}

// LabelValue is a label's value: empty, or at most 63 characters of [A-Za-z0-9-_.] starting and
// ending alphanumeric.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`
type LabelValue string

// AnnotationValue is an annotation's value.
// +kubebuilder:validation:MaxLength=4096
type AnnotationValue string

// BindingTarget is a member cluster and namespace that receive a copy of the binding Secret.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a target cannot change: add one with another name and remove this one, so the old copy is removed"
type BindingTarget struct {
	// Name identifies the target in status and in the annotation that abandons a copy
	// (kafkalink.io/abandon-targets); the member cluster's name, such as member-a.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Cluster says how to reach the member cluster.
	// +required
	Cluster ClusterTarget `json:"cluster"`
	// Namespace in the member cluster where the Secret is written; the connection's namespace
	// when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`
}

// ClusterTarget reaches a Kubernetes cluster, in the shape of Strimzi's KafkaNodePool spec.target.
type ClusterTarget struct {
	// ClusterURL is the member's API server URL; the kubeconfig's server when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https://`
	ClusterURL string `json:"clusterUrl,omitempty"`
	// Secret names a Secret in the connection's namespace whose key kubeconfig holds a
	// kubeconfig for the member cluster (a ServiceAccount token kubeconfig is the documented
	// way). Its credentials decide what kafkalink may do there.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Secret string `json:"secret"`
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
	// Stretch says, for a stretch Kafka (annotated strimzi.io/stretch-mode: enabled), how the
	// bootstrap servers reach it from every member cluster.
	// +optional
	Stretch *StretchStatus `json:"stretch,omitempty"`
	// Targets report each member cluster's copy of the binding Secret.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Targets []TargetStatus `json:"targets,omitempty"`
	// TargetsSynced counts the targets whose copy is current, as synced/all (such as 1/2);
	// empty without targets.
	// +optional
	TargetsSynced string `json:"targetsSynced,omitempty"`
}

// Addressing modes of a stretch Kafka's bootstrap servers.
const (
	// AddressingServiceExport: the clusterset name of the exported bootstrap Service
	// (<service>.<namespace>.svc.clusterset.local), served by every member that exports it.
	AddressingServiceExport = "ServiceExport"
	// AddressingPerCluster: one Submariner per-cluster name for each member cluster
	// (<clusterId>.<service>.<namespace>.svc.clusterset.local).
	AddressingPerCluster = "PerCluster"
	// AddressingExternal: the listener's own addresses, which are outside every cluster.
	AddressingExternal = "External"
)

// StretchStatus is how a stretch Kafka's bootstrap servers survive the loss of one cluster.
type StretchStatus struct {
	// Addressing is ServiceExport, PerCluster or External.
	// +required
	Addressing string `json:"addressing"`
	// Clusters are the Submariner cluster ids (of the Kafka's node pools) the addresses cover.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	Clusters []string `json:"clusters,omitempty"`
}

// TargetStatus is the state of one member cluster's copy of the binding Secret.
type TargetStatus struct {
	// Name is the target's name in spec.targets.
	// +required
	Name string `json:"name"`
	// Cluster is the target's member cluster, kept so a copy can be removed after its target
	// left spec.targets.
	// +required
	Cluster ClusterTarget `json:"cluster"`
	// Namespace is where the copy is in the member cluster.
	// +required
	Namespace string `json:"namespace"`
	// Reachable is whether the member's API server answered kafkalink's last request.
	// +required
	Reachable bool `json:"reachable"`
	// Synced is whether the copy holds the current binding.
	// +required
	Synced bool `json:"synced"`
	// LastSyncTime is when the copy last became current.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// Message says what failed, when something did; it never holds credentials.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
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
