package server

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// setUserTimeout makes the kernel abort a connection whose sent bytes stay unacknowledged for
// longer than d (TCP_USER_TIMEOUT), zero-window probes included. A write deadline cannot see
// bytes the kernel has already accepted: a client that stops reading while its receive window
// is closed leaves them in the proxy's send buffer, and neither side writes again.
func setUserTimeout(tc *net.TCPConn, d time.Duration) {
	raw, err := tc.SyscallConn()
	if err != nil || d <= 0 {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
}
