package config

import "fmt"

// UpstreamBroker is the upstream address of one broker.
type UpstreamBroker struct {
	// NodeID is the broker's node id.
	NodeID int32 `json:"nodeId"`
	// Address is host:port, a fully qualified name with the root dot in the operator's output.
	Address string `json:"address"`
}

// MaxUpstreamBrokers bounds UpstreamBrokers: a route exposes at most 256 broker ids.
const MaxUpstreamBrokers = 256

// UpstreamBroker returns the configured upstream address of a node id; ok is false when the
// virtual cluster lists no such broker (or lists none: see UpstreamBrokers).
func (vc *VirtualCluster) UpstreamBroker(id int32) (addr string, ok bool) {
	for _, b := range vc.UpstreamBrokers {
		if b.NodeID == id {
			return b.Address, true
		}
	}
	return "", false
}

func validateUpstreamBrokers(errs *fieldErrs, path string, brokers []UpstreamBroker) {
	if len(brokers) > MaxUpstreamBrokers {
		errs.add(path, "lists %d brokers, more than %d", len(brokers), MaxUpstreamBrokers)
		return
	}
	seen := map[int32]bool{}
	for i, b := range brokers {
		p := fmt.Sprintf("%s[%d]", path, i)
		if b.NodeID < 0 {
			errs.add(p+".nodeId", "must not be negative")
		} else if seen[b.NodeID] {
			errs.add(p+".nodeId", "duplicate node id %d", b.NodeID)
		}
		seen[b.NodeID] = true
		if err := validHostPort(b.Address); err != nil {
			errs.add(p+".address", "%v", err)
		}
	}
}
