package kafka

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkCopyFetchResponse relays one Fetch v16 response of each size, with and without
// NodeEndpoints, through CopyResponses as the proxy does: buffered and rewritten whole up to
// FetchBufferLimit, streamed above it. "streamed" forces streaming for every size, the
// behaviour before FetchBufferLimit, for comparison.
func BenchmarkCopyFetchResponse(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10, 250 << 10, 1 << 20, 8 << 20} {
		for _, eps := range []bool{false, true} {
			r := sampleResponse(kmsg.Fetch.Int16(), 16).(*kmsg.FetchResponse)
			r.Topics[0].Partitions[0].RecordBatches = make([]byte, size)
			if !eps {
				r.Brokers = nil
			}
			frame := sized(frameResponse(r))
			for _, mode := range []string{"proxy", "streamed"} {
				b.Run(fmt.Sprintf("%dKiB/endpoints=%v/%s", size>>10, eps, mode), func(b *testing.B) {
					if mode == "streamed" {
						defer func(v int64) { FetchBufferLimit = v }(FetchBufferLimit)
						FetchBufferLimit = 0
					}
					src := bytes.NewReader(frame)
					b.SetBytes(int64(len(frame)))
					b.ReportAllocs()
					for b.Loop() {
						src.Reset(frame)
						pending := make(chan Pending, 1)
						pending <- Pending{Key: kmsg.Fetch.Int16(), Version: 16, CorrelationID: 7}
						close(pending)
						if err := CopyResponses(src, io.Discard, pending, RelayOptions{MaxFrame: 64 << 20, Addresses: testMap}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
