package config

import (
	"slices"
	"testing"
)

func TestHostOverlaps(t *testing.T) {
	vc := func(bootstrap, brokers string) VirtualCluster {
		return VirtualCluster{BootstrapHost: bootstrap, BrokerPattern: brokers}
	}
	a := vc("a-bootstrap.example.com", "a-broker-$(nodeId).example.com")
	tests := map[string]struct {
		a, b VirtualCluster
		want []HostOverlap
	}{
		"distinct hosts":                     {a, vc("b-bootstrap.example.com", "b-broker-$(nodeId).example.com"), nil},
		"same bootstrap host, in any case":   {a, vc("A-Bootstrap.example.com", "b-broker-$(nodeId).example.com"), []HostOverlap{SameBootstrapHost}},
		"same broker pattern, in any case":   {a, vc("b-bootstrap.example.com", "A-Broker-$(nodeId).example.com"), []HostOverlap{SameBrokerPattern}},
		"b's bootstrap is one of a's broker": {a, vc("a-broker-3.example.com", "b-broker-$(nodeId).example.com"), []HostOverlap{BootstrapIsBroker}},
		"a's bootstrap is one of b's broker": {vc("x-7.example.com", "y-$(nodeId).example.com"), vc("b-bootstrap.example.com", "x-$(nodeId).example.com"), []HostOverlap{BrokerIsBootstrap}},
		"the same virtual cluster":           {a, a, []HostOverlap{SameBootstrapHost, SameBrokerPattern}},
	}
	for name, tc := range tests {
		if got := HostOverlaps(tc.a, tc.b); !slices.Equal(got, tc.want) {
			t.Errorf("%s: HostOverlaps = %v, want %v", name, got, tc.want)
		}
	}
}
