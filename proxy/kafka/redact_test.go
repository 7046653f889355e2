package kafka

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/internal/golden"
)

// addressResponses is the audit of every kmsg response type with a host in it, and what the
// proxy does with each (the same table is in proxy/README.md). TestEveryResponseHostIsHandled
// finds these by reflection, so a host field in a new kmsg release fails the test until it is
// placed here.
var addressResponses = map[int16]string{
	kmsg.Produce.Int16():          "rewrite",
	kmsg.Fetch.Int16():            "rewrite",
	kmsg.Metadata.Int16():         "rewrite",
	kmsg.FindCoordinator.Int16():  "rewrite",
	kmsg.DescribeCluster.Int16():  "rewrite",
	kmsg.ShareFetch.Int16():       "rewrite",
	kmsg.ShareAcknowledge.Int16(): "rewrite",
	kmsg.DescribeConfigs.Int16():  "redact",
	kmsg.DescribeQuorum.Int16():   "redact",
	kmsg.Vote.Int16():             "redact",
	kmsg.BeginQuorumEpoch.Int16(): "redact",
	kmsg.EndQuorumEpoch.Int16():   "redact",
	kmsg.FetchSnapshot.Int16():    "redact",
	kmsg.UpdateRaftVoter.Int16():  "redact",
	// Hosts that are not upstream addresses: the client address the broker saw (the proxy's
	// own), ACL host patterns, and Kafka Streams application endpoints (client data).
	kmsg.DescribeGroups.Int16():        "client", // ClientHost
	kmsg.DescribeACLs.Int16():          "client", // Host (an ACL's host pattern)
	kmsg.DeleteACLs.Int16():            "client", // Host
	kmsg.ConsumerGroupDescribe.Int16(): "client", // ClientHost
	kmsg.ShareGroupDescribe.Int16():    "client", // ClientHost
	kmsg.StreamsGroupHeartbeat.Int16(): "client", // UserEndpoint (application.server)
	kmsg.StreamsGroupDescribe.Int16():  "client", // ClientHost, UserEndpoint
}

// hostFields lists the fields named Host or ClientHost, or configs (DescribeConfigs), in t.
func hostFields(t reflect.Type, path string, seen map[reflect.Type]bool) []string {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		return hostFields(t.Elem(), path, seen)
	case reflect.Struct:
		if seen[t] {
			return nil
		}
		seen[t] = true
		var out []string
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == "Host" || f.Name == "ClientHost" || f.Name == "ConfigSynonyms" {
				out = append(out, path+"."+f.Name)
			}
			out = append(out, hostFields(f.Type, path+"."+f.Name, seen)...)
		}
		return out
	}
	return nil
}

func TestEveryResponseHostIsHandled(t *testing.T) {
	found := map[int16]bool{}
	for k := int16(0); k < maxKey; k++ {
		r := kmsg.ResponseForKey(k)
		if r == nil {
			continue
		}
		fields := hostFields(reflect.TypeOf(r), kmsg.NameForKey(k), map[reflect.Type]bool{})
		if len(fields) == 0 {
			continue
		}
		found[k] = true
		action, ok := addressResponses[k]
		if !ok {
			t.Errorf("%s (%d) carries %v, which the proxy does not handle: rewrite, redact, or list it as client data", kmsg.NameForKey(k), k, fields)
			continue
		}
		if action != "client" && !NeedsRewrite(k, MaxVersion(k)) {
			t.Errorf("%s is to be %sed but NeedsRewrite is false", kmsg.NameForKey(k), action)
		}
	}
	for k := range addressResponses {
		if !found[k] {
			t.Errorf("%s (%d) is in the table but kmsg shows no host in it", kmsg.NameForKey(k), k)
		}
	}
}

// Upstream addresses in the redaction samples; none may survive.
const (
	upHost = "kafka-0.kafka-brokers.prod.svc.cluster.local"
	upPort = 19093
)

