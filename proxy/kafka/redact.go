package kafka

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Responses that carry an upstream address but no broker the proxy can route to are redacted,
// not rewritten: the proxy only routes broker node ids, so an address it made up for a
// controller or a Raft voter would send a client to a broker listener that is not what the
// response says it is. A missing address is honest; a wrong one is not.
//
//   - DescribeQuorum v2+ (55) lists the KRaft controllers' listeners. Node ids stay; each node's
//     listener list is emptied. Controller ids may equal broker ids (combined mode) while the
//     controller listener is another port, so rewriting them to the broker's proxy address
//     would lie.
//   - DescribeConfigs (32) returns broker configs such as advertised.listeners. Values of
//     address-bearing configs (AddressConfig) and of their synonyms become null and the config
//     is marked sensitive, the form a broker itself uses for values it does not show, so
//     consoles print it as hidden instead of failing.
//   - Vote (52), BeginQuorumEpoch (53), EndQuorumEpoch (54), FetchSnapshot (59) and
//     UpdateRaftVoter (82) are controller-to-controller APIs that a broker listener does not
//     serve; should a target answer them anyway, their leader endpoints are removed.

// AddressConfig reports whether a Kafka config of this name holds host names or addresses
// (listeners, bootstrap servers, quorum voters, ZooKeeper connect strings and the legacy host
// and port settings), whatever its prefix: listener- and plugin-prefixed variants
// (remote.log.metadata.common.client.bootstrap.servers, confluent.metrics.reporter.bootstrap.servers)
// hold addresses too. Names are matched case-insensitively.
func AddressConfig(name string) bool {
	n := strings.ToLower(name)
	for _, suffix := range []string{"listeners", "bootstrap.servers", "quorum.voters", "zookeeper.connect", "host.name", "advertised.port"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return n == "port"
}

// redact removes the upstream addresses of the responses described above from r and returns
// how many values it removed.
func redact(r kmsg.Response) int {
	n := 0
	switch r := r.(type) {
	case *kmsg.DescribeQuorumResponse:
		for i := range r.Nodes {
			if len(r.Nodes[i].Listeners) > 0 {
				n += len(r.Nodes[i].Listeners)
				r.Nodes[i].Listeners = []kmsg.DescribeQuorumResponseNodeListener{}
			}
		}
	case *kmsg.DescribeConfigsResponse:
		for i := range r.Resources {
			for j := range r.Resources[i].Configs {
				c := &r.Resources[i].Configs[j]
				if !AddressConfig(c.Name) {
					continue
				}
				if c.Value != nil {
					c.Value = nil
					n++
				}
				c.IsSensitive = true
				for k := range c.ConfigSynonyms {
					if c.ConfigSynonyms[k].Value != nil {
						c.ConfigSynonyms[k].Value = nil
						n++
					}
				}
			}
		}
	case *kmsg.VoteResponse:
		n += len(r.NodeEndpoints)
		r.NodeEndpoints = nil
	case *kmsg.BeginQuorumEpochResponse:
		n += len(r.NodeEndpoints)
		r.NodeEndpoints = nil
	case *kmsg.EndQuorumEpochResponse:
		n += len(r.NodeEndpoints)
		r.NodeEndpoints = nil
	case *kmsg.FetchSnapshotResponse:
		n += len(r.NodeEndpoints)
		r.NodeEndpoints = nil
	case *kmsg.UpdateRaftVoterResponse:
		if r.CurrentLeader.Host != "" || r.CurrentLeader.Port != 0 {
			// The leader id and epoch stay: they name no address.
			r.CurrentLeader.Host, r.CurrentLeader.Port = "", 0
			n++
		}
	}
	return n
}
