package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestPortIsOutsideTheEphemeralRange checks that the ports handed out are below the
// kernel's ephemeral range (where other processes' connections take their local ports),
// distinct, and bindable.
func TestPortIsOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := belowEphemeral()
	seen := map[int]bool{}
	for range 50 {
		p := Port()
		if p < lo || p >= hi {
			t.Fatalf("port %d outside [%d, %d)", p, lo, hi)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		_ = l.Close()
	}
}