// redactSample builds a response of key at version with upstream addresses wherever it has them.
func redactSample(key, version int16) kmsg.Response {
	hp := fmt.Sprintf("%s:%d", upHost, upPort)
	var r kmsg.Response
	switch kmsg.Key(key) {
	case kmsg.DescribeConfigs:
		c := kmsg.NewPtrDescribeConfigsResponse()
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
		for name, v := range map[string]string{
			"advertised.listeners":                                "PLAIN://" + hp + ",CONTROLLER://" + hp,
			"listeners":                                           "PLAIN://0.0.0.0:19093",
			"controller.quorum.voters":                            "0@" + hp,
			"controller.quorum.bootstrap.servers":                 hp,
			"remote.log.metadata.common.client.bootstrap.servers": hp,
			"listener.name.plain.advertised.listeners":            hp,
			"log.retention.ms":                                    "604800000",
		} {
			cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
			cfg.Name, cfg.Value = name, kmsg.StringPtr(v)
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value = name, kmsg.StringPtr(v)
			cfg.ConfigSynonyms = append(cfg.ConfigSynonyms, syn)
			res.Configs = append(res.Configs, cfg)
		}
		slices.SortFunc(res.Configs, func(a, b kmsg.DescribeConfigsResponseResourceConfig) int { return strings.Compare(a.Name, b.Name) })
		c.Resources = append(c.Resources, res)
		r = c
	case kmsg.DescribeQuorum:
		c := kmsg.NewPtrDescribeQuorumResponse()
		for id := int32(0); id < 3; id++ {
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = id
			n.Listeners = []kmsg.DescribeQuorumResponseNodeListener{{Name: "CONTROLLER", Host: upHost, Port: upPort}}
			c.Nodes = append(c.Nodes, n)
		}
		r = c
	case kmsg.Vote:
		c := kmsg.NewPtrVoteResponse()
		c.NodeEndpoints = []kmsg.VoteResponseNodeEndpoint{{NodeID: 1, Host: upHost, Port: upPort}}
		r = c
	case kmsg.BeginQuorumEpoch:
		c := kmsg.NewPtrBeginQuorumEpochResponse()
		c.NodeEndpoints = []kmsg.BeginQuorumEpochResponseNodeEndpoint{{NodeID: 1, Host: upHost, Port: upPort}}
		r = c
	case kmsg.EndQuorumEpoch:
		c := kmsg.NewPtrEndQuorumEpochResponse()
		c.NodeEndpoints = []kmsg.EndQuorumEpochResponseNodeEndpoint{{NodeID: 1, Host: upHost, Port: upPort}}
		r = c
	case kmsg.FetchSnapshot:
		c := kmsg.NewPtrFetchSnapshotResponse()
		c.NodeEndpoints = []kmsg.FetchSnapshotResponseNodeEndpoint{{NodeID: 1, Host: upHost, Port: upPort}}
		r = c
	case kmsg.UpdateRaftVoter:
		c := kmsg.NewPtrUpdateRaftVoterResponse()
		c.CurrentLeader.LeaderID, c.CurrentLeader.Host, c.CurrentLeader.Port = 1, upHost, upPort
		r = c
	default:
		panic("no sample")
	}
	r.SetVersion(version)
	return r
}

// leaks reports where b holds the upstream host or port: as text, or as a 16-bit or 32-bit
// big-endian port.
func leaks(b []byte, host string, port int) []string {
	var out []string
	if bytes.Contains(b, []byte(host)) {
		out = append(out, "host "+host)
	}
	if bytes.Contains(b, []byte(fmt.Sprint(port))) {
		out = append(out, fmt.Sprintf("port %d as text", port))
	}
	if bytes.Contains(b, binary.BigEndian.AppendUint16(nil, uint16(port))) {
		out = append(out, fmt.Sprintf("port %d as bytes", port))
	}
	return out
}

// TestRedactGolden redacts a sample of every redacted API at every version kmsg knows: the
// output decodes, holds no upstream host or port, keeps what is not an address, and matches
// testdata/rewrite/<api>.golden.
func TestRedactGolden(t *testing.T) {
	for _, key := range []int16{kmsg.DescribeConfigs.Int16(), kmsg.DescribeQuorum.Int16(), kmsg.Vote.Int16(), kmsg.BeginQuorumEpoch.Int16(), kmsg.EndQuorumEpoch.Int16(), kmsg.FetchSnapshot.Int16(), kmsg.UpdateRaftVoter.Int16()} {
		name := kmsg.NameForKey(key)
		t.Run(name, func(t *testing.T) {
			var lines strings.Builder
			for v := int16(0); v <= MaxVersion(key); v++ {
				in := frameResponse(redactSample(key, v))
				hadAddress := len(leaks(in, upHost, upPort)) > 0
				out, n, err := RewriteResponse(nil, key, v, in, testMap)
				if err != nil {
					t.Fatalf("v%d: %v", v, err)
				}
				if !hadAddress {
					// Versions before the field existed encode no address (kmsg may still
					// encode an empty endpoint list, which is dropped).
					if l := leaks(out, upHost, upPort); len(l) > 0 {
						t.Fatalf("v%d: %v", v, l)
					}
					continue
				}
				if out == nil || n == 0 {
					t.Fatalf("v%d: nothing redacted", v)
				}
				if l := leaks(out, upHost, upPort); len(l) > 0 {
					t.Fatalf("v%d: %v left in %x", v, l, out)
				}
				got := kmsg.ResponseForKey(key)
				got.SetVersion(v)
				hl, _ := responseHeaderLen(key, v, out)
				if err := got.ReadFrom(out[hl:]); err != nil {
					t.Fatalf("v%d: output does not decode: %v", v, err)
				}
				switch got := got.(type) {
				case *kmsg.DescribeConfigsResponse:
					for _, c := range got.Resources[0].Configs {
						if c.Name == "log.retention.ms" && (c.Value == nil || *c.Value != "604800000" || c.IsSensitive) {
							t.Errorf("v%d: a config without an address was changed: %+v", v, c)
						}
						if c.Name != "log.retention.ms" && (c.Value != nil || !c.IsSensitive) {
							t.Errorf("v%d: %s is not hidden as sensitive", v, c.Name)
						}
					}
				case *kmsg.DescribeQuorumResponse:
					if len(got.Nodes) != 3 || got.Nodes[2].NodeID != 2 {
						t.Errorf("v%d: node ids not kept: %+v", v, got.Nodes)
					}
				}
				fmt.Fprintf(&lines, "v%d %s\n", v, hex.EncodeToString(out))
			}
			golden.Check(t, filepath.Join("testdata", "rewrite", name+".golden"), []byte(lines.String()))
		})
	}
}

