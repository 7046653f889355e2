package strimzi

import (
	"net"
	"strconv"
	"strings"
)

// Group is the API group of Strimzi's custom resources.
const Group = "kafka.strimzi.io"

// Versions of the Strimzi API group that kafkalink reads, newest first. Strimzi 1.x serves v1 only;
// the releases before it serve v1beta2.
const (
	VersionV1      = "v1"
	VersionV1beta2 = "v1beta2"
)

// Kinds and resources kafkalink reads.
const (
	KindKafka          = "Kafka"
	KindKafkaUser      = "KafkaUser"
	ResourceKafkas     = "kafkas"
	ResourceKafkaUsers = "kafkausers"
)

// Well-known names Strimzi uses.
const (
	// LabelCluster is the label Strimzi puts on KafkaUsers and their Secrets naming the Kafka.
	LabelCluster = "strimzi.io/cluster"
	// AnnotationStretchMode, set to "enabled" on a Kafka, makes it a stretch cluster whose node
	// pools run in several Kubernetes clusters (Strimzi's stretch cluster proposal).
	AnnotationStretchMode = "strimzi.io/stretch-mode"
	// TechnologySubmariner is the crossClusterTechnology whose per-cluster service names are
	// <submarinerClusterId>.<service>.<namespace>.svc.clusterset.local.
	TechnologySubmariner = "submariner"
	// ClusterCACertSuffix is appended to the Kafka name to name the cluster CA certificate Secret.
	ClusterCACertSuffix = "-cluster-ca-cert"
	// ConditionReady is the condition type Strimzi sets when a resource is reconciled.
	ConditionReady = "Ready"
)

// ClusterCASecretName is the name of the Secret holding the cluster CA certificates of a Kafka.
func ClusterCASecretName(kafkaName string) string { return kafkaName + ClusterCACertSuffix }

// ListenerType is the type of a Kafka listener (spec.kafka.listeners[].type).
type ListenerType string

// Listener types Strimzi knows. Unknown types parse too (a newer Strimzi may add some) and sort
// with the non-internal ones.
const (
	ListenerInternal ListenerType = "internal"
	// ListenerService is the name the configurable-listeners proposal gives the in-cluster type
	// that Strimzi released as internal; kafkalink reads it as internal.
	ListenerService      ListenerType = "service"
	ListenerClusterIP    ListenerType = "cluster-ip"
	ListenerRoute        ListenerType = "route"
	ListenerLoadBalancer ListenerType = "loadbalancer"
	ListenerNodePort     ListenerType = "nodeport"
	ListenerIngress      ListenerType = "ingress"
	ListenerTLSRoute     ListenerType = "tlsroute"
)

// InCluster reports whether the listener type serves clients inside the Kubernetes cluster only.
func (t ListenerType) InCluster() bool {
	return t == ListenerInternal || t == ListenerService || t == ListenerClusterIP
}

// ListenerAuthentication is the authentication a listener requires (authentication.type).
type ListenerAuthentication string

// Listener authentication types. Unknown types parse too and never fit a user.
const (
	// ListenerAuthNone means the listener has no authentication section.
	ListenerAuthNone        ListenerAuthentication = ""
	ListenerAuthTLS         ListenerAuthentication = "tls"
	ListenerAuthSCRAMSHA512 ListenerAuthentication = "scram-sha-512"
	ListenerAuthCustom      ListenerAuthentication = "custom"
	// ListenerAuthOAuth exists in Strimzi before 1.0 (v1beta2); 1.x moved it into custom.
	ListenerAuthOAuth ListenerAuthentication = "oauth"
)

// ListenerForm says which of the two spec.kafka.listeners forms a Kafka used.
type ListenerForm string

// The two forms of spec.kafka.listeners in the Strimzi listener proposal.
const (
	// ListenerFormArray is the current form: a list of named listeners.
	ListenerFormArray ListenerForm = "array"
	// ListenerFormObject is the old form: an object with optional plain, tls and external members.
	ListenerFormObject ListenerForm = "object"
)

// Ports and names that the old object form implies, as the listener proposal converts them.
const (
	OldPlainName    = "plain"
	OldTLSName      = "tls"
	OldExternalName = "external"
	OldPlainPort    = 9092
	OldTLSPort      = 9093
	OldExternalPort = 9094
)

// Listener is one listener of spec.kafka.listeners in the array form; the old object form converts
// into the same model.
type Listener struct {
	Name           string
	Port           int32
	Type           ListenerType
	TLS            bool
	Authentication ListenerAuthentication
	// ParentRefs are a tlsroute listener's configuration.parentRefs: the Gateways (or other
	// parents) its TLSRoutes attach to.
	ParentRefs []GatewayParentRef
	// OAuth is set for an oauth listener.
	OAuth *OAuthListener
}

