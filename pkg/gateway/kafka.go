package gateway

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
	"github.com/kafkalink/kafkalink/proxy/config"
)

// A Strimzi Kafka as a route backend: everything a user writes by hand for a Service backend
// (bootstrap, upstream trust, broker ids, broker addresses) is read from the Kafka, its
// KafkaNodePools and its cluster CA Secret, by Strimzi's naming (package strimzi).

// IsKafkaRef reports whether a backendRef names a Strimzi Kafka rather than a Service.
func IsKafkaRef(b kroxyliciousv1alpha1.BackendReference) bool {
	return ptr.Deref(b.Group, "") == strimzi.Group && ptr.Deref(b.Kind, "") == strimzi.KindKafka
}

// kafkaRef is a parentRef's backendRef when it names a Kafka.
func kafkaRef(pr kroxyliciousv1alpha1.KafkaRouteParentReference) (kroxyliciousv1alpha1.BackendReference, bool) {
	if len(pr.Rules) != 1 || len(pr.Rules[0].BackendRefs) != 1 || !IsKafkaRef(pr.Rules[0].BackendRefs[0]) {
		return kroxyliciousv1alpha1.BackendReference{}, false
	}
	return pr.Rules[0].BackendRefs[0], true
}

// backendKafka finds the Kafka a backendRef names, in the route's namespace or, granted by a
// ReferenceGrant, another visible one, and its listener on the backendRef's port.
func (t *translator) backendKafka(route *kroxyliciousv1alpha1.KafkaRoute, b kroxyliciousv1alpha1.BackendReference) (*strimzi.Kafka, strimzi.Listener, *refProblem) {
	ns, name := gatewaymodel.RefNamespace(b.Namespace, route.Namespace), string(b.Name)
	if ns != route.Namespace {
		if !t.visible(ns) {
			return nil, strimzi.Listener{}, &refProblem{reason: ReasonRefNotPermitted, message: fmt.Sprintf("Kafka %s/%s is in a namespace the operator does not watch", ns, name)}
		}
		from := gatewaymodel.From{Group: gatewaymodel.Group, Kind: gatewaymodel.KindRoute, Namespace: route.Namespace}
		if to := (gatewaymodel.To{Group: strimzi.Group, Kind: strimzi.KindKafka, Namespace: ns, Name: name}); !t.granted(from, to) {
			return nil, strimzi.Listener{}, notGranted(fmt.Sprintf("Kafka %s/%s is in another namespace and no ReferenceGrant there allows KafkaRoutes from namespace %s to refer to it", ns, name, route.Namespace), from, to)
		}
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	if err := t.s.KafkaErrors[key]; err != nil {
		return nil, strimzi.Listener{}, &refProblem{reason: ReasonBackendNotFound, message: fmt.Sprintf("Kafka %s/%s cannot be read: %v", ns, name, err)}
	}
	k := t.kafkas[key]
	if k == nil {
		msg := fmt.Sprintf("Kafka %s/%s not found", ns, name)
		if !t.s.Env.StrimziKafkas {
			msg += ": the cluster serves no Strimzi Kafka API (kafka.strimzi.io v1 or v1beta2); install Strimzi's CRDs"
		}
		return nil, strimzi.Listener{}, &refProblem{reason: ReasonBackendNotFound, message: msg}
	}
	l, ok := k.ListenerByPort(int32(b.Port))
	if !ok {
		var have []string
		for _, l := range k.Listeners {
			have = append(have, fmt.Sprintf("%s on %d", l.Name, l.Port))
		}
		return nil, strimzi.Listener{}, &refProblem{reason: ReasonBackendNotFound, message: fmt.Sprintf("Kafka %s/%s has no listener on port %d (its listeners: %s)", ns, name, b.Port, strings.Join(have, ", "))}
	}
	return k, l, nil
}

// kafkaBackend resolves a Kafka backendRef: the bootstrap and every broker's address, and how
// the upstream TLS resolves (see resolveBackend).
func (t *translator) kafkaBackend(route *kroxyliciousv1alpha1.KafkaRoute, ref kroxyliciousv1alpha1.BackendReference) (backend, upstreamFunc, *refProblem) {
	k, l, p := t.backendKafka(route, ref)
	if p != nil {
		return backend{}, nil, p
	}
	st, _ := k.ListenerStatus(l.Name)
	first, _, _ := strings.Cut(st.Bootstrap(), ",")
	host, port, err := net.SplitHostPort(first)
	if err != nil {
		return backend{}, nil, &refProblem{reason: ReasonKafkaNotReady, message: fmt.Sprintf("Kafka %s/%s does not give a bootstrap address for listener %s in its status yet: Strimzi has not finished reconciling it", k.Namespace, k.Name, l.Name)}
	}
	// In-cluster listeners' status address is their bootstrap Service; the others' are
	// external, and the proxy, in the cluster, uses their own bootstrap Service instead. A
	// stretch Kafka is reached by clusterset names, from whichever member the proxy runs in.
	if !l.Type.InCluster() || k.Stretch {
		host, port = k.BootstrapHost(l), strconv.Itoa(int(l.Port))
	}
	b := backend{target: net.JoinHostPort(t.inClusterFQDN(host), port)}
	brokers := strimzi.Brokers(k, t.s.NodePools)
	if len(brokers) == 0 {
		return backend{}, nil, &refProblem{reason: ReasonKafkaNotReady, message: fmt.Sprintf("Kafka %s/%s has no broker nodes yet (no broker-role KafkaNodePool with node ids, and no spec.kafka.replicas)", k.Namespace, k.Name)}
	}
	for _, br := range brokers {
		addr := net.JoinHostPort(t.inClusterFQDN(k.BrokerHost(l, br)), strconv.Itoa(int(l.Port)))
		b.brokers = append(b.brokers, config.UpstreamBroker{NodeID: br.ID, Address: addr})
	}
	upstream := func(fx *effects) (*config.UpstreamTLS, *refProblem) {
		if !l.TLS {
			return nil, nil
		}
		// An explicit KafkaBackendTLSPolicy on the listener's bootstrap Service wins.
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.BootstrapService(l)}}
		if up, p := t.upstreamTLS(fx, svc, corev1.ServicePort{Name: l.ServicePortName(), Port: l.Port}); up != nil || p != nil {
			return up, p
		}
		return t.kafkaClusterCA(fx, k)
	}
	return b, upstream, nil
}

