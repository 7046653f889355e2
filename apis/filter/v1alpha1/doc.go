// Package v1alpha1 holds the filter.kroxylicious.io/v1alpha1 API: KafkaFilter, a proxy filter that
// KafkaRoute rules reference.
//
// +k8s:deepcopy-gen=package
// +groupName=filter.kroxylicious.io
package v1alpha1
