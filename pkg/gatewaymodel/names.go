package gatewaymodel

import (
	filterv1alpha1 "github.com/kafkalink/kafkalink/apis/filter/v1alpha1"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

// API groups, derived from the schemes so they cannot drift from the registered types.
const (
	// Group is the group of KafkaGateway, KafkaRoute, KafkaGatewayParameters and
	// KafkaBackendTLSPolicy: kroxylicious.io.
	Group = kroxyliciousv1alpha1.GroupName
	// FilterGroup is the group of KafkaFilter: filter.kroxylicious.io.
	FilterGroup = filterv1alpha1.GroupName
	// CoreGroup is the core API group of Secrets and Services, written as "" in references.
	CoreGroup = ""
)

// Kinds that references and ReferenceGrants name.
const (
	KindGateway    = "KafkaGateway"
	KindParameters = "KafkaGatewayParameters"
	KindRoute      = "KafkaRoute"
	KindPolicy     = "KafkaBackendTLSPolicy"
	KindFilter     = "KafkaFilter"
	KindService    = "Service"
	KindSecret     = "Secret"
)

// ControllerName is the gateway controller's name in route parent and policy ancestor status;
// a binding reads route acceptance only from entries carrying it.
const ControllerName = "kafkalink.io/gateway-controller"

// ConditionAccepted is the condition type of a route parent entry that says whether the gateway
// serves the route.
const ConditionAccepted = "Accepted"
