package server

import (
	"io"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// spliceChunk bounds one splice between write deadline refreshes, so a destination that stops
// reading fails within the write timeout, as a buffered write does.
const spliceChunk = 256 << 10

// splicer moves bytes from src to dst in the kernel when both are plain TCP (TCPConn.ReadFrom
// splices from a TCP source on Linux), counting them into counted; nil when either side is TLS
// or not TCP. ready, if set, says whether src's bytes may be taken from the socket now: not
// while bytes the proxy read earlier are still to be relayed.
func splicer(src, dst net.Conn, writeTimeout time.Duration, counted prometheus.Counter, ready func() bool) kafka.Splicer {
	from, ok := src.(*net.TCPConn)
	to, ok2 := dst.(*net.TCPConn)
	if !ok || !ok2 {
		return nil
	}
	return func(n int64) (bool, error) {
		if ready != nil && !ready() {
			return false, nil
		}
		for n > 0 {
			chunk := min(n, spliceChunk)
			if writeTimeout > 0 {
				if err := to.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
					return true, err
				}
			}
			moved, err := to.ReadFrom(io.LimitReader(from, chunk))
			counted.Add(float64(moved))
			n -= moved
			if err != nil {
				return true, err
			}
			if moved < chunk {
				return true, io.EOF
			}
		}
		return true, nil
	}
}
