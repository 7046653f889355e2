package gatewaymodel

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kafkalink/kafkalink/proxy/config"
)

// Exposure is how a route hostname reaches clients.
type Exposure int

// The exposures, in the order a hostname is matched against them.
const (
	// ExposeInCluster: the hostname ends in the cluster domain; one ClusterIP Service per host.
	ExposeInCluster Exposure = iota
	// ExposeOpenShiftRoute: the hostname is under an ingress domain; per-host ClusterIP Services
	// and passthrough OpenShift Routes.
	ExposeOpenShiftRoute
	// ExposeTLSRoute: the parameters name a Gateway API parent; per-host ClusterIP Services and TLSRoutes.
	ExposeTLSRoute
	// ExposeLoadBalancer: anything else; one LoadBalancer Service per route.
	ExposeLoadBalancer
)

// String names the exposure in messages.
func (e Exposure) String() string {
	switch e {
	case ExposeInCluster:
		return "in-cluster"
	case ExposeOpenShiftRoute:
		return "OpenShift Route"
	case ExposeTLSRoute:
		return "TLSRoute"
	default:
		return "LoadBalancer"
	}
}

// Host is one route hostname resolved to what the proxy and Kubernetes need.
type Host struct {
	// Pattern is the hostname as written, such as my-cluster-%.example.com.
	Pattern string
	// Bootstrap is the bootstrap host clients send as SNI.
	Bootstrap string
	// BrokerPattern is the broker host with $(nodeId).
	BrokerPattern string
	// Exposure is how the hostname is exposed.
	Exposure Exposure
	// Names, when set, name the brokers (config.BrokerNames: the hash mapping); unset, a
	// broker's host holds its node id.
	Names *config.BrokerNames
}

// ResolveHost applies the hostname convention (prefix-%.suffix gives prefix-bootstrap.suffix and
// prefix-broker-$(nodeId).suffix) and picks the exposure. In-cluster hostnames gain the
// namespace (my-cluster-%.svc.cluster.local is served as
// my-cluster-bootstrap.<namespace>.svc.cluster.local); a namespace written in the hostname must
// be the gateway's.
func ResolveHost(pattern, namespace, clusterDomain string, ingressDomains []string, tlsRoutes bool) (Host, error) {
	bootstrap, brokerPattern, err := config.BootstrapAndPattern(pattern)
	if err != nil {
		return Host{}, err
	}
	h := Host{Pattern: pattern, Bootstrap: bootstrap, BrokerPattern: brokerPattern}
	_, rest, _ := strings.Cut(pattern, ".")
	clusterDomain = strings.Trim(clusterDomain, ".")
	switch {
	case clusterDomain != "" && rest == clusterDomain:
		insert := func(host string) string {
			first, _, _ := strings.Cut(host, ".")
			return first + "." + namespace + "." + clusterDomain
		}
		h.Bootstrap, h.BrokerPattern, h.Exposure = insert(bootstrap), insert(brokerPattern), ExposeInCluster
		if err := validHostLength(h); err != nil {
			return Host{}, err
		}
		return h, nil
	case clusterDomain != "" && rest == namespace+"."+clusterDomain:
		h.Exposure = ExposeInCluster
		return h, nil
	case clusterDomain != "" && strings.HasSuffix(rest, "."+clusterDomain):
		written := strings.TrimSuffix(rest, "."+clusterDomain)
		return Host{}, fmt.Errorf("hostname %q is in-cluster but names namespace %q: in-cluster hostnames are served in the gateway's namespace %q (write %s.%s or %s.%s.%s)",
			pattern, written, namespace, firstLabel(pattern), clusterDomain, firstLabel(pattern), namespace, clusterDomain)
	}
	domains := append([]string(nil), ingressDomains...)
	sort.Strings(domains)
	for _, d := range domains {
		d = strings.Trim(d, ".")
		if d != "" && (rest == d || strings.HasSuffix(rest, "."+d)) {
			h.Exposure = ExposeOpenShiftRoute
			return h, nil
		}
	}
	if tlsRoutes {
		h.Exposure = ExposeTLSRoute
	} else {
		h.Exposure = ExposeLoadBalancer
	}
	return h, nil
}

// validHostLength refuses hosts the namespace made longer than a DNS name may be.
func validHostLength(h Host) error {
	if len(h.Bootstrap) > 253 || len(strings.Replace(h.BrokerPattern, config.NodeIDPlaceholder, "2147483647", 1)) > 253 {
		return fmt.Errorf("hostname %q with the namespace added is longer than 253 characters", h.Pattern)
	}
	return nil
}

// firstLabel is a host's first DNS label.
func firstLabel(host string) string {
	first, _, _ := strings.Cut(host, ".")
	return first
}

// BootstrapServiceName is the per-host Service name of the bootstrap host: its first label.
func (h Host) BootstrapServiceName() string { return firstLabel(h.Bootstrap) }

// BrokerHost is the host of broker id.
func (h Host) BrokerHost(id int32) string {
	if h.Names != nil {
		return h.Names.Host(id)
	}
	return strings.Replace(h.BrokerPattern, config.NodeIDPlaceholder, strconv.FormatInt(int64(id), 10), 1)
}

// BrokerServiceName is the per-host Service name of broker id: the first label of its host.
func (h Host) BrokerServiceName(id int32) string { return firstLabel(h.BrokerHost(id)) }
