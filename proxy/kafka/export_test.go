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