// kafkaClusterCA trusts a Kafka's cluster CA: every certificate of its <cluster>-cluster-ca-cert
// Secret (strimzi.CACertEntries), so both CAs are trusted during a CA renewal. Across namespaces
// the Secret is copied, as the ReferenceGrant for the Kafka allows.
func (t *translator) kafkaClusterCA(fx *effects, k *strimzi.Kafka) (*config.UpstreamTLS, *refProblem) {
	name := strimzi.ClusterCASecretName(k.Name)
	secret := t.secrets[types.NamespacedName{Namespace: k.Namespace, Name: name}]
	if secret == nil {
		return nil, &refProblem{reason: ReasonInvalidBackendTLS, message: fmt.Sprintf("Kafka %s/%s: its cluster CA Secret %s/%s is not found (Strimzi creates it when it reconciles the Kafka)", k.Namespace, k.Name, k.Namespace, name)}
	}
	keys := caKeysOf(secret)
	_, inData := secret.Data[strimzi.CACertKey]
	_, inStringData := secret.StringData[strimzi.CACertKey]
	if !inData && !inStringData { // the gateway controller's cache keeps key names, not values
		return nil, &refProblem{reason: ReasonInvalidBackendTLS, message: fmt.Sprintf("Kafka %s/%s: its cluster CA Secret %s/%s has no %s", k.Namespace, k.Name, k.Namespace, name, strimzi.CACertKey)}
	}
	mounted := name
	if k.Namespace != t.ns {
		fx.copies = append(fx.copies, copyRequest{secret, keys})
		mounted = copyName(t.gw.Name, secret)
	}
	dir := fx.mount(mounted, BackendSecretsDir+"/"+mounted)
	up := &config.UpstreamTLS{}
	for _, key := range keys {
		up.CAFiles = append(up.CAFiles, dir+"/"+key)
	}
	if t.clientCert != nil {
		up.CertificateFile, up.PrivateKeyFile = t.clientCert.CertificateFile, t.clientCert.PrivateKeyFile
	}
	return up, nil
}

