package kafka

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/internal/golden"
)

// frameResponse encodes resp with a response header (correlation id 7, tagged fields when flexible), without size.
func frameResponse(resp kmsg.Response) []byte {
	b := binary.BigEndian.AppendUint32(nil, 7)
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		b = append(b, 0)
	}
	return resp.AppendTo(b)
}

func testMap(id int32, host string, port int32) (string, int32) {
	return fmt.Sprintf("vc-broker-%d.example.com", id), 9292
}

// sampleResponse builds a response of key at version with upstream addresses in every field the proxy rewrites.
func sampleResponse(key, version int16) kmsg.Response {
	rack := "r1"
	switch kmsg.Key(key) {
	case kmsg.Metadata:
		r := kmsg.NewPtrMetadataResponse()
		r.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: "10.0.0.1", Port: 9092, Rack: &rack}, {NodeID: 1, Host: "10.0.0.2", Port: 9093}}
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = kmsg.StringPtr("orders")
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Replicas = []int32{0, 1}
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		r.ClusterID = kmsg.StringPtr("cluster")
		r.SetVersion(version)
		return r
	case kmsg.DescribeCluster:
		r := kmsg.NewPtrDescribeClusterResponse()
		r.ClusterID = "cluster"
		r.Brokers = []kmsg.DescribeClusterResponseBroker{{NodeID: 0, Host: "10.0.0.1", Port: 9092}, {NodeID: 2, Host: "10.0.0.3", Port: 9094, Rack: &rack}}
		r.SetVersion(version)
		return r
	case kmsg.FindCoordinator:
		r := kmsg.NewPtrFindCoordinatorResponse()
		r.NodeID, r.Host, r.Port = 1, "10.0.0.2", 9093
		r.Coordinators = []kmsg.FindCoordinatorResponseCoordinator{
			{Key: "g1", NodeID: 1, Host: "10.0.0.2", Port: 9093},
			{Key: "g2", NodeID: -1, Host: "", Port: -1, ErrorCode: kerr.CoordinatorNotAvailable.Code}, // skipped
		}
		r.SetVersion(version)
		return r
	case kmsg.Produce:
		r := kmsg.NewPtrProduceResponse()
		t := kmsg.NewProduceResponseTopic()
		t.Topic = "orders"
		p := kmsg.NewProduceResponseTopicPartition()
		p.ErrorCode = kerr.NotLeaderForPartition.Code
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		r.Brokers = []kmsg.ProduceResponseBroker{{NodeID: 2, Host: "10.0.0.3", Port: 9094}}
		r.SetVersion(version)
		return r
	case kmsg.Fetch:
		r := kmsg.NewPtrFetchResponse()
		t := kmsg.NewFetchResponseTopic()
		t.TopicID = [16]byte{1, 2, 3}
		p := kmsg.NewFetchResponseTopicPartition()
		p.ErrorCode = kerr.NotLeaderForPartition.Code
		p.RecordBatches = []byte("opaque record batches")
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		r.Brokers = []kmsg.FetchResponseBroker{{NodeID: 1, Host: "10.0.0.2", Port: 9093, Rack: &rack}}
		r.SetVersion(version)
		return r
	case kmsg.ShareFetch:
		r := kmsg.NewPtrShareFetchResponse()
		r.NodeEndpoints = []kmsg.ShareFetchResponseNodeEndpoint{{NodeID: 0, Host: "10.0.0.1", Port: 9092}}
		r.SetVersion(version)
		return r
	case kmsg.ShareAcknowledge:
		r := kmsg.NewPtrShareAcknowledgeResponse()
		r.NodeEndpoints = []kmsg.ShareAcknowledgeResponseNodeEndpoint{{NodeID: 0, Host: "10.0.0.1", Port: 9092}}
		r.SetVersion(version)
		return r
	}
	panic("no sample for key")
}

// firstRewritten is the first version of each rewritten API whose responses carry addresses.
var firstRewritten = map[int16]int16{kmsg.Metadata.Int16(): 0, kmsg.DescribeCluster.Int16(): 0, kmsg.FindCoordinator.Int16(): 0, kmsg.Produce.Int16(): 10, kmsg.Fetch.Int16(): 16, kmsg.ShareFetch.Int16(): 0, kmsg.ShareAcknowledge.Int16(): 0}

