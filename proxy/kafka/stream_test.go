package kafka

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func sized(frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}

func streamFetchBytes(t testing.TB, version int16, in []byte, m AddressMap) ([]byte, int, error) {
	out, n, _, err := streamFetchDropped(version, in, m)
	return out, n, err
}

func streamFetchDropped(version int16, in []byte, m AddressMap) ([]byte, int, bool, error) {
	var out bytes.Buffer
	n, dropped, err := StreamFetch(bufio.NewReaderSize(bytes.NewReader(in), 16), &out, version, int64(len(in)), m)
	return out.Bytes(), n, dropped, err
}

func TestStreamFetch(t *testing.T) {
	long := func(id int32, _ string, _ int32) (string, int32) {
		return strings.Repeat("x", 200) + ".example.com", 9292
	}
	short := func(id int32, _ string, _ int32) (string, int32) { return "b1.example", 9292 }
	tests := map[string]struct {
		brokers   []kmsg.FetchResponseBroker
		m         AddressMap
		wantHosts []string
	}{
		"a response without node endpoints is copied byte for byte": {m: testMap},
		"node endpoints that fit are rewritten and padded": {
			brokers: []kmsg.FetchResponseBroker{{NodeID: 1, Host: "upstream-broker-1.kafka.svc.cluster.local", Port: 9093}},
			m:       short, wantHosts: []string{"b1.example"},
		},
		"node endpoints that do not fit are dropped, never leaked": {
			brokers: []kmsg.FetchResponseBroker{{NodeID: 1, Host: "10.0.0.2", Port: 9093}},
			m:       long,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for v := int16(16); v <= MaxVersion(kmsg.Fetch.Int16()); v++ {
				r := sampleResponse(kmsg.Fetch.Int16(), v).(*kmsg.FetchResponse)
				r.Brokers = tc.brokers
				in := sized(frameResponse(r))
				out, _, dropped, err := streamFetchDropped(v, in, tc.m)
				if err != nil {
					t.Fatalf("v%d: %v", v, err)
				}
				if wantDropped := tc.brokers != nil && tc.wantHosts == nil; dropped != wantDropped {
					t.Fatalf("v%d: dropped %v, want %v (the proxy counts drops)", v, dropped, wantDropped)
				}
				if len(out) != len(in) {
					t.Fatalf("v%d: %d bytes out, %d in", v, len(out), len(in))
				}
				if tc.brokers == nil && !bytes.Equal(out, in) {
					t.Fatalf("v%d: bytes changed", v)
				}
				got := kmsg.NewPtrFetchResponse()
				got.SetVersion(v)
				if err := got.ReadFrom(out[4+5:]); err != nil {
					t.Fatalf("v%d: output does not decode: %v", v, err)
				}
				var hosts []string
				for _, b := range got.Brokers {
					hosts = append(hosts, b.Host)
				}
				if strings.Join(hosts, ",") != strings.Join(tc.wantHosts, ",") {
					t.Fatalf("v%d: hosts %v, want %v", v, hosts, tc.wantHosts)
				}
				if string(got.Topics[0].Partitions[0].RecordBatches) != "opaque record batches" {
					t.Fatalf("v%d: records changed", v)
				}
			}
		})
	}
}

// TestStreamFetchMatchesBufferedRewrite checks that streaming and the buffered rewrite agree
// on the addresses whenever the rewritten endpoints fit.
func TestStreamFetchMatchesBufferedRewrite(t *testing.T) {
	r := sampleResponse(kmsg.Fetch.Int16(), 16).(*kmsg.FetchResponse)
	r.Brokers[0].Host = strings.Repeat("h", 100)
	in := frameResponse(r)
	buffered, _, err := RewriteResponse(nil, kmsg.Fetch.Int16(), 16, in, testMap)
	if err != nil {
		t.Fatal(err)
	}
	streamed, n, err := streamFetchBytes(t, 16, sized(in), testMap)
	if err != nil || n != 1 {
		t.Fatalf("%d %v", n, err)
	}
	if a, b := addresses(t, kmsg.Fetch.Int16(), 16, buffered), addresses(t, kmsg.Fetch.Int16(), 16, streamed[4:]); strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatalf("buffered %v, streamed %v", a, b)
	}
}

func FuzzStreamFetch(f *testing.F) {
	for v := int16(12); v <= MaxVersion(kmsg.Fetch.Int16()); v++ {
		f.Add(v, sized(frameResponse(sampleResponse(kmsg.Fetch.Int16(), max(v, 16)))))
	}
	f.Fuzz(func(t *testing.T, version int16, frame []byte) {
		var out bytes.Buffer
		_, _, err := StreamFetch(bufio.NewReaderSize(bytes.NewReader(frame), 16), &out, version, int64(len(frame)), testMap)
		if err == nil && out.Len() != len(frame) {
			t.Fatalf("%d bytes out for a %d-byte frame", out.Len(), len(frame))
		}
	})
}

// TestPassThrough: exact counts in every regime (within the reader's buffer, across it, and
// larger than a pooled chunk), what follows left unread, and io.EOF when the source ends first.
func TestPassThrough(t *testing.T) {
	data := make([]byte, 3*passChunk+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, n := range []int64{0, 1, 100, 70 << 10, passChunk, 3*passChunk + 12000} {
		src := bufio.NewReaderSize(bytes.NewReader(data), 64<<10)
		if _, err := src.Peek(10); err != nil { // some bytes already buffered, as in the relay
			t.Fatal(err)
		}
		var out bytes.Buffer
		dst := bufio.NewWriterSize(&out, 64<<10)
		if err := passThrough(dst, src, n); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if err := dst.Flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), data[:n]) {
			t.Fatalf("n=%d: copied %d bytes, not the first %d", n, out.Len(), n)
		}
		next, err := src.ReadByte()
		if err != nil || next != data[n] {
			t.Fatalf("n=%d: the byte after the run is %d (%v), want %d", n, next, err, data[n])
		}
	}
	src := bufio.NewReader(bytes.NewReader(data[:1000]))
	if err := passThrough(io.Discard, src, 1001); !errors.Is(err, io.EOF) {
		t.Fatalf("a source one byte short gave %v, want io.EOF", err)
	}
}