// kafkaCACopies names the copies of cluster CA Secrets that the gateway's routes' Kafka backends
// in other namespaces still allow: the ReferenceGrant for the Kafka covers its CA.
func (t *translator) kafkaCACopies() map[string]bool {
	keep := map[string]bool{}
	for _, route := range t.s.Routes {
		if route == nil || route.Namespace != t.ns {
			continue
		}
		for _, pr := range route.Spec.ParentRefs {
			ref, ok := kafkaRef(pr)
			if !ok || !t.refersTo(pr) {
				continue
			}
			k, _, p := t.backendKafka(route, ref)
			if p != nil || k.Namespace == t.ns {
				continue
			}
			if secret := t.secrets[types.NamespacedName{Namespace: k.Namespace, Name: strimzi.ClusterCASecretName(k.Name)}]; secret != nil {
				keep[copyName(t.gw.Name, secret)] = true
			}
		}
	}
	return keep
}

// caKeysOf lists the CA certificate entries of a trust Secret (strimzi.CACertEntries).
func caKeysOf(secret *corev1.Secret) []string {
	keys := slices.Collect(maps.Keys(secret.Data))
	return strimzi.CACertEntries(slices.AppendSeq(keys, maps.Keys(secret.StringData)))
}

// inClusterFQDN makes an in-cluster host name fully qualified with the root dot: the .svc of a
// Strimzi name becomes the cluster domain, so no resolv.conf search list can turn it into
// another host.
func (t *translator) inClusterFQDN(host string) string {
	h := strings.TrimSuffix(host, ".")
	if base, ok := strings.CutSuffix(h, ".svc"); ok {
		h = base + "." + t.clusterDomain()
	}
	return h + "."
}

// kafkaBrokerIDs are the broker ids of a parentRef whose backend is a Kafka: the Kafka's broker
// nodes, which follow scale-outs. When the parentRef lists brokers too, check says whether they
// match; the Kafka's ids are served either way, as a listed id without a broker would only
// fail clients, and an unlisted broker would have no Service. When the Kafka cannot be read,
// the listed ids (possibly none) are used, and resolving the backend reports why.
func (t *translator) kafkaBrokerIDs(route *kroxyliciousv1alpha1.KafkaRoute, pr kroxyliciousv1alpha1.KafkaRouteParentReference, ref kroxyliciousv1alpha1.BackendReference) (ids []int32, check *metav1.Condition, p *refProblem) {
	var given []int32
	if len(pr.Brokers) > 0 {
		if given, p = brokerIDs(pr); p != nil {
			return nil, nil, p
		}
	}
	k, _, prob := t.backendKafka(route, ref)
	if prob != nil {
		return given, nil, nil
	}
	for _, b := range strimzi.Brokers(k, t.s.NodePools) {
		ids = append(ids, b.ID)
	}
	if len(ids) > kroxyliciousv1alpha1.MaxBrokerIDsPerParentRef {
		return nil, nil, &refProblem{reason: ReasonLimitExceeded, message: fmt.Sprintf("Kafka %s/%s has %d broker nodes, more than the %d a parentRef may expose", k.Namespace, k.Name, len(ids), kroxyliciousv1alpha1.MaxBrokerIDsPerParentRef)}
	}
	if hosts := len(pr.Hostnames) * (len(ids) + 1); hosts > kroxyliciousv1alpha1.MaxHostsPerRoute {
		return nil, nil, &refProblem{reason: ReasonLimitExceeded, message: fmt.Sprintf("the parentRef asks for %d hosts (hostnames x (Kafka %s/%s's %d brokers + 1)), more than the %d a route may ask for", hosts, k.Namespace, k.Name, len(ids), kroxyliciousv1alpha1.MaxHostsPerRoute)}
	}
	if given != nil {
		c := Condition(ConditionBrokerIDsMatch, true, ReasonBrokerIDsMatch, fmt.Sprintf("brokers match the broker nodes of Kafka %s/%s", k.Namespace, k.Name), route.Generation)
		if !slices.Equal(given, ids) {
			c = Condition(ConditionBrokerIDsMatch, false, ReasonBrokerIDsMismatch, fmt.Sprintf("brokers lists node ids %v, but Kafka %s/%s has broker nodes %v: the proxy serves the Kafka's; remove brokers to follow the Kafka", given, k.Namespace, k.Name, ids), route.Generation)
		}
		check = &c
	}
	return ids, check, nil
}