// addresses lists every broker address in an encoded response (header included).
func addresses(t *testing.T, key, version int16, frame []byte) []string {
	t.Helper()
	hl, err := responseHeaderLen(key, version, frame)
	if err != nil {
		t.Fatal(err)
	}
	r := kmsg.ResponseForKey(key)
	r.SetVersion(version)
	if err := r.ReadFrom(frame[hl:]); err != nil {
		t.Fatalf("decoding rewritten %s v%d: %v", kmsg.NameForKey(key), version, err)
	}
	var out []string
	add := func(id int32, h string, p int32) { out = append(out, fmt.Sprintf("%d=%s:%d", id, h, p)) }
	switch r := r.(type) {
	case *kmsg.MetadataResponse:
		for _, b := range r.Brokers {
			add(b.NodeID, b.Host, b.Port)
		}
	case *kmsg.DescribeClusterResponse:
		for _, b := range r.Brokers {
			add(b.NodeID, b.Host, b.Port)
		}
	case *kmsg.FindCoordinatorResponse:
		if version < 4 {
			add(r.NodeID, r.Host, r.Port)
		}
		for _, c := range r.Coordinators {
			add(c.NodeID, c.Host, c.Port)
		}
	case *kmsg.ProduceResponse:
		for _, b := range r.Brokers {
			add(b.NodeID, b.Host, b.Port)
		}
	case *kmsg.FetchResponse:
		for _, b := range r.Brokers {
			add(b.NodeID, b.Host, b.Port)
		}
	case *kmsg.ShareFetchResponse:
		for _, b := range r.NodeEndpoints {
			add(b.NodeID, b.Host, b.Port)
		}
	case *kmsg.ShareAcknowledgeResponse:
		for _, b := range r.NodeEndpoints {
			add(b.NodeID, b.Host, b.Port)
		}
	}
	return out
}

// TestRewriteGolden rewrites a sample response of every rewritten API at every version kmsg
// knows and compares the bytes with testdata/rewrite/<api>.golden (one hex line per version).
func TestRewriteGolden(t *testing.T) {
	for _, key := range []int16{kmsg.Produce.Int16(), kmsg.Fetch.Int16(), kmsg.Metadata.Int16(), kmsg.FindCoordinator.Int16(), kmsg.DescribeCluster.Int16(), kmsg.ShareFetch.Int16(), kmsg.ShareAcknowledge.Int16()} {
		name := kmsg.NameForKey(key)
		t.Run(name, func(t *testing.T) {
			var lines strings.Builder
			for v := firstRewritten[key]; v <= MaxVersion(key); v++ {
				in := frameResponse(sampleResponse(key, v))
				orig := bytes.Clone(in)
				out, n, err := RewriteResponse(nil, key, v, in, testMap)
				if err != nil {
					t.Fatalf("v%d: %v", v, err)
				}
				if !bytes.Equal(in, orig) {
					t.Fatalf("v%d: input modified", v)
				}
				if n == 0 || out == nil {
					t.Fatalf("v%d: nothing rewritten", v)
				}
				for _, a := range addresses(t, key, v, out) {
					if !strings.Contains(a, "vc-broker-") && !strings.HasPrefix(a, "-1=") {
						t.Errorf("v%d: address %s not rewritten", v, a)
					}
					if strings.HasPrefix(a, "-1=") && strings.Contains(a, "vc-broker") {
						t.Errorf("v%d: node id -1 rewritten: %s", v, a)
					}
				}
				// Everything but the addresses is unchanged: rewriting back gives the input.
				back, _, err := RewriteResponse(nil, key, v, out, func(id int32, _ string, _ int32) (string, int32) {
					for _, a := range addresses(t, key, v, in) {
						var gotID int32
						var hp string
						_, _ = fmt.Sscanf(a, "%d=%s", &gotID, &hp)
						if gotID == id {
							h, p, _ := strings.Cut(hp, ":")
							var port int32
							_, _ = fmt.Sscanf(p, "%d", &port)
							return h, port
						}
					}
					return "?", 0
				})
				if err != nil || !bytes.Equal(back, in) {
					t.Errorf("v%d: rewriting back does not restore the input (err %v)", v, err)
				}
				fmt.Fprintf(&lines, "v%d %s\n", v, hex.EncodeToString(out))
			}
			golden.Check(t, filepath.Join("testdata", "rewrite", name+".golden"), []byte(lines.String()))
		})
	}
}

