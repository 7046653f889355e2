package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KafkaBackendTLSPolicy tells the proxy how to connect over TLS to a Kafka cluster behind a Service:
// which CAs to trust, which hostname to verify, and which protocols and ciphers to use.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kbtls,categories=kafkalink
// +kubebuilder:printcolumn:name="Hostname",type=string,JSONPath=`.spec.validation.hostname`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KafkaBackendTLSPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the policy.
	// +required
	Spec KafkaBackendTLSPolicySpec `json:"spec"`
	// Status reports, per gateway that uses the policy, whether it was applied.
	// +optional
	Status PolicyStatus `json:"status,omitempty"`
}

// KafkaBackendTLSPolicySpec is the policy.
type KafkaBackendTLSPolicySpec struct {
	// TargetRefs are the Service ports the policy applies to.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	TargetRefs []PolicyTargetReference `json:"targetRefs"`
	// Validation is how the proxy verifies the backend's certificate.
	// +required
	Validation BackendTLSValidation `json:"validation"`
	// Options are TLS protocol and cipher settings for backend connections.
	// +optional
	Options TLSOptions `json:"options,omitempty"`
}

// PolicyTargetReference names a Service port.
//
// +kubebuilder:validation:XValidation:rule="self.kind == 'Service'",message="kind must be Service"
type PolicyTargetReference struct {
	// Kind must be Service.
	// +required
	Kind string `json:"kind"`
	// Name of the Service.
	// +required
	Name ObjectName `json:"name"`
	// Namespace of the Service; the policy's namespace when unset.
	// +optional
	Namespace *Namespace `json:"namespace,omitempty"`
	// SectionName is the name of the Service port; every port when unset.
	// +optional
	SectionName *SectionName `json:"sectionName,omitempty"`
}

// BackendTLSValidation is how the proxy verifies a backend's certificate.
type BackendTLSValidation struct {
	// CACertificateRefs are Secrets (ca.crt) with the CAs to trust.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	CACertificateRefs []SecretObjectReference `json:"caCertificateRefs,omitempty"`
	// Hostname is the name the backend certificate must carry; also sent as SNI.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Hostname *string `json:"hostname,omitempty"`
}

// PolicyStatus is Gateway API's policy status: one entry per gateway the policy affects.
type PolicyStatus struct {
	// Ancestors are the gateways that use the policy.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Ancestors []PolicyAncestorStatus `json:"ancestors,omitempty"`
}

// PolicyAncestorStatus is the status of a policy for one gateway.
type PolicyAncestorStatus struct {
	// AncestorRef is the gateway.
	// +required
	AncestorRef ParentReference `json:"ancestorRef"`
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

// KafkaBackendTLSPolicyList is a list of KafkaBackendTLSPolicies.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type KafkaBackendTLSPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the KafkaBackendTLSPolicies.
	Items []KafkaBackendTLSPolicy `json:"items"`
}
