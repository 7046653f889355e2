package gateway

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// Diagnostics of a Service backend: what a user who copied the seed's examples could not see.
// They never refuse a parentRef (each rests on a naming convention the user may not follow);
// they add conditions to its status, and the controller records a Warning event when one turns
// False.

// ConditionBackendTLS is a route parent condition, present when the backend Service port looks
// like one served with TLS: whether a KafkaBackendTLSPolicy makes the proxy connect with TLS.
const ConditionBackendTLS = "BackendTLS"

// Reasons of ConditionBackendTLS.
const (
	// ReasonBackendTLSPolicyFound: a KafkaBackendTLSPolicy applies to the port.
	ReasonBackendTLSPolicyFound = "BackendTLSPolicyFound"
	// ReasonBackendTLSPolicyMissing: the port looks like TLS, no policy applies, and the proxy
	// connects in plain TCP, which a TLS listener drops.
	ReasonBackendTLSPolicyMissing = "BackendTLSPolicyMissing"
)

// Strimzi's labels on the objects it makes, and on the pods a Service of its cluster selects.
const (
	strimziLabelKind       = "strimzi.io/kind"
	strimziLabelBrokerRole = "strimzi.io/broker-role"
)

// tlsPortNames are Service port names that say TLS: the seed's, and Strimzi's for its old
// internal listener named tls.
var tlsPortNames = []string{"tls", "tcp-clientstls"}

// strimziTLSPort is the port Strimzi's examples give their internal TLS listener.
const strimziTLSPort = 9093

// serviceDiagnostics are the diagnostic conditions of a parentRef whose backend is a Service
// this route may use: BackendTLS when the port looks like TLS, and BrokerIDsMatch when the
// Service belongs to a Strimzi Kafka whose broker node ids kafkalink can see.
func (t *translator) serviceDiagnostics(route *kroxyliciousv1alpha1.KafkaRoute, pr kroxyliciousv1alpha1.KafkaRouteParentReference) []metav1.Condition {
	if len(pr.Rules) != 1 || len(pr.Rules[0].BackendRefs) != 1 || IsKafkaRef(pr.Rules[0].BackendRefs[0]) {
		return nil
	}
	svc, port, p := t.backendService(route, pr.Rules[0].BackendRefs[0])
	if p != nil {
		return nil // ResolvedRefs says why
	}
	k := t.strimziKafkaOf(svc)
	var conds []metav1.Condition
	if c := t.backendTLSCondition(route, svc, *port, k); c != nil {
		conds = append(conds, *c)
	}
	if c := brokerIDsCondition(route, pr, svc, k, t.s.NodePools); c != nil {
		conds = append(conds, *c)
	}
	return conds
}

// strimziCluster is the Strimzi cluster a Service belongs to: Strimzi's own Services carry
// strimzi.io/cluster and strimzi.io/kind: Kafka; a user's Service that selects Strimzi's pods
// has strimzi.io/cluster in its selector.
func strimziCluster(svc *corev1.Service) string {
	if c := svc.Labels[strimzi.LabelCluster]; c != "" && svc.Labels[strimziLabelKind] == strimzi.KindKafka {
		return c
	}
	return svc.Spec.Selector[strimzi.LabelCluster]
}

// StrimziClusterOf is the namespace and name of the Strimzi Kafka a Service belongs to, if any,
// for the controller to gather it with its node pools.
func StrimziClusterOf(svc *corev1.Service) (types.NamespacedName, bool) {
	c := strimziCluster(svc)
	return types.NamespacedName{Namespace: svc.Namespace, Name: c}, c != ""
}

// strimziKafkaOf is the Strimzi Kafka of a Service, when the snapshot holds it.
func (t *translator) strimziKafkaOf(svc *corev1.Service) *strimzi.Kafka {
	key, ok := StrimziClusterOf(svc)
	if !ok {
		return nil
	}
	return t.kafkas[key]
}

