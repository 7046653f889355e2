package strimzi

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Node pools: the KafkaNodePool kind, and the broker nodes of a Kafka.
const (
	KindKafkaNodePool      = "KafkaNodePool"
	ResourceKafkaNodePools = "kafkanodepools"
	// RoleBroker is the KafkaNodePool role of nodes that serve clients.
	RoleBroker = "broker"
)

// KafkaNodePool holds the fields of a Strimzi KafkaNodePool that kafkalink reads.
type KafkaNodePool struct {
	Namespace string
	Name      string
	// Cluster is the Kafka the pool belongs to (its strimzi.io/cluster label).
	Cluster string
	// Roles are spec.roles: broker and/or controller.
	Roles []string
	// NodeIDs are status.nodeIds: the node ids Strimzi assigned to the pool's pods.
	NodeIDs []int32
	// SubmarinerClusterID is spec.crossClusterTechnology.configuration.submarinerClusterId when
	// the pool's technology is submariner (a stretch cluster's member); empty otherwise.
	SubmarinerClusterID string
}

// Broker is one broker node of a Kafka.
type Broker struct {
	// ID is the node id.
	ID int32
	// Component is the prefix of the broker's pod and Services: <cluster>-<pool> with node pools,
	// <cluster>-kafka without.
	Component string
	// ClusterID is the Submariner cluster id of the broker's node pool, for a stretch Kafka.
	ClusterID string
}

// Bounds on what kafkalink reads from Strimzi: node ids are Kafka's non-negative int32 broker
// ids; a Kafka without node pools has at most as many replicas as a route can expose brokers.
const (
	MaxNodeID   = 1<<31 - 1
	MaxReplicas = 1 << 16
)

// ParseKafkaNodePool reads a Strimzi KafkaNodePool (kafka.strimzi.io/v1 or v1beta2).
func ParseKafkaNodePool(obj map[string]any) (*KafkaNodePool, error) {
	p := &KafkaNodePool{}
	var err error
	if p.Namespace, p.Name, _, err = parseMeta(obj); err != nil {
		return nil, err
	}
	meta, _ := optMap(obj, "metadata", "metadata")
	labels, err := optMap(meta, "labels", "metadata.labels")
	if err != nil {
		return nil, err
	}
	if p.Cluster, err = optString(labels, LabelCluster, "metadata.labels."+LabelCluster); err != nil {
		return nil, err
	}
	spec, err := optMap(obj, "spec", "spec")
	if err != nil {
		return nil, err
	}
	if p.Roles, err = stringList(spec, "roles", "spec.roles"); err != nil {
		return nil, err
	}
	if p.SubmarinerClusterID, err = submarinerClusterID(spec); err != nil {
		return nil, err
	}
	status, err := optMap(obj, "status", "status")
	if err != nil {
		return nil, err
	}
	ids, err := optSlice(status, "nodeIds", "status.nodeIds")
	if err != nil {
		return nil, err
	}
	for i, v := range ids {
		path := fmt.Sprintf("status.nodeIds[%d]", i)
		id, err := intValue(v, path)
		if err != nil {
			return nil, err
		}
		if id < 0 || id > MaxNodeID {
			return nil, fieldErr(path, "must be a node id from 0 to %d, got %d", MaxNodeID, id)
		}
		p.NodeIDs = append(p.NodeIDs, int32(id))
	}
	return p, nil
}

// submarinerClusterID reads spec.crossClusterTechnology of a stretch cluster's node pool.
func submarinerClusterID(spec map[string]any) (string, error) {
	const path = "spec.crossClusterTechnology"
	cct, err := optMap(spec, "crossClusterTechnology", path)
	if err != nil {
		return "", err
	}
	tech, err := optString(cct, "technology", path+".technology")
	if err != nil || !strings.EqualFold(tech, TechnologySubmariner) {
		return "", err
	}
	conf, err := optMap(cct, "configuration", path+".configuration")
	if err != nil {
		return "", err
	}
	id, err := optString(conf, "submarinerClusterId", path+".configuration.submarinerClusterId")
	if err != nil {
		return "", err
	}
	if id != "" && len(validation.IsDNS1123Label(id)) > 0 {
		return "", fieldErr(path+".configuration.submarinerClusterId", "must be a DNS label, got %q", id)
	}
	return id, nil
}

// SubmarinerClusterIDs are the distinct Submariner cluster ids of a Kafka's node pools, sorted.
func SubmarinerClusterIDs(k *Kafka, pools []*KafkaNodePool) []string {
	var ids []string
	for _, p := range pools {
		if p != nil && p.Namespace == k.Namespace && p.Cluster == k.Name && p.SubmarinerClusterID != "" {
			ids = append(ids, p.SubmarinerClusterID)
		}
	}
	sort.Strings(ids)
	return slices.Compact(ids)
}

// stringList reads an optional list of strings.
func stringList(m map[string]any, key, path string) ([]string, error) {
	items, err := optSlice(m, key, path)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for i, v := range items {
		s, ok := v.(string)
		if !ok {
			return nil, fieldErr(fmt.Sprintf("%s[%d]", path, i), "must be a string, got %s", describe(v))
		}
		out = append(out, s)
	}
	return out, nil
}

