//go:build !linux

package server

import (
	"net"
	"time"
)

// setUserTimeout is Linux's TCP_USER_TIMEOUT; elsewhere only the write deadline applies.
func setUserTimeout(*net.TCPConn, time.Duration) {}