// tlsEvidence says why a Service port looks like one served with TLS, or "" when it does not: a
// Strimzi listener's own tls setting decides when the Kafka is known, else the port's name or
// number.
func tlsEvidence(svc *corev1.Service, port corev1.ServicePort, k *strimzi.Kafka) string {
	if k != nil {
		for _, p := range []int32{port.TargetPort.IntVal, port.Port} {
			if l, ok := k.ListenerByPort(p); ok && p != 0 {
				if !l.TLS {
					return ""
				}
				return fmt.Sprintf("Kafka %s/%s serves it with listener %s, which has tls: true", k.Namespace, k.Name, l.Name)
			}
		}
	}
	switch {
	case slices.Contains(tlsPortNames, port.Name):
		return fmt.Sprintf("the port is named %s", port.Name)
	case port.Port == strimziTLSPort:
		return fmt.Sprintf("%d is the port of Strimzi's TLS listener", strimziTLSPort)
	}
	return ""
}

// backendTLSCondition is the BackendTLS condition of a Service backend port that looks like TLS:
// True when a KafkaBackendTLSPolicy applies to it, else False with the policy to create.
func (t *translator) backendTLSCondition(route *kroxyliciousv1alpha1.KafkaRoute, svc *corev1.Service, port corev1.ServicePort, k *strimzi.Kafka) *metav1.Condition {
	why := tlsEvidence(svc, port, k)
	if why == "" {
		return nil
	}
	if policy := t.policyFor(svc, port); policy != nil {
		c := Condition(ConditionBackendTLS, true, ReasonBackendTLSPolicyFound, fmt.Sprintf("KafkaBackendTLSPolicy %s/%s applies to Service %s/%s port %d: the proxy connects with TLS", policy.Namespace, policy.Name, svc.Namespace, svc.Name, port.Port), route.Generation)
		return &c
	}
	msg := fmt.Sprintf("Service %s/%s port %d looks like TLS (%s), but no KafkaBackendTLSPolicy targets it, so the proxy connects in plain TCP and a TLS listener drops every connection. If the port is TLS, create a policy such as:\n%s",
		svc.Namespace, svc.Name, port.Port, why, BackendTLSPolicyYAML(svc, port, k))
	c := Condition(ConditionBackendTLS, false, ReasonBackendTLSPolicyMissing, msg, route.Generation)
	return &c
}

// policyFor is the KafkaBackendTLSPolicy that applies to a Service port, oldest first as
// upstreamTLS picks it, among the policies allowed to target the Service; nil when none does.
func (t *translator) policyFor(svc *corev1.Service, port corev1.ServicePort) *kroxyliciousv1alpha1.KafkaBackendTLSPolicy {
	var found *kroxyliciousv1alpha1.KafkaBackendTLSPolicy
	for _, ps := range t.policies {
		p := ps.policy
		if !policyTargets(p, svc, port) {
			continue
		}
		if p.Namespace != svc.Namespace && !t.granted(gatewaymodel.From{Group: gatewaymodel.Group, Kind: gatewaymodel.KindPolicy, Namespace: p.Namespace}, gatewaymodel.To{Group: gatewaymodel.CoreGroup, Kind: gatewaymodel.KindService, Namespace: svc.Namespace, Name: svc.Name}) {
			continue
		}
		if found == nil || p.CreationTimestamp.Before(&found.CreationTimestamp) ||
			p.CreationTimestamp.Equal(&found.CreationTimestamp) && p.Namespace+"/"+p.Name < found.Namespace+"/"+found.Name {
			found = p
		}
	}
	return found
}

