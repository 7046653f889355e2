package binding

import (
	"slices"
	"testing"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

func TestStretchBootstrap(t *testing.T) {
	internal := strimzi.Listener{Name: "tls", Type: strimzi.ListenerInternal}
	route := strimzi.Listener{Name: "route", Type: "route"}
	exported := func(names ...string) func(string) bool {
		return func(s string) bool { return slices.Contains(names, s) }
	}
	tests := []struct {
		name       string
		choice     Choice
		in         StretchInput
		bootstrap  string
		addressing string
		reason     string
	}{
		{name: "an exported bootstrap Service gets its clusterset name",
			choice:    Choice{Listener: internal, BootstrapServers: "c-kafka-bootstrap.kafka.svc:9093"},
			in:        StretchInput{ClusterIDs: []string{"cluster1", "cluster2"}, Exported: exported("c-kafka-bootstrap")},
			bootstrap: "c-kafka-bootstrap.kafka.svc.clusterset.local:9093", addressing: kafkav1beta2.AddressingServiceExport},
		{name: "without an export, one Submariner name per cluster id",
			choice:     Choice{Listener: internal, BootstrapServers: "c-kafka-bootstrap.kafka.svc.cluster.local:9093"},
			in:         StretchInput{ClusterIDs: []string{"cluster1", "cluster2"}, Exported: exported("other")},
			bootstrap:  "cluster1.c-kafka-bootstrap.kafka.svc.clusterset.local:9093,cluster2.c-kafka-bootstrap.kafka.svc.clusterset.local:9093",
			addressing: kafkav1beta2.AddressingPerCluster},
		{name: "an outside listener keeps its addresses",
			choice:    Choice{Listener: route, BootstrapServers: "c-route.apps.example.com:443"},
			in:        StretchInput{ClusterIDs: []string{"cluster1"}},
			bootstrap: "c-route.apps.example.com:443", addressing: kafkav1beta2.AddressingExternal},
		{name: "neither export nor cluster ids is refused",
			choice: Choice{Listener: internal, BootstrapServers: "c-kafka-bootstrap.kafka.svc:9093"},
			reason: ReasonStretchAddressUnknown},
		{name: "an address that is not a Service name is refused",
			choice: Choice{Listener: internal, BootstrapServers: "10.0.0.1:9093"},
			in:     StretchInput{ClusterIDs: []string{"cluster1"}},
			reason: ReasonStretchAddressUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, st, f := StretchBootstrap(tc.choice, tc.in)
			if tc.reason != "" {
				if f == nil || f.Reason != tc.reason {
					t.Fatalf("failure %v, want reason %s", f, tc.reason)
				}
				return
			}
			if f != nil {
				t.Fatalf("failure %v", f)
			}
			if got.BootstrapServers != tc.bootstrap || st.Addressing != tc.addressing {
				t.Errorf("got %q (%s), want %q (%s)", got.BootstrapServers, st.Addressing, tc.bootstrap, tc.addressing)
			}
			if !slices.Equal(st.Clusters, tc.in.ClusterIDs) {
				t.Errorf("clusters %v, want %v", st.Clusters, tc.in.ClusterIDs)
			}
		})
	}
}
