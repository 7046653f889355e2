package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kafkalink/kafkalink/proxy/config"
)

// route finds a host's virtual cluster among many by index, as the linear rule it replaced did:
// bootstrap hosts and broker hosts case-insensitively, trailing dot or not, canonical node ids
// only, digits elsewhere in the host not taken for the node id.
func TestSnapshotRoute(t *testing.T) {
	s := &snapshot{}
	for i := range 1000 {
		s.routes = append(s.routes, &vcRoute{cfg: config.VirtualCluster{
			Name:          fmt.Sprintf("vc-%04d", i),
			BootstrapHost: fmt.Sprintf("c%04d-bootstrap.ns2.svc.cluster.local", i),
			BrokerPattern: fmt.Sprintf("c%04d-broker-$(nodeId).ns2.svc.cluster.local", i),
		}})
	}
	s.index()
	for _, tc := range []struct {
		host string
		vc   string
		id   int32
		ok   bool
	}{
		{"c0000-bootstrap.ns2.svc.cluster.local", "vc-0000", -1, true},
		{"C0999-Bootstrap.NS2.svc.cluster.local.", "vc-0999", -1, true},
		{"c0512-broker-7.ns2.svc.cluster.local", "vc-0512", 7, true},
		{"c0512-broker-2147483647.ns2.svc.cluster.local", "vc-0512", 2147483647, true},
		{"c0512-BROKER-10.ns2.svc.cluster.local.", "vc-0512", 10, true},
		{"c0512-broker-07.ns2.svc.cluster.local", "", 0, false},
		{"c0512-broker-2147483648.ns2.svc.cluster.local", "", 0, false},
		{"c0512-broker-.ns2.svc.cluster.local", "", 0, false},
		{"c1000-broker-1.ns2.svc.cluster.local", "", 0, false},
		{"c0512-broker-1.ns3.svc.cluster.local", "", 0, false},
		{"", "", 0, false},
	} {
		r, id, ok := s.route(tc.host)
		if ok != tc.ok || (ok && (r.cfg.Name != tc.vc || id != tc.id)) {
			name := ""
			if r != nil {
				name = r.cfg.Name
			}
			t.Errorf("route(%q) = %s %d %v, want %s %d %v", tc.host, name, id, ok, tc.vc, tc.id, tc.ok)
		}
	}
}

// A client's SNI can be 64 KiB; one of digit runs is refused without building a candidate per
// run (32,768 strings of 64 KiB each).
func TestSnapshotRouteHostileSNI(t *testing.T) {
	s := &snapshot{routes: []*vcRoute{{cfg: config.VirtualCluster{BootstrapHost: "b.example.com", BrokerPattern: "b-$(nodeId).example.com"}}}}
	s.index()
	host := strings.Repeat("1a", 32<<10) + ".example.com"
	allocs := testing.AllocsPerRun(3, func() {
		if _, _, ok := s.route(host); ok {
			t.Error("routed")
		}
	})
	if allocs > 1 {
		t.Errorf("%.0f allocations for one hostile SNI", allocs)
	}
}

func BenchmarkSnapshotRoute1000(b *testing.B) {
	s := &snapshot{}
	for i := range 1000 {
		s.routes = append(s.routes, &vcRoute{cfg: config.VirtualCluster{
			BootstrapHost: fmt.Sprintf("c%04d-bootstrap.ns.svc.cluster.local", i),
			BrokerPattern: fmt.Sprintf("c%04d-broker-$(nodeId).ns.svc.cluster.local", i),
		}})
	}
	s.index()
	for b.Loop() {
		if _, _, ok := s.route("c0999-broker-3.ns.svc.cluster.local"); !ok {
			b.Fatal("not routed")
		}
	}
}