func TestAddressConfig(t *testing.T) {
	tests := map[string]struct {
		name string
		want bool
	}{
		"advertised listeners hold addresses":                 {name: "advertised.listeners", want: true},
		"listeners hold addresses":                            {name: "listeners", want: true},
		"a listener-prefixed advertised listener is matched":  {name: "listener.name.internal.advertised.listeners", want: true},
		"quorum voters hold addresses":                        {name: "controller.quorum.voters", want: true},
		"quorum bootstrap servers hold addresses":             {name: "controller.quorum.bootstrap.servers", want: true},
		"a plugin's bootstrap servers hold addresses":         {name: "confluent.metrics.reporter.bootstrap.servers", want: true},
		"the ZooKeeper connect string holds addresses":        {name: "zookeeper.connect", want: true},
		"the legacy advertised host name holds an address":    {name: "advertised.host.name", want: true},
		"the legacy port is an address":                       {name: "port", want: true},
		"names are matched case-insensitively":                {name: "Advertised.Listeners", want: true},
		"the listener security protocol map holds no address": {name: "listener.security.protocol.map", want: false},
		"a topic retention holds no address":                  {name: "retention.ms", want: false},
		"the broker rack holds no address":                    {name: "broker.rack", want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := AddressConfig(tc.name); got != tc.want {
				t.Fatalf("AddressConfig(%q) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}

// TestRewriteFetchGrowsExactly: host names longer than the upstream ones come through whole
// when the response is buffered, in RewriteFetch and in CopyResponses, and the records are untouched.
func TestRewriteFetchGrowsExactly(t *testing.T) {
	long := func(id int32, _ string, _ int32) (string, int32) {
		return fmt.Sprintf("a-rather-long-proxy-broker-%d.kafka.gateway.example.com", id), 9292
	}
	for v := int16(16); v <= MaxVersion(kmsg.Fetch.Int16()); v++ {
		r := sampleResponse(kmsg.Fetch.Int16(), v).(*kmsg.FetchResponse)
		r.Brokers = []kmsg.FetchResponseBroker{{NodeID: 1, Host: "10.0.0.2", Port: 9093}, {NodeID: 2, Host: "10.0.0.3", Port: 9094}}
		in := frameResponse(r)
		out, n, err := RewriteFetch(nil, v, in, long)
		if err != nil || n != 2 {
			t.Fatalf("v%d: %d rewritten, %v", v, n, err)
		}
		// The same through the relay, as one frame below FetchBufferLimit.
		pending := make(chan Pending, 1)
		pending <- Pending{Key: kmsg.Fetch.Int16(), Version: v, CorrelationID: 7}
		close(pending)
		var relayed bytes.Buffer
		if err := CopyResponses(bytes.NewReader(sized(in)), &relayed, pending, RelayOptions{MaxFrame: 1 << 20, Addresses: long}); err != nil {
			t.Fatalf("v%d: relay: %v", v, err)
		}
		if !bytes.Equal(relayed.Bytes(), sized(out)) {
			t.Fatalf("v%d: the relay did not send RewriteFetch's frame", v)
		}
		want := *r
		want.Brokers = []kmsg.FetchResponseBroker{{NodeID: 1, Host: "a-rather-long-proxy-broker-1.kafka.gateway.example.com", Port: 9292},
			{NodeID: 2, Host: "a-rather-long-proxy-broker-2.kafka.gateway.example.com", Port: 9292}}
		if !bytes.Equal(out, frameResponse(&want)) {
			t.Fatalf("v%d: got %x, want kmsg's encoding of the rewritten response", v, out)
		}
	}
	r := sampleResponse(kmsg.Fetch.Int16(), 16).(*kmsg.FetchResponse)
	r.Brokers = nil
	if out, n, err := RewriteFetch(nil, 16, frameResponse(r), testMap); out != nil || n != 0 || err != nil {
		t.Fatalf("a response without endpoints: %x %d %v, want it forwarded as is", out, n, err)
	}
}

// TestLargeFetchStillStreams: above FetchBufferLimit the response is streamed at its original
// length, so endpoints that do not fit are dropped, never leaked.
func TestLargeFetchStillStreams(t *testing.T) {
	r := sampleResponse(kmsg.Fetch.Int16(), 16).(*kmsg.FetchResponse)
	r.Topics[0].Partitions[0].RecordBatches = make([]byte, FetchBufferLimit)
	r.Brokers = []kmsg.FetchResponseBroker{{NodeID: 1, Host: "10.0.0.2", Port: 9093}}
	in := sized(frameResponse(r))
	pending := make(chan Pending, 1)
	pending <- Pending{Key: kmsg.Fetch.Int16(), Version: 16, CorrelationID: 7}
	close(pending)
	var out bytes.Buffer
	long := func(int32, string, int32) (string, int32) { return strings.Repeat("x", 100), 1 }
	if err := CopyResponses(bytes.NewReader(in), &out, pending, RelayOptions{MaxFrame: 8 << 20, Addresses: long}); err != nil {
		t.Fatal(err)
	}
	if out.Len() != len(in) || bytes.Contains(out.Bytes(), []byte("10.0.0.2")) {
		t.Fatalf("%d bytes out for %d in; upstream host left: %v", out.Len(), len(in), bytes.Contains(out.Bytes(), []byte("10.0.0.2")))
	}
}

// FuzzRewriteFetch feeds arbitrary bytes to the buffered Fetch rewrite: no panic, any output
// walks again as the same Fetch version, and writeFetch writes what RewriteFetch makes. Seeds include huge array and tag counts and
// varints that overflow.
func FuzzRewriteFetch(f *testing.F) {
	for v := int16(16); v <= MaxVersion(kmsg.Fetch.Int16()); v++ {
		f.Add(v, frameResponse(sampleResponse(kmsg.Fetch.Int16(), v)))
	}
	corr := []byte{0, 0, 0, 7}
	body := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}                                                                                    // throttle, error, session
	f.Add(int16(16), append(append(append(slices.Clone(corr), 0), body...), 0xff, 0xff, 0xff, 0xff, 0x0f))                          // 2^32 topics
	f.Add(int16(17), append(append(slices.Clone(corr), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), body...)) // overflowing varint
	f.Add(int16(16), append(append(append(slices.Clone(corr), 0), body...), 1, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0, 0xff, 0xff, 0x03))  // huge tag count and size
	f.Add(int16(16), append(append(append(slices.Clone(corr), 0), body...), 1, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x07, 0))              // endpoints of 2^31 bytes
	f.Fuzz(func(t *testing.T, version int16, frame []byte) {
		out, n, err := RewriteFetch(nil, version, frame, testMap)
		checkWriteFetch(t, version, frame, out, n, err)
		if err != nil || out == nil {
			return
		}
		if _, _, err := RewriteFetch(nil, version, out, testMap); err != nil {
			t.Fatalf("rewritten output does not walk again: %v", err)
		}
	})
}

// checkWriteFetch fails t unless writeFetch, given frame with its size, fails where RewriteFetch
// did (out, n, err) and otherwise writes its output (the frame itself when out is nil) with its
// size, counting the same rewrites.
func checkWriteFetch(t *testing.T, version int16, frame, out []byte, n int, err error) {
	t.Helper()
	if version < 16 {
		return // written as it is, unparsed
	}
	var w bytes.Buffer
	wn, werr := writeFetch(&w, version, sized(slices.Clone(frame)), testMap)
	if (err == nil) != (werr == nil) {
		t.Fatalf("RewriteFetch: %v; writeFetch: %v", err, werr)
	}
	if err != nil {
		return
	}
	if out == nil {
		out = frame
	}
	if !bytes.Equal(w.Bytes(), sized(out)) || wn != n {
		t.Fatalf("writeFetch wrote %d bytes (%d rewrites), RewriteFetch made %d (%d)", w.Len(), wn, len(out), n)
	}
}
