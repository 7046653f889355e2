// Package freeport hands tests free loopback ports for servers they start in other processes
// (etcd, kube-apiserver, the proxy binary, Hydra).
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

var ports = struct {
	sync.Mutex
	given map[int]bool // ports this process handed out: two servers never get the same
}{given: map[int]bool{}}

// Port returns a free loopback port below the kernel's ephemeral range. A port the kernel
// picks for a listener on port 0 comes from that range, which is also where every process's
// outgoing connections get their local ports: between its release here and the server's bind,
// any connection on the machine could take it (an etcd start once failed so, with "address
// already in use"). Below the range only a listener that chose the same port can, and the port
// is picked at random among thousands and checked free. A server that does fail to bind shows
// as a start-up failure, not a wrong result.
func Port() int {
	ports.Lock()
	defer ports.Unlock()
	lo, hi := belowEphemeral()
	for range 200 {
		p := lo + rand.IntN(hi-lo)
		if !ports.given[p] && free(p) {
			ports.given[p] = true
			return p
		}
	}
	return kernelPort()
}

// belowEphemeral is the range Port picks from: up to 12,000 ports below the start of
// net.ipv4.ip_local_port_range (32768 by default), never below 10,000.
func belowEphemeral() (lo, hi int) {
	hi = 32768
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 11_000 {
				hi = v
			}
		}
	}
	return max(10_000, hi-12_000), hi
}

func free(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// kernelPort is a port the kernel picks, when no port below its ephemeral range was free.
func kernelPort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("no free loopback port: %v", err))
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Ports returns n distinct free loopback ports, as Port does.
func Ports(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = Port()
	}
	return out
}
