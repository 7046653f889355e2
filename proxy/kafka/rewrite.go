// Package kafka holds the Kafka-protocol core of kafkalink-proxy: request framing, the
// pending-request tracking, and the rewriting of the responses that carry broker addresses. It
// works on byte slices and buffered streams only; it owns no sockets.
//
// Only responses whose API key carries addresses are decoded (with franz-go's kmsg); every
// other frame is copied through untouched. No upstream address reaches a client:
//
//	response (key)                          host in it                 the proxy
//	Metadata (3), DescribeCluster (60)      brokers                    rewrites (AddressMap)
//	FindCoordinator (10)                    coordinators               rewrites (node id >= 0)
//	Produce v10+ (0)                        NodeEndpoints              rewrites, exactly
//	Fetch v16+ (1)                          NodeEndpoints              rewrites exactly up to FetchBufferLimit (RewriteFetch);
//	                                                                   larger responses stream (StreamFetch)
//	ShareFetch (78), ShareAcknowledge (79)  NodeEndpoints              rewrites
//	DescribeQuorum v2+ (55)                 controller listeners       redacts (redact.go says why)
//	DescribeConfigs (32)                    address configs' values    redacts (AddressConfig)
//	Vote, Begin/EndQuorumEpoch,             leader endpoints           redacts
//	  FetchSnapshot, UpdateRaftVoter
//	DescribeGroups and other group          member ClientHost,         leaves: the proxy's own address, a Streams
//	  describes, DescribeACLs, DeleteACLs     ACL hosts, UserEndpoint    app's endpoint, an ACL pattern
//
// ApiVersions (18) is intersected with what kmsg can decode. A test walks every kmsg response
// type by reflection and fails on a host field this table does not place.
package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxKey bounds the lookup tables; kmsg knows keys well below it.
const maxKey = 128

var (
	// maxVersion[k] is kmsg's highest version of key k, or -1 when kmsg does not know k.
	maxVersion [maxKey]int16
	// firstFlexible[k] is the first flexible version of key k (header v2 requests, v1 responses).
	firstFlexible [maxKey]int16
)

func init() {
	for k := int16(0); k < maxKey; k++ {
		maxVersion[k] = -1
		firstFlexible[k] = 1 << 14
		req := kmsg.RequestForKey(k)
		if req == nil {
			continue
		}
		maxVersion[k] = req.MaxVersion()
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			if req.IsFlexible() {
				firstFlexible[k] = v
				break
			}
		}
	}
}

// MaxVersion returns the highest version of key the proxy can decode, or -1 if none.
func MaxVersion(key int16) int16 {
	if key < 0 || key >= maxKey {
		return -1
	}
	return maxVersion[key]
}

// Flexible reports whether key at version uses flexible (tagged) encoding.
func Flexible(key, version int16) bool {
	if key < 0 || key >= maxKey {
		return false
	}
	return version >= firstFlexible[key]
}

// NeedsRewrite reports whether the response to key at version must be decoded and rewritten.
func NeedsRewrite(key, version int16) bool {
	switch kmsg.Key(key) {
	case kmsg.Metadata, kmsg.FindCoordinator, kmsg.DescribeCluster, kmsg.ShareFetch, kmsg.ShareAcknowledge, kmsg.ApiVersions,
		kmsg.DescribeConfigs, kmsg.Vote, kmsg.BeginQuorumEpoch, kmsg.EndQuorumEpoch, kmsg.FetchSnapshot, kmsg.UpdateRaftVoter:
		return true
	case kmsg.DescribeQuorum:
		return version >= 2
	case kmsg.Produce:
		return version >= 10
	case kmsg.Fetch:
		return version >= 16
	}
	return false
}

// AddressMap is called for every broker address found in a response: it learns the
// upstream address of nodeID and returns the address to advertise instead.
type AddressMap func(nodeID int32, host string, port int32) (string, int32)

// ErrMalformed wraps every error caused by bytes that are not valid Kafka.
var ErrMalformed = errors.New("malformed Kafka frame")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// responseHeaderLen returns the length of the response header at the start of frame
// (the bytes after the size): the correlation id, plus tagged fields on flexible responses
// (ApiVersions responses always have the old header, so clients can parse errors).
func responseHeaderLen(key, version int16, frame []byte) (int, error) {
	if len(frame) < 4 {
		return 0, malformed("response shorter than a correlation id")
	}
	if key == kmsg.ApiVersions.Int16() || !Flexible(key, version) {
		return 4, nil
	}
	n, err := skipTags(frame[4:])
	if err != nil {
		return 0, err
	}
	return 4 + n, nil
}

