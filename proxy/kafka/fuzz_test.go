package kafka

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzCopyRequests feeds arbitrary client bytes through the request framing: it must never
// panic, and it must only forward whole frames within the size limit.
func FuzzCopyRequests(f *testing.F) {
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	for _, r := range []kmsg.Request{kmsg.NewPtrMetadataRequest(), kmsg.NewPtrProduceRequest(), kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrFetchRequest()} {
		for _, v := range []int16{0, 3, 9, 11} {
			if v <= r.MaxVersion() {
				r.SetVersion(v)
				f.Add(fm.AppendRequest(nil, r, 5))
			}
		}
	}
	f.Add([]byte{0, 0, 0, 8, 0, 18, 0, 99, 0, 0, 0, 1})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		pending := make(chan Pending, len(data)/8+1)
		var out bytes.Buffer
		_ = CopyRequests(bytes.NewReader(data), &out, pending, RelayOptions{MaxFrame: 1 << 16})
		for range pending {
		}
		// Whatever was forwarded is a sequence of frames within the limit; only the last may
		// be cut short, when the client stream itself ends mid-frame, and then it holds the
		// input's bytes (how much of the cut frame went out before the end is not promised).
		b := out.Bytes()
		for len(b) >= 4 {
			n := int(binary.BigEndian.Uint32(b)) + 4
			if n > 1<<16+4 || n < 12 {
				t.Fatalf("frame of %d bytes forwarded", n)
			}
			if n > len(b) {
				if !bytes.Contains(data, b) {
					t.Fatalf("a cut frame holds bytes that are not the input's")
				}
				break
			}
			b = b[n:]
		}
	})
}

// FuzzCopyResponses feeds arbitrary broker bytes through the response path, decoding them
// as the response to the given API key and version.
func FuzzCopyResponses(f *testing.F) {
	for _, key := range []int16{kmsg.Metadata.Int16(), kmsg.FindCoordinator.Int16(), kmsg.Fetch.Int16(), kmsg.ApiVersions.Int16(), kmsg.DescribeCluster.Int16()} {
		v := MaxVersion(key)
		var fr []byte
		if key == kmsg.ApiVersions.Int16() {
			r := kmsg.NewPtrApiVersionsResponse()
			r.SetVersion(v)
			fr = frameResponse(r)
		} else {
			fr = frameResponse(sampleResponse(key, v))
		}
		f.Add(key, v, append(binary.BigEndian.AppendUint32(nil, uint32(len(fr))), fr...))
	}
	f.Fuzz(func(t *testing.T, key, version int16, data []byte) {
		pending := make(chan Pending, 4)
		for i := 0; i < 3; i++ {
			pending <- Pending{Key: key, Version: version, CorrelationID: 7}
		}
		close(pending)
		_ = CopyResponses(bytes.NewReader(data), io.Discard, pending, RelayOptions{MaxFrame: 1 << 16, Addresses: testMap})
	})
}

// FuzzRewriteResponse decodes arbitrary bytes as every rewritten response: no panic, and
// any output decodes again.
func FuzzRewriteResponse(f *testing.F) {
	for key, first := range firstRewritten {
		f.Add(key, first, frameResponse(sampleResponse(key, first)))
		f.Add(key, MaxVersion(key), frameResponse(sampleResponse(key, MaxVersion(key))))
	}
	for _, key := range []int16{kmsg.DescribeConfigs.Int16(), kmsg.DescribeQuorum.Int16(), kmsg.Vote.Int16(), kmsg.UpdateRaftVoter.Int16()} {
		f.Add(key, MaxVersion(key), frameResponse(redactSample(key, MaxVersion(key))))
	}
	f.Fuzz(func(t *testing.T, key, version int16, frame []byte) {
		out, _, err := RewriteResponse(nil, key, version, frame, testMap)
		if err != nil || out == nil {
			return
		}
		if _, _, err := RewriteResponse(nil, key, version, out, testMap); err != nil {
			t.Fatalf("rewritten output does not decode: %v", err)
		}
	})
}

// FuzzRewriteApiVersions decodes arbitrary bytes as an ApiVersions response.
func FuzzRewriteApiVersions(f *testing.F) {
	for v := int16(0); v <= MaxVersion(kmsg.ApiVersions.Int16()); v++ {
		r := kmsg.NewPtrApiVersionsResponse()
		r.SetVersion(v)
		r.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: kmsg.Produce.Int16(), MaxVersion: 99}}
		f.Add(v, frameResponse(r))
	}
	f.Fuzz(func(t *testing.T, version int16, frame []byte) {
		_, _ = RewriteApiVersions(nil, version, frame)
	})
}