func TestRewriteLeavesResponsesWithoutEndpoints(t *testing.T) {
	tests := map[string]struct {
		key, version int16
	}{
		"a Fetch v16 response without node endpoints is forwarded as is":   {key: kmsg.Fetch.Int16(), version: 16},
		"a Produce v11 response without node endpoints is forwarded as is": {key: kmsg.Produce.Int16(), version: 11},
		"a Fetch v15 response is never decoded":                            {key: kmsg.Fetch.Int16(), version: 15},
		"a Produce v9 response is never decoded":                           {key: kmsg.Produce.Int16(), version: 9},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := sampleResponse(tc.key, tc.version)
			switch r := r.(type) {
			case *kmsg.FetchResponse:
				r.Brokers = nil
			case *kmsg.ProduceResponse:
				r.Brokers = nil
			}
			out, n, err := RewriteResponse(nil, tc.key, tc.version, frameResponse(r), testMap)
			if err != nil || out != nil || n != 0 {
				t.Fatalf("got %x %d %v, want nothing", out, n, err)
			}
		})
	}
}

func TestRewriteApiVersionsGolden(t *testing.T) {
	var lines strings.Builder
	for v := int16(0); v <= MaxVersion(kmsg.ApiVersions.Int16()); v++ {
		r := kmsg.NewPtrApiVersionsResponse()
		r.SetVersion(v)
		r.ApiKeys = []kmsg.ApiVersionsResponseApiKey{
			{ApiKey: kmsg.Produce.Int16(), MinVersion: 3, MaxVersion: 99},  // capped at kmsg's max
			{ApiKey: kmsg.Metadata.Int16(), MinVersion: 0, MaxVersion: 4},  // kept
			{ApiKey: 9999, MinVersion: 0, MaxVersion: 1},                   // unknown key: dropped
			{ApiKey: kmsg.Fetch.Int16(), MinVersion: 120, MaxVersion: 121}, // nothing the proxy decodes: dropped
		}
		in := frameResponse(r)
		out, err := RewriteApiVersions(nil, v, in)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		got := kmsg.NewPtrApiVersionsResponse()
		got.SetVersion(v)
		if err := got.ReadFrom(out[4:]); err != nil {
			t.Fatal(err)
		}
		want := []kmsg.ApiVersionsResponseApiKey{{ApiKey: kmsg.Produce.Int16(), MinVersion: 3, MaxVersion: MaxVersion(kmsg.Produce.Int16())}, {ApiKey: kmsg.Metadata.Int16(), MinVersion: 0, MaxVersion: 4}}
		if fmt.Sprint(got.ApiKeys) != fmt.Sprint(want) {
			t.Errorf("v%d: keys %v, want %v", v, got.ApiKeys, want)
		}
		fmt.Fprintf(&lines, "v%d %s\n", v, hex.EncodeToString(out))
	}
	// A broker's UNSUPPORTED_VERSION answer is v0 whatever the request version.
	r := kmsg.NewPtrApiVersionsResponse()
	r.ErrorCode = kerr.UnsupportedVersion.Code
	r.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: kmsg.ApiVersions.Int16(), MinVersion: 0, MaxVersion: 3}}
	out, err := RewriteApiVersions(nil, 4, frameResponse(r))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&lines, "unsupported %s\n", hex.EncodeToString(out))
	fmt.Fprintf(&lines, "local %s\n", hex.EncodeToString(UnsupportedApiVersions(7)))
	golden.Check(t, filepath.Join("testdata", "rewrite", "ApiVersions.golden"), []byte(lines.String()))
}

func TestProduceAcks(t *testing.T) {
	for v := int16(0); v <= MaxVersion(kmsg.Produce.Int16()); v++ {
		for _, acks := range []int16{0, 1, -1} {
			for _, txn := range []*string{nil, kmsg.StringPtr("txn-1")} {
				if txn != nil && v < 3 {
					continue
				}
				req := kmsg.NewPtrProduceRequest()
				req.SetVersion(v)
				req.Acks = acks
				req.TransactionID = txn
				frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("client-x")).AppendRequest(nil, req, 42)
				got, ok, err := ProduceAcks(v, frame[4:])
				if err != nil || !ok || got != acks {
					t.Errorf("v%d acks %d txn %v: got %d %v %v", v, acks, txn != nil, got, ok, err)
				}
				// A prefix that ends before acks says so instead of guessing.
				if _, ok, _ := ProduceAcks(v, frame[4:12]); ok {
					t.Errorf("v%d: acks found in a short prefix", v)
				}
			}
		}
	}
}

