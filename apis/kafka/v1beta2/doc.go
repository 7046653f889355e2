// Package v1beta2 holds kafkalink's one kind in the kafka.strimzi.io group: KafkaConnection, the
// Service Binding "provisioned service" of the Strimzi KafkaConnection proposal. Strimzi's own kinds
// (Kafka, KafkaUser, KafkaNodePool) are read, never served, so they are modelled in pkg/strimzi.
//
// +k8s:deepcopy-gen=package
// +groupName=kafka.strimzi.io
package v1beta2
