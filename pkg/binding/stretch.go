package binding

import (
	"fmt"
	"net"
	"strings"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// StretchInput is what the addresses of a stretch Kafka (strimzi.io/stretch-mode: enabled)
// depend on, besides the Kafka.
type StretchInput struct {
	// ClusterIDs are the Submariner cluster ids of the Kafka's node pools
	// (strimzi.SubmarinerClusterIDs).
	ClusterIDs []string
	// Exported reports whether a Service of the Kafka's namespace has a ServiceExport.
	Exported func(service string) bool
}

// Stretch is how a stretch Kafka's bootstrap servers were made to survive the loss of a cluster.
type Stretch struct {
	// Addressing is kafkav1beta2.AddressingServiceExport, AddressingPerCluster or
	// AddressingExternal.
	Addressing string
	// Clusters are the cluster ids the addresses cover.
	Clusters []string
}

// StretchBootstrap rewrites the chosen listener's bootstrap servers for a stretch Kafka, so
// applications in any member cluster reach brokers in the others, and a lost cluster (the
// central one included) leaves the rest reachable:
//   - a listener of an outside type (route, ingress, loadbalancer, nodeport) keeps its addresses;
//   - an in-cluster one gets the clusterset name of its bootstrap Service when that Service is
//     exported, else one Submariner per-cluster name for each node pool cluster id.
func StretchBootstrap(choice Choice, in StretchInput) (Choice, *Stretch, *Failure) {
	if !choice.Listener.Type.InCluster() {
		return choice, &Stretch{Addressing: kafkav1beta2.AddressingExternal, Clusters: in.ClusterIDs}, nil
	}
	var out []string
	addressing := ""
	for _, addr := range strings.Split(choice.BootstrapServers, ",") {
		service, namespace, port, ok := serviceAddress(addr)
		if !ok {
			return choice, nil, fail(ReasonStretchAddressUnknown, fmt.Sprintf(
				"listener %q of the stretch Kafka has the bootstrap address %q, not a Service's <service>.<namespace>.svc name", choice.Listener.Name, addr))
		}
		switch {
		case in.Exported != nil && in.Exported(service):
			addressing = kafkav1beta2.AddressingServiceExport
			out = append(out, net.JoinHostPort(service+"."+namespace+"."+strimzi.ClustersetDomain, port))
		case len(in.ClusterIDs) > 0:
			addressing = kafkav1beta2.AddressingPerCluster
			for _, id := range in.ClusterIDs {
				out = append(out, net.JoinHostPort(id+"."+service+"."+namespace+"."+strimzi.ClustersetDomain, port))
			}
		default:
			return choice, nil, fail(ReasonStretchAddressUnknown, fmt.Sprintf(
				"the stretch Kafka's Service %s/%s has no ServiceExport and its node pools name no Submariner cluster id (spec.crossClusterTechnology): no address reaches it from every member cluster",
				namespace, service))
		}
	}
	choice.BootstrapServers = strings.Join(out, ",")
	return choice, &Stretch{Addressing: addressing, Clusters: in.ClusterIDs}, nil
}

// serviceAddress splits <service>.<namespace>.svc[.<cluster domain>]:<port>, the form Strimzi
// writes for in-cluster listeners.
func serviceAddress(addr string) (service, namespace, port string, ok bool) {
	host, port, err := net.SplitHostPort(strings.TrimSpace(addr))
	if err != nil {
		return "", "", "", false
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(labels) < 3 || labels[2] != "svc" || labels[0] == "" || labels[1] == "" {
		return "", "", "", false
	}
	return labels[0], labels[1], port, true
}