// BackendTLSPolicyYAML is a KafkaBackendTLSPolicy for a Service port, as YAML a user can apply:
// in the Service's namespace, trusting the Strimzi cluster CA and checking the name Strimzi puts
// in its broker certificates when the Service belongs to a Strimzi Kafka, else a CA Secret named
// after the Service, which the user provides, and the Service's own name.
func BackendTLSPolicyYAML(svc *corev1.Service, port corev1.ServicePort, k *strimzi.Kafka) string {
	ca, host := svc.Name+"-ca", svc.Name+"."+svc.Namespace+".svc"
	caNote := "  # a Secret with ca.crt, the CA that signed the brokers' certificates"
	if k != nil {
		ca, host, caNote = strimzi.ClusterCASecretName(k.Name), k.Name+"-kafka-bootstrap."+k.Namespace+".svc", "  # Strimzi's cluster CA"
	}
	section := ""
	if port.Name != "" {
		section = "\n    sectionName: " + port.Name
	}
	return fmt.Sprintf(`apiVersion: kroxylicious.io/v1alpha1
kind: KafkaBackendTLSPolicy
metadata:
  name: %s-tls
  namespace: %s
spec:
  targetRefs:
  - kind: Service
    name: %s%s
  validation:
    caCertificateRefs:
    - kind: Secret
      name: %s%s
    hostname: %s
`, svc.Name, svc.Namespace, svc.Name, section, ca, caNote, host)
}

// brokerIDsCondition is the BrokerIDsMatch condition of a parentRef whose backend Service
// belongs to a Strimzi Kafka that has broker nodes: whether its advertised broker ids are the
// Kafka's. Unlike a Kafka backend's, the listed ids are served as written, so a broker that is
// not listed has no host and an id without a broker fails every client sent to it.
func brokerIDsCondition(route *kroxyliciousv1alpha1.KafkaRoute, pr kroxyliciousv1alpha1.KafkaRouteParentReference, svc *corev1.Service, k *strimzi.Kafka, pools []*strimzi.KafkaNodePool) *metav1.Condition {
	if k == nil {
		return nil
	}
	given, p := brokerIDs(pr)
	if p != nil {
		return nil // Accepted says why
	}
	var have []int32
	for _, b := range strimzi.Brokers(k, pools) {
		have = append(have, b.ID)
	}
	if len(have) == 0 {
		return nil
	}
	var noBroker, notAdvertised []int32
	for _, id := range given {
		if !slices.Contains(have, id) {
			noBroker = append(noBroker, id)
		}
	}
	for _, id := range have {
		if !slices.Contains(given, id) {
			notAdvertised = append(notAdvertised, id)
		}
	}
	source := fmt.Sprintf("Service %s/%s belongs to Kafka %s/%s, whose broker nodes are %s", svc.Namespace, svc.Name, k.Namespace, k.Name, idList(have))
	if len(noBroker) == 0 && len(notAdvertised) == 0 {
		c := Condition(ConditionBrokerIDsMatch, true, ReasonBrokerIDsMatch, source+": advertisedBrokerIds match them", route.Generation)
		return &c
	}
	var parts []string
	if len(noBroker) > 0 {
		parts = append(parts, "advertised ids with no broker: "+idList(noBroker))
	}
	if len(notAdvertised) > 0 {
		parts = append(parts, "brokers not advertised (clients sent to them fail): "+idList(notAdvertised))
	}
	msg := fmt.Sprintf("%s; %s. Set advertisedBrokerIds to %s, or name the Kafka as the backend (group kafka.strimzi.io, kind Kafka) to follow its node pools", source, strings.Join(parts, "; "), idList(have))
	c := Condition(ConditionBrokerIDsMatch, false, ReasonBrokerIDsMismatch, msg, route.Generation)
	return &c
}

// idList writes node ids as YAML's flow list, as a user would write advertisedBrokerIds.
func idList(ids []int32) string {
	s := make([]string, 0, min(len(ids), maxListedIDs+1))
	for i, id := range ids {
		if i == maxListedIDs {
			s = append(s, fmt.Sprintf("and %d more", len(ids)-maxListedIDs))
			break
		}
		s = append(s, fmt.Sprint(id))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// maxListedIDs bounds the node ids a status message lists.
const maxListedIDs = 32
