package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KafkaFilter is a proxy filter: a type and its configuration, passed through to the proxy as is.
// In the configuration, $(secretFile:secret:key) and $(secretDir:secret) stand for the path of a
// Secret key or of a whole Secret, mounted into the proxy by the operator; so do Kroxylicious'
// interpolation references ${secret:secret:key} and ${configmap:configmap:key}, which must be a
// whole string value, as in Kroxylicious' KafkaProtocolFilter.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=kf,categories=kafkalink
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KafkaFilter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the filter.
	// +required
	Spec KafkaFilterSpec `json:"spec"`
}

// KafkaFilterSpec is the filter.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.config) && has(self.configTemplate))",message="config and configTemplate are the same field (configTemplate is Kroxylicious' name): set one"
type KafkaFilterSpec struct {
	// Type is the filter's type, such as io.kroxylicious.filter.encryption.RecordEncryption.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Type string `json:"type"`
	// Config is the filter's configuration, forwarded to the proxy without interpretation.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Config *apiextensionsv1.JSON `json:"config,omitempty"`
	// ConfigTemplate is Config under the name Kroxylicious' KafkaProtocolFilter gives it, so a
	// filter moves over unchanged; set one of the two.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	ConfigTemplate *apiextensionsv1.JSON `json:"configTemplate,omitempty"`
}

// RawConfig is the filter's configuration as written, from config or configTemplate; nil when
// it has none.
func (s *KafkaFilterSpec) RawConfig() []byte {
	switch {
	case s.Config != nil:
		return s.Config.Raw
	case s.ConfigTemplate != nil:
		return s.ConfigTemplate.Raw
	}
	return nil
}

// KafkaFilterList is a list of KafkaFilters.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type KafkaFilterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the KafkaFilters.
	Items []KafkaFilter `json:"items"`
}
