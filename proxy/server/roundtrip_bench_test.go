package server

import (
	"encoding/binary"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// BenchmarkConnRoundTrip sends Heartbeat requests one after another through one connection's
// relay (the server's: queue, response side, deadlines, metrics) between loopback TCP
// connections, to a broker that answers each at once: a small producer's round trip. Besides
// ns/op it reports the process's CPU per round trip, user and system, which other processes'
// load on the machine changes less than wall time: what the relay adds per request (client and
// broker goroutines are in the same process, the same in every version).
func BenchmarkConnRoundTrip(b *testing.B) {
	rig := newRelayRig(b, heartbeat(0))
	go echoBroker(rig.broker)
	in := make([]byte, len(heartbeatResponse(0)))
	if _, err := io.ReadFull(rig.client, in); err != nil {
		b.Fatal(err)
	}
	req := heartbeat(0)
	u0, s0 := cpuTimes()
	for i := 1; b.Loop(); i++ {
		binary.BigEndian.PutUint32(req[8:], uint32(i))
		if _, err := rig.client.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(rig.client, in); err != nil {
			b.Fatal(err)
		}
	}
	u1, s1 := cpuTimes()
	b.ReportMetric(float64((u1-u0).Nanoseconds())/float64(b.N), "user-ns/op")
	b.ReportMetric(float64((s1-s0).Nanoseconds())/float64(b.N), "sys-ns/op")
}

// echoBroker answers every request frame with a Heartbeat response of its correlation id.
func echoBroker(c net.Conn) {
	var size [4]byte
	body := make([]byte, 0, 256)
	for {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		body = body[:binary.BigEndian.Uint32(size[:])]
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		if _, err := c.Write(heartbeatResponse(int32(binary.BigEndian.Uint32(body[4:])))); err != nil {
			return
		}
	}
}

// cpuTimes is the process's user and system CPU time so far.
func cpuTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
