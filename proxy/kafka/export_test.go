package kafka

import (
	"bufio"
	"io"
)

// StreamFilteredFetch is streamFilteredFetch for the benchmarks of package kafka_test, which
// build real filter chains (package filter imports this one).
func StreamFilteredFetch(src *bufio.Reader, dst io.Writer, version int16, total int64, pf PartitionFilter) error {
	_, err := streamFilteredFetch(mover{src: src, dst: dst}, version, total, nil, pf)
	return err
}

// CopyResponsesWhole is CopyResponses with the connection's large filtered Fetch responses read
// whole from the first, as after one that was padded by more than 1/wholeFetchPadding, for the benchmarks.
func CopyResponsesWhole(broker io.Reader, client io.Writer, pending <-chan Pending, opts RelayOptions) error {
	rr := NewResponseRelay(broker, client, opts)
	rr.r.wholeFetches = true
	return rr.relayAll(pending)
}