// IsBroker reports whether the pool's nodes serve clients.
func (p *KafkaNodePool) IsBroker() bool { return slices.Contains(p.Roles, RoleBroker) }

// Brokers are the broker nodes of a Kafka, by node id: the status.nodeIds of its broker-role
// KafkaNodePools (those labelled strimzi.io/cluster with its name, in its namespace) when it has
// any, else spec.kafka.replicas pods numbered from 0, as Strimzi numbers them without node pools.
func Brokers(k *Kafka, pools []*KafkaNodePool) []Broker {
	var out []Broker
	seen := map[int32]bool{}
	usesPools := false
	for _, p := range pools {
		if p == nil || p.Namespace != k.Namespace || p.Cluster != k.Name {
			continue
		}
		usesPools = true
		if !p.IsBroker() {
			continue
		}
		for _, id := range p.NodeIDs {
			if !seen[id] {
				seen[id] = true
				out = append(out, Broker{ID: id, Component: k.Name + "-" + p.Name, ClusterID: p.SubmarinerClusterID})
			}
		}
	}
	if !usesPools {
		for id := int32(0); id < k.Replicas; id++ {
			out = append(out, Broker{ID: id, Component: k.Name + "-kafka"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ClustersetDomain is the Kubernetes Multi-Cluster Services domain: an exported Service is
// <service>.<namespace>.svc.clusterset.local in every cluster of the set, and Submariner serves
// one cluster's pods as <pod>.<clusterId>.<service>.<namespace>.svc.clusterset.local.
const ClustersetDomain = "svc.clusterset.local"

// BootstrapHost is the in-cluster host name (ending in .svc, without the cluster domain) of a
// listener's bootstrap Service, by Strimzi's naming: <cluster>-kafka-bootstrap for internal
// listeners, <cluster>-kafka-<listener>-bootstrap for the others, which Strimzi gives their own
// Services. A stretch Kafka's internal listeners are reached across clusters through the
// exported Service's clusterset name instead.
func (k *Kafka) BootstrapHost(l Listener) string {
	if k.Stretch && l.sharesInternalServices() {
		return k.BootstrapService(l) + "." + k.Namespace + "." + ClustersetDomain
	}
	return k.BootstrapService(l) + "." + k.Namespace + ".svc"
}

// BootstrapService is the name of a listener's bootstrap Service (see BootstrapHost).
func (k *Kafka) BootstrapService(l Listener) string {
	if l.sharesInternalServices() {
		return k.Name + "-kafka-bootstrap"
	}
	return k.Name + "-kafka-" + l.Name + "-bootstrap"
}

// ServicePortName is the name Strimzi gives a listener's port on its Services: tcp-<listener>,
// but the names of the old object form for listeners that look like its plain, tls and external.
func (l Listener) ServicePortName() string {
	switch {
	case l.Name == OldPlainName && l.Port == OldPlainPort && l.Type == ListenerInternal:
		return "tcp-clients"
	case l.Name == OldTLSName && l.Port == OldTLSPort && l.Type == ListenerInternal:
		return "tcp-clientstls"
	case l.Name == OldExternalName && l.Port == OldExternalPort:
		return "tcp-external"
	}
	return "tcp-" + l.Name
}

// BrokerHost is the in-cluster host name (ending in .svc, without the cluster domain) at which a
// broker serves a listener, by Strimzi's naming: its pod's name in the <cluster>-kafka-brokers
// headless Service for internal listeners, which Strimzi advertises; its own per-broker Service
// <component>-<listener>-<id> for the others (<component>-<id> for the old external listener).
func (k *Kafka) BrokerHost(l Listener, b Broker) string {
	id := strconv.Itoa(int(b.ID))
	if l.sharesInternalServices() && k.Stretch && b.ClusterID != "" {
		// As Strimzi's stretch mode advertises brokers: through Submariner, from every cluster.
		return b.Component + "-" + id + "." + b.ClusterID + "." + k.Name + "-kafka-brokers." + k.Namespace + "." + ClustersetDomain
	}
	if l.sharesInternalServices() {
		return b.Component + "-" + id + "." + k.Name + "-kafka-brokers." + k.Namespace + ".svc"
	}
	if l.Name == OldExternalName && l.Port == OldExternalPort {
		return b.Component + "-" + id + "." + k.Namespace + ".svc"
	}
	return b.Component + "-" + l.Name + "-" + id + "." + k.Namespace + ".svc"
}

// sharesInternalServices reports whether Strimzi serves the listener through the shared bootstrap
// and headless Services rather than Services of its own: internal listeners do.
func (l Listener) sharesInternalServices() bool {
	return l.Type == ListenerInternal || l.Type == ListenerService
}

// ListenerByPort returns the spec listener on a port.
func (k *Kafka) ListenerByPort(port int32) (Listener, bool) {
	for _, l := range k.Listeners {
		if l.Port == port {
			return l, true
		}
	}
	return Listener{}, false
}