// ListenerAddress is one address of a listener in the Kafka status.
type ListenerAddress struct {
	Host string
	Port int32
}

// ListenerStatus is one entry of status.listeners.
type ListenerStatus struct {
	// Name is the listener name, or its type for releases that only set the type.
	Name             string
	Addresses        []ListenerAddress
	BootstrapServers string
	// Certificates are PEM certificates that verify the listener's server certificate.
	Certificates []string
}

// Condition is a Strimzi status condition.
type Condition struct {
	Type    string
	Status  string
	Reason  string
	Message string
}

// Kafka holds the fields of a Strimzi Kafka that kafkalink reads.
type Kafka struct {
	APIVersion string
	Namespace  string
	Name       string
	Generation int64
	// ListenerForm is the form spec.kafka.listeners had.
	ListenerForm ListenerForm
	// Listeners are in spec order (plain, tls, external for the object form).
	Listeners []Listener
	// Replicas is spec.kafka.replicas, the broker count of a Kafka without node pools.
	Replicas int32
	// Stretch is set when the Kafka is annotated strimzi.io/stretch-mode: enabled.
	Stretch bool
	Status  KafkaStatus
}

// KafkaStatus holds the status fields of a Kafka that kafkalink reads.
type KafkaStatus struct {
	ObservedGeneration int64
	Conditions         []Condition
	Listeners          []ListenerStatus
}

// Listener returns the spec listener with the given name.
func (k *Kafka) Listener(name string) (Listener, bool) {
	for _, l := range k.Listeners {
		if l.Name == name {
			return l, true
		}
	}
	return Listener{}, false
}

// ListenerStatus returns the status entry of the listener with the given name. When the status
// names a listener twice the first entry wins.
func (k *Kafka) ListenerStatus(name string) (ListenerStatus, bool) {
	for _, l := range k.Status.Listeners {
		if l.Name == name {
			return l, true
		}
	}
	return ListenerStatus{}, false
}

// UserAuthentication is the authentication type of a KafkaUser (spec.authentication.type).
type UserAuthentication string

// KafkaUser authentication types.
const (
	// UserAuthNone means the KafkaUser has no spec.authentication.
	UserAuthNone        UserAuthentication = ""
	UserAuthSCRAMSHA512 UserAuthentication = "scram-sha-512"
	UserAuthTLS         UserAuthentication = "tls"
	// UserAuthTLSExternal users authenticate with a certificate issued outside Strimzi, so their
	// Secret carries no key material.
	UserAuthTLSExternal UserAuthentication = "tls-external"
)

// KafkaUser holds the fields of a Strimzi KafkaUser that kafkalink reads.
type KafkaUser struct {
	APIVersion     string
	Namespace      string
	Name           string
	Generation     int64
	Authentication UserAuthentication
	Status         KafkaUserStatus
}

// KafkaUserStatus holds the status fields of a KafkaUser that kafkalink reads.
type KafkaUserStatus struct {
	ObservedGeneration int64
	Conditions         []Condition
	// Username is the Kafka principal name: the SCRAM user name, or CN=<name> for TLS users.
	Username string
	// Secret is the name of the Secret holding the user's credentials.
	Secret string
}

// Ready reports whether Strimzi has reconciled the current spec of the user: its Ready condition is
// True and, when Strimzi reports an observedGeneration, it is not older than the spec. The second
// check keeps a user that just changed from SCRAM to TLS from being read with its old credentials.
func (u *KafkaUser) Ready() bool {
	if u.Status.ObservedGeneration != 0 && u.Status.ObservedGeneration < u.Generation {
		return false
	}
	c, ok := FindCondition(u.Status.Conditions, ConditionReady)
	return ok && c.Status == "True"
}

// SecretName is the name of the user's credentials Secret: status.secret, or the user's name,
// which is what Strimzi uses, when the status does not say.
func (u *KafkaUser) SecretName() string {
	if u.Status.Secret != "" {
		return u.Status.Secret
	}
	return u.Name
}

// FindCondition returns the first condition of the given type.
func FindCondition(conds []Condition, condType string) (Condition, bool) {
	for _, c := range conds {
		if c.Type == condType {
			return c, true
		}
	}
	return Condition{}, false
}

// Bootstrap is the listener's comma-separated bootstrap list, from bootstrapServers or else from
// its addresses (older releases and some listener types fill only those).
func (st ListenerStatus) Bootstrap() string {
	if s := strings.TrimSpace(st.BootstrapServers); s != "" {
		return s
	}
	var out []string
	seen := map[string]bool{}
	for _, a := range st.Addresses {
		if a.Host == "" || a.Port <= 0 {
			continue
		}
		hp := net.JoinHostPort(a.Host, strconv.Itoa(int(a.Port)))
		if !seen[hp] {
			seen[hp] = true
			out = append(out, hp)
		}
	}
	return strings.Join(out, ",")
}
