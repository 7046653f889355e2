// Package v1alpha1 holds the kroxylicious.io/v1alpha1 API: KafkaGateway, KafkaGatewayParameters,
// KafkaBackendTLSPolicy and KafkaRoute. KafkaGateway is a compatible subset of Gateway API's
// Gateway (see the README for the three known deviations); the other kinds carry what Gateway
// API has no place for.
//
// +k8s:deepcopy-gen=package
// +groupName=kroxylicious.io
package v1alpha1