// RewriteResponse rewrites the broker addresses in one response frame (the bytes after the
// 4-byte size, starting with the correlation id) for a request of key at version. It appends
// the new frame, without size, to dst and returns it with the number of addresses rewritten.
// When nothing needs to change it returns a nil slice, and the caller forwards the original.
func RewriteResponse(dst []byte, key, version int16, frame []byte, m AddressMap) ([]byte, int, error) {
	if !NeedsRewrite(key, version) || key == kmsg.ApiVersions.Int16() {
		return nil, 0, nil
	}
	if version > MaxVersion(key) || version < 0 {
		return nil, 0, fmt.Errorf("cannot decode %s v%d: the proxy knows up to v%d", kmsg.NameForKey(key), version, MaxVersion(key))
	}
	hl, err := responseHeaderLen(key, version, frame)
	if err != nil {
		return nil, 0, err
	}
	if key == kmsg.Produce.Int16() {
		// The common Produce response carries no endpoints: forward it without decoding.
		if has, err := produceHasNodeEndpoints(version, frame[hl:]); err == nil && !has {
			return nil, 0, nil
		}
	}
	resp := kmsg.ResponseForKey(key)
	resp.SetVersion(version)
	// Unsafe strings point into frame; everything is re-encoded before frame is reused, and
	// AddressMap implementations copy what they keep.
	if err := DecodeBounded(frame[hl:], resp.(kmsg.UnsafeReadFrom).UnsafeReadFrom); err != nil {
		return nil, 0, malformed("%s v%d: %v", kmsg.NameForKey(key), version, err)
	}
	n := rewriteAddresses(resp, m)
	if n == 0 {
		return nil, 0, nil
	}
	dst = append(dst, frame[:hl]...)
	dst = resp.AppendTo(dst)
	return dst, n, nil
}

// rewriteAddresses gives every broker in resp the address m returns and redacts the addresses
// of nodes the proxy does not route (redact.go); it returns how many values it changed.
func rewriteAddresses(resp kmsg.Response, m AddressMap) int {
	n := 0
	rw := func(id int32, host *string, port *int32) {
		if id < 0 {
			return
		}
		*host, *port = m(id, *host, *port)
		n++
	}
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			rw(r.Brokers[i].NodeID, &r.Brokers[i].Host, &r.Brokers[i].Port)
		}
	case *kmsg.DescribeClusterResponse:
		for i := range r.Brokers {
			rw(r.Brokers[i].NodeID, &r.Brokers[i].Host, &r.Brokers[i].Port)
		}
	case *kmsg.FindCoordinatorResponse:
		if r.Version < 4 {
			if r.ErrorCode == 0 {
				rw(r.NodeID, &r.Host, &r.Port)
			}
		}
		for i := range r.Coordinators {
			rw(r.Coordinators[i].NodeID, &r.Coordinators[i].Host, &r.Coordinators[i].Port)
		}
	case *kmsg.ProduceResponse:
		for i := range r.Brokers {
			rw(r.Brokers[i].NodeID, &r.Brokers[i].Host, &r.Brokers[i].Port)
		}
	case *kmsg.FetchResponse:
		for i := range r.Brokers {
			rw(r.Brokers[i].NodeID, &r.Brokers[i].Host, &r.Brokers[i].Port)
		}
	case *kmsg.ShareFetchResponse:
		for i := range r.NodeEndpoints {
			rw(r.NodeEndpoints[i].NodeID, &r.NodeEndpoints[i].Host, &r.NodeEndpoints[i].Port)
		}
	case *kmsg.ShareAcknowledgeResponse:
		for i := range r.NodeEndpoints {
			rw(r.NodeEndpoints[i].NodeID, &r.NodeEndpoints[i].Host, &r.NodeEndpoints[i].Port)
		}
	default:
		n = redact(resp)
	}
	return n
}

// RewriteApiVersions intersects an ApiVersions response frame (after the size) with the
// versions the proxy can decode: unknown keys are dropped and every maximum is capped at
// kmsg's. A response with UNSUPPORTED_VERSION is in v0 form whatever the request version.
// It appends the new frame to dst.
func RewriteApiVersions(dst []byte, version int16, frame []byte) ([]byte, error) {
	if len(frame) < 6 {
		return nil, malformed("ApiVersions response too short")
	}
	if version > MaxVersion(kmsg.ApiVersions.Int16()) || version < 0 {
		return nil, fmt.Errorf("cannot decode ApiVersions v%d", version)
	}
	if int16(binary.BigEndian.Uint16(frame[4:])) == kerr.UnsupportedVersion.Code {
		version = 0
	}
	var r kmsg.ApiVersionsResponse
	r.SetVersion(version)
	if err := DecodeBounded(frame[4:], r.ReadFrom); err != nil {
		return nil, malformed("ApiVersions v%d: %v", version, err)
	}
	keys := r.ApiKeys[:0]
	for _, k := range r.ApiKeys {
		mv := MaxVersion(k.ApiKey)
		if mv < 0 {
			continue
		}
		k.MaxVersion = min(k.MaxVersion, mv)
		if k.MinVersion > k.MaxVersion {
			continue
		}
		keys = append(keys, k)
	}
	r.ApiKeys = keys
	dst = append(dst, frame[:4]...)
	return r.AppendTo(dst), nil
}