// TestAcksZeroProduceIsNotTracked checks that Produce with acks=0 queues no pending response.
func TestAcksZeroProduceIsNotTracked(t *testing.T) {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("c"))
	var stream []byte
	for i := int32(0); i < 100; i++ {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(11)
		req.Acks = 0
		stream = append(stream, f.AppendRequest(nil, req, i)...) // AppendRequest sizes from dst[0]
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	stream = append(stream, f.AppendRequest(nil, md, 100)...)
	pending := make(chan Pending, 200)
	var out bytes.Buffer
	err := CopyRequests(bytes.NewReader(stream), &out, pending, RelayOptions{MaxFrame: 1 << 20})
	if !errors.Is(err, io.EOF) {
		t.Fatalf("err = %v", err)
	}
	var got []Pending
	for p := range pending {
		got = append(got, p)
	}
	if len(got) != 1 || got[0].CorrelationID != 100 {
		t.Fatalf("pending = %+v, want only the Metadata request", got)
	}
	if !bytes.Equal(out.Bytes(), stream) {
		t.Fatal("requests were not forwarded byte for byte")
	}
}

func TestCopyRequestsAnswersTooNewApiVersions(t *testing.T) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(MaxVersion(kmsg.ApiVersions.Int16()))
	stream := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
	binary.BigEndian.PutUint16(stream[6:], uint16(MaxVersion(kmsg.ApiVersions.Int16())+1))
	pending := make(chan Pending, 2)
	var out bytes.Buffer
	if err := CopyRequests(bytes.NewReader(stream), &out, pending, RelayOptions{MaxFrame: 1 << 20}); !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatal("a too-new ApiVersions request was forwarded")
	}
	p := <-pending
	var r kmsg.ApiVersionsResponse
	if err := r.ReadFrom(p.Local[8:]); err != nil || r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("local answer %+v %v", r, err)
	}
}

func TestCopyResponsesRewritesInOrder(t *testing.T) {
	md := sampleResponse(kmsg.Metadata.Int16(), 12)
	plain := []byte{0, 0, 0, 8, 0, 0, 0, 2, 1, 2, 3, 4} // a 4-byte body for correlation id 2
	var stream []byte
	f := frameResponse(md)
	stream = binary.BigEndian.AppendUint32(stream, uint32(len(f)))
	stream = append(stream, f...) // correlation id 7
	stream = append(stream, plain...)
	pending := make(chan Pending, 3)
	pending <- Pending{Key: kmsg.Metadata.Int16(), Version: 12, CorrelationID: 7}
	pending <- Pending{Key: kmsg.CreateTopics.Int16(), Version: 0, CorrelationID: 2}
	pending <- Pending{Local: []byte("local")}
	close(pending)
	var out bytes.Buffer
	if err := CopyResponses(bytes.NewReader(stream), &out, pending, RelayOptions{MaxFrame: 1 << 20, Addresses: testMap}); err != nil {
		t.Fatal(err)
	}
	b := out.Bytes()
	size := binary.BigEndian.Uint32(b)
	if got := addresses(t, kmsg.Metadata.Int16(), 12, b[4:4+size]); got[0] != "0=vc-broker-0.example.com:9292" {
		t.Fatalf("addresses %v", got)
	}
	if rest := b[4+size:]; !bytes.Equal(rest, append(plain, "local"...)) {
		t.Fatalf("rest = %x", rest)
	}
}

func TestCopyResponsesRefusesWrongCorrelationID(t *testing.T) {
	pending := make(chan Pending, 1)
	pending <- Pending{Key: kmsg.CreateTopics.Int16(), CorrelationID: 3}
	err := CopyResponses(bytes.NewReader([]byte{0, 0, 0, 4, 0, 0, 0, 2}), io.Discard, pending, RelayOptions{MaxFrame: 1 << 20, Addresses: testMap})
	if err == nil || !strings.Contains(err.Error(), "correlation id 2, expected 3") {
		t.Fatalf("err = %v", err)
	}
}

func TestApiVersionsError(t *testing.T) {
	for v := int16(0); v <= MaxVersion(kmsg.ApiVersions.Int16())+1; v++ {
		frame := ApiVersionsError(42, v, kerr.BrokerNotAvailable.Code)
		if got := int32(binary.BigEndian.Uint32(frame)); int(got) != len(frame)-4 {
			t.Fatalf("v%d: size %d for %d bytes", v, got, len(frame)-4)
		}
		if corr := int32(binary.BigEndian.Uint32(frame[4:])); corr != 42 {
			t.Fatalf("v%d: correlation id %d", v, corr)
		}
		r := kmsg.NewPtrApiVersionsResponse()
		r.SetVersion(min(v, MaxVersion(kmsg.ApiVersions.Int16())))
		if err := r.ReadFrom(frame[8:]); err != nil || r.ErrorCode != kerr.BrokerNotAvailable.Code {
			t.Fatalf("v%d: %v, error code %d", v, err, r.ErrorCode)
		}
	}
}
