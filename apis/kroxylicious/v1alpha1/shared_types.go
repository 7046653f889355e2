package v1alpha1

// ObjectName is the name of a Kubernetes object.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
type ObjectName string

// Namespace is the name of a Kubernetes namespace.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
type Namespace string

// SectionName names a part of an object, such as a listener of a KafkaGateway or a port of a Service.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
type SectionName string

// PortNumber is a network port.
//
// +kubebuilder:validation:Minimum=1
// +kubebuilder:validation:Maximum=65535
type PortNumber int32

// SecretObjectReference points at a Secret holding key material. As in Gateway API, group defaults
// to the core group and kind to Secret, and neither may be anything else. A namespace other than the
// referrer's needs a ReferenceGrant; the controller checks that, because a schema cannot see
// metadata.namespace.
//
// +kubebuilder:validation:XValidation:rule="!has(self.group) || size(self.group) == 0",message="group must be the empty string (the core API group)"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind == 'Secret'",message="kind must be Secret"
type SecretObjectReference struct {
	// Group is the API group of the referent; only "" (core) is supported.
	// +optional
	// +kubebuilder:default=""
	// +kubebuilder:validation:MaxLength=253
	Group *string `json:"group,omitempty"`
	// Kind is the kind of the referent; only Secret is supported.
	// +optional
	// +kubebuilder:default=Secret
	// +kubebuilder:validation:MaxLength=63
	Kind *string `json:"kind,omitempty"`
	// Name is the name of the Secret.
	// +required
	Name ObjectName `json:"name"`
	// Namespace is the namespace of the Secret; the referrer's namespace when unset.
	// +optional
	Namespace *Namespace `json:"namespace,omitempty"`
}

// TLSOptions are implementation-specific TLS settings, keyed as Kroxylicious keys them:
// kroxylicious.io/enabled-protocols, kroxylicious.io/disabled-protocols,
// kroxylicious.io/enabled-cipher-suites and kroxylicious.io/disabled-cipher-suites, each a
// comma-separated list of Java-style names (TLSv1.3, TLS_AES_256_GCM_SHA384).
//
// +kubebuilder:validation:MaxProperties=16
// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['kroxylicious.io/enabled-protocols', 'kroxylicious.io/disabled-protocols', 'kroxylicious.io/enabled-cipher-suites', 'kroxylicious.io/disabled-cipher-suites'])",message="unknown TLS option: the supported keys are kroxylicious.io/enabled-protocols, kroxylicious.io/disabled-protocols, kroxylicious.io/enabled-cipher-suites and kroxylicious.io/disabled-cipher-suites"
type TLSOptions map[string]string