// UnsupportedApiVersions returns the complete frame (size included) answering an
// ApiVersions request newer than the proxy's: UNSUPPORTED_VERSION in v0 form, listing the
// ApiVersions versions the proxy speaks, as a broker does.
func UnsupportedApiVersions(correlationID int32) []byte {
	r := kmsg.ApiVersionsResponse{Version: 0, ErrorCode: kerr.UnsupportedVersion.Code,
		ApiKeys: []kmsg.ApiVersionsResponseApiKey{{ApiKey: kmsg.ApiVersions.Int16(), MinVersion: 0, MaxVersion: MaxVersion(kmsg.ApiVersions.Int16())}}}
	b := make([]byte, 8, 32)
	binary.BigEndian.PutUint32(b[4:], uint32(correlationID))
	b = r.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// ApiVersionsError is a whole ApiVersions response frame, in the request's version (clamped
// to what the proxy speaks), carrying only an error code: the answer the proxy gives itself when
// there is no broker to forward a connection's first request to.
func ApiVersionsError(correlationID int32, version, code int16) []byte {
	r := kmsg.NewPtrApiVersionsResponse()
	r.SetVersion(min(max(version, 0), MaxVersion(kmsg.ApiVersions.Int16())))
	r.ErrorCode = code
	b := make([]byte, 8, 32)
	binary.BigEndian.PutUint32(b[4:], uint32(correlationID))
	b = r.AppendTo(b) // the ApiVersions response header is v0 in every version: no tags
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// ProduceAcks returns the acks field of a Produce request frame (the bytes after the size;
// only the start is needed). ok is false when the bytes given end before acks.
func ProduceAcks(version int16, frame []byte) (acks int16, ok bool, err error) {
	if len(frame) < 10 {
		return 0, false, nil
	}
	f := acksFinder{b: frame, off: 8} // past api key, version and correlation id
	flexible := Flexible(kmsg.Produce.Int16(), version)
	// Request header v1 and v2 both carry client_id as a classic nullable string.
	ok, err = f.skipNullableString("client id")
	if ok && flexible {
		ok, err = f.skipHeaderTags()
	}
	if ok && version >= 3 {
		if flexible {
			ok, err = f.skipCompactNullableString("transactional id")
		} else {
			ok, err = f.skipNullableString("transactional id")
		}
	}
	if !ok || err != nil {
		return 0, false, err
	}
	if f.off < 0 || f.off > len(frame)-2 {
		return 0, false, nil
	}
	return int16(binary.BigEndian.Uint16(frame[f.off:])), true, nil
}

// acksFinder moves through the fields of a Produce request that precede acks. Its skips
// report false when the bytes given end first. Every length is compared with the bytes left
// before off moves, so off stays within 0..len(b) whatever the lengths say (a uvarint length
// can be up to 2^64-1).
type acksFinder struct {
	b   []byte
	off int
}

// skipNullableString skips a classic nullable string: an int16 length, -1 for null.
func (f *acksFinder) skipNullableString(what string) (bool, error) {
	if f.off+2 > len(f.b) {
		return false, nil
	}
	l := int16(binary.BigEndian.Uint16(f.b[f.off:]))
	f.off += 2
	if l > 0 {
		if int(l) > len(f.b)-f.off {
			return false, nil
		}
		f.off += int(l)
	} else if l < -1 {
		return false, malformed("negative %s length", what)
	}
	return true, nil
}

// skipCompactNullableString skips a compact nullable string: a uvarint length+1, 0 for null.
func (f *acksFinder) skipCompactNullableString(what string) (bool, error) {
	if f.off >= len(f.b) {
		return false, nil
	}
	l, n := binary.Uvarint(f.b[f.off:])
	if n <= 0 {
		return false, malformed("bad %s length", what)
	}
	f.off += n
	if l > 0 {
		if l-1 > uint64(len(f.b)-f.off) {
			// Longer than the bytes given: acks lies beyond them, or nowhere.
			return false, nil
		}
		f.off += int(l - 1)
	}
	return true, nil
}

// skipHeaderTags skips the tagged fields of a flexible request header.
func (f *acksFinder) skipHeaderTags() (bool, error) {
	if f.off >= len(f.b) {
		return false, nil
	}
	n, err := skipTags(f.b[f.off:])
	if err != nil {
		// The tags may continue beyond the bytes given.
		if len(f.b) < 64<<10 {
			return false, nil
		}
		return false, err
	}
	f.off += n
	return true, nil
}
