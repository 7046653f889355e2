// Package wellknown holds every label and annotation key kafkalink's operator writes or selects
// on, each defined once, with the fixed values some of them take. It imports nothing, so the pure
// cores (pkg/binding, pkg/gateway), the controllers and the shared caches (pkg/secretcache) can
// all name the same keys without depending on one another.
//
// The keys are on the wire: renaming one orphans what earlier releases labelled. Strimzi's keys
// (strimzi.io/cluster, strimzi.io/stretch-mode) are Strimzi's API and stay in package strimzi;
// finalizer names stay with the controller that owns them.
//
// It is not called labels so that it neither shadows nor is shadowed by k8s.io/apimachinery's
// labels package or the local variables of that name.
package wellknown

// Standard Kubernetes labels (app.kubernetes.io).
const (
	// LabelManagedBy is on everything kafkalink writes, always LabelManagedByValue.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelManagedByValue is the value of LabelManagedBy.
	LabelManagedByValue = "kafkalink"
	// LabelName is the name label of the proxy pods, always gateway.ProxyName.
	LabelName = "app.kubernetes.io/name"
	// LabelInstance is on a gateway's generated objects: the gateway's name.
	LabelInstance = "app.kubernetes.io/instance"
)

// Labels of the gateway controller.
const (
	// LabelGateway names the KafkaGateway an object was generated for; pruning selects on it.
	LabelGateway = "kafkalink.io/gateway"
	// LabelRoute names the KafkaRoute a generated Service, Route or TLSRoute exposes.
	LabelRoute = "kafkalink.io/route"
	// LabelMemberOf is on what a member cluster holds for a central gateway (its UID); pruning selects on it.
	LabelMemberOf = "kafkalink.io/member-of"
)

// Annotations of the gateway controller.
const (
	// AnnotationRestartChecksum, on the proxy pods, sums what the proxy cannot reload without a restart.
	AnnotationRestartChecksum = "kafkalink.io/restart-checksum"
	// AnnotationAppliedHash is the hash of what kafkalink last applied to a generated object.
	AnnotationAppliedHash = "kafkalink.io/applied-hash"
	// AnnotationCopiedFrom names (namespace/name) the Secret of another namespace a gateway copied keys of.
	AnnotationCopiedFrom = "kafkalink.io/copied-from"
	// AnnotationPrometheusScrape, "true" on the proxy pods, has Prometheus scrape them.
	AnnotationPrometheusScrape = "prometheus.io/scrape"
	// AnnotationPrometheusPort is the proxy pods' port Prometheus scrapes: the management port.
	AnnotationPrometheusPort = "prometheus.io/port"
	// AnnotationPrometheusPath is the proxy pods' path Prometheus scrapes, "/metrics".
	AnnotationPrometheusPath = "prometheus.io/path"
)

// Labels of the binding controller.
const (
	// LabelBinding, always LabelBindingValue, marks a binding Secret (watched by the binding controller only).
	LabelBinding = "kafkalink.io/binding"
	// LabelBindingValue is the value of LabelBinding.
	LabelBindingValue = "kafkaconnection"
	// LabelBindingCopy, always "true", marks a copy of a binding Secret in a member cluster.
	LabelBindingCopy = "kafkalink.io/binding-copy"
)

// Annotations of the binding controller.
const (
	// AnnotationAbandonTargets lists (comma-separated) targets whose copies a deleted connection leaves.
	AnnotationAbandonTargets = "kafkalink.io/abandon-targets"
	// AnnotationCopySource names (namespace/name) the connection a copy in a member cluster copies.
	AnnotationCopySource = "kafkalink.io/source"
	// AnnotationCopySourceUID is the UID of the connection a copy in a member cluster copies.
	AnnotationCopySourceUID = "kafkalink.io/source-uid"
	// AnnotationCopyTarget names the connection's target a copy in a member cluster is for.
	AnnotationCopyTarget = "kafkalink.io/target"
	// AnnotationCachedDataSHA256 is a binding Secret's data digest: on member copies; centrally, cached only.
	AnnotationCachedDataSHA256 = "kafkalink.io/cached-data-sha256"
)
