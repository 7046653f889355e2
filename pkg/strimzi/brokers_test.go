package strimzi

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestPruneKeepsWhatTheParsersRead(t *testing.T) {
	kafka := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kafka.strimzi.io/v1", "kind": "Kafka",
		"metadata": map[string]any{"name": "k", "namespace": "ns", "generation": int64(2), "annotations": map[string]any{"big": "x", AnnotationStretchMode: "enabled"}},
		"spec": map[string]any{"kafka": map[string]any{
			"config":    map[string]any{"big": "x"},
			"replicas":  int64(3),
			"listeners": []any{map[string]any{"name": "plain", "port": int64(9092), "type": "internal", "tls": false}},
		}},
		"status": map[string]any{"observedGeneration": int64(2), "listeners": []any{map[string]any{"name": "plain", "bootstrapServers": "b:9092"}}},
	}}
	pruned, _ := PruneKafka(kafka)
	u := pruned.(*unstructured.Unstructured)
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "kafka", "config"); found {
		t.Error("spec.kafka.config kept")
	}
	if a := u.GetAnnotations(); len(a) != 1 {
		t.Errorf("annotations after pruning: %v, want only %s", a, AnnotationStretchMode)
	}
	k, err := ParseKafka(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	if k.Name != "k" || k.Namespace != "ns" || k.Generation != 2 || k.Replicas != 3 || !k.Stretch || len(k.Listeners) != 1 || len(k.Status.Listeners) != 1 {
		t.Errorf("parsed after pruning: %+v", k)
	}

	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kafka.strimzi.io/v1", "kind": "KafkaNodePool",
		"metadata": map[string]any{"name": "broker", "namespace": "ns", "labels": map[string]any{LabelCluster: "k", "other": "x"}},
		"spec": map[string]any{"roles": []any{"broker"}, "replicas": int64(3), "storage": map[string]any{"type": "ephemeral"},
			"crossClusterTechnology": map[string]any{"technology": "submariner", "configuration": map[string]any{"submarinerClusterId": "cluster1"}}},
		"status": map[string]any{"nodeIds": []any{int64(0), int64(1), int64(2)}, "conditions": []any{}},
	}}
	pruned, _ = PruneKafkaNodePool(pool)
	u = pruned.(*unstructured.Unstructured)
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "storage"); found {
		t.Error("spec.storage kept")
	}
	if l := u.GetLabels(); len(l) != 1 {
		t.Errorf("labels after pruning: %v, want only %s", l, LabelCluster)
	}
	p, err := ParseKafkaNodePool(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	want := &KafkaNodePool{Namespace: "ns", Name: "broker", Cluster: "k", Roles: []string{"broker"}, NodeIDs: []int32{0, 1, 2}, SubmarinerClusterID: "cluster1"}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("parsed after pruning: %+v, want %+v", p, want)
	}
}

func TestParseKafkaNodePoolRefusesBadNodeIDs(t *testing.T) {
	for name, ids := range map[string][]any{
		"negative": {int64(-1)},
		"too big":  {int64(1) << 31},
		"fraction": {1.5},
		"string":   {"0"},
	} {
		obj := map[string]any{"metadata": map[string]any{"name": "p"}, "status": map[string]any{"nodeIds": ids}}
		if _, err := ParseKafkaNodePool(obj); err == nil {
			t.Errorf("%s: nodeIds %v accepted", name, ids)
		}
	}
}

func TestStretchFields(t *testing.T) {
	for value, want := range map[string]bool{"enabled": true, "disabled": false, "": false} {
		k, err := ParseKafka(map[string]any{"metadata": map[string]any{"name": "k", "annotations": map[string]any{AnnotationStretchMode: value}}})
		if err != nil || k.Stretch != want {
			t.Errorf("stretch-mode %q: Stretch %v, %v; want %v", value, k != nil && k.Stretch, err, want)
		}
	}
	pool := func(tech, id string) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": "p", "namespace": "ns", "labels": map[string]any{LabelCluster: "k"}},
			"spec": map[string]any{"crossClusterTechnology": map[string]any{"technology": tech, "configuration": map[string]any{"submarinerClusterId": id}}}}
	}
	if _, err := ParseKafkaNodePool(pool("submariner", "Not_A_Label")); err == nil {
		t.Error("a cluster id that is no DNS label accepted")
	}
	var pools []*KafkaNodePool
	for _, obj := range []map[string]any{pool("submariner", "c2"), pool("Submariner", "c1"), pool("submariner", "c2"), pool("skupper", "c3")} {
		p, err := ParseKafkaNodePool(obj)
		if err != nil {
			t.Fatal(err)
		}
		pools = append(pools, p)
	}
	if got := SubmarinerClusterIDs(&Kafka{Namespace: "ns", Name: "k"}, pools); !reflect.DeepEqual(got, []string{"c1", "c2"}) {
		t.Errorf("cluster ids %v, want [c1 c2]", got)
	}
}

func TestBrokers(t *testing.T) {
	k := &Kafka{Namespace: "ns", Name: "my-cluster", Replicas: 2}
	pools := []*KafkaNodePool{
		{Namespace: "ns", Name: "controller", Cluster: "my-cluster", Roles: []string{"controller"}, NodeIDs: []int32{0, 1, 2}},
		{Namespace: "ns", Name: "broker", Cluster: "my-cluster", Roles: []string{"broker"}, NodeIDs: []int32{10, 3}},
		{Namespace: "ns", Name: "mixed", Cluster: "my-cluster", Roles: []string{"controller", "broker"}, NodeIDs: []int32{100}},
		{Namespace: "other", Name: "broker", Cluster: "my-cluster", Roles: []string{"broker"}, NodeIDs: []int32{7}},
		{Namespace: "ns", Name: "broker2", Cluster: "another", Roles: []string{"broker"}, NodeIDs: []int32{8}},
	}
	got := Brokers(k, pools)
	want := []Broker{{ID: 3, Component: "my-cluster-broker"}, {ID: 10, Component: "my-cluster-broker"}, {ID: 100, Component: "my-cluster-mixed"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with node pools: %v, want %v", got, want)
	}
	got = Brokers(k, pools[3:])
	want = []Broker{{ID: 0, Component: "my-cluster-kafka"}, {ID: 1, Component: "my-cluster-kafka"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("without node pools of its own: %v, want %v", got, want)
	}
	// A cluster whose pools are all controllers has no brokers yet, not replicas-many.
	if got := Brokers(k, pools[:1]); len(got) != 0 {
		t.Errorf("controller-only pools: %v, want none", got)
	}
}

func TestBrokerAndBootstrapHosts(t *testing.T) {
	k := &Kafka{Namespace: "kafka", Name: "my-cluster"}
	b := Broker{ID: 3, Component: "my-cluster-pool-a"}
	for _, tc := range []struct {
		l                         Listener
		wantBootstrap, wantBroker string
	}{
		{Listener{Name: "tls", Port: 9093, Type: ListenerInternal},
			"my-cluster-kafka-bootstrap.kafka.svc", "my-cluster-pool-a-3.my-cluster-kafka-brokers.kafka.svc"},
		{Listener{Name: "encrypted2", Port: 9093, Type: ListenerService},
			"my-cluster-kafka-bootstrap.kafka.svc", "my-cluster-pool-a-3.my-cluster-kafka-brokers.kafka.svc"},
		{Listener{Name: "ci", Port: 9095, Type: ListenerClusterIP},
			"my-cluster-kafka-ci-bootstrap.kafka.svc", "my-cluster-pool-a-ci-3.kafka.svc"},
		{Listener{Name: "external", Port: 9094, Type: ListenerRoute},
			"my-cluster-kafka-external-bootstrap.kafka.svc", "my-cluster-pool-a-3.kafka.svc"},
		{Listener{Name: "external", Port: 9096, Type: ListenerLoadBalancer},
			"my-cluster-kafka-external-bootstrap.kafka.svc", "my-cluster-pool-a-external-3.kafka.svc"},
	} {
		if got := k.BootstrapHost(tc.l); got != tc.wantBootstrap {
			t.Errorf("%s bootstrap: %s, want %s", tc.l.Name, got, tc.wantBootstrap)
		}
		if got := k.BrokerHost(tc.l, b); got != tc.wantBroker {
			t.Errorf("%s broker: %s, want %s", tc.l.Name, got, tc.wantBroker)
		}
	}
}

// A stretch Kafka's internal listeners are reached by clusterset names: the exported bootstrap
// Service, and each broker as Strimzi's stretch mode advertises it, through its pool's cluster.
func TestStretchHosts(t *testing.T) {
	k := &Kafka{Namespace: "kafka", Name: "my-cluster", Stretch: true}
	internal := Listener{Name: "tls", Port: 9093, Type: ListenerInternal}
	if got, want := k.BootstrapHost(internal), "my-cluster-kafka-bootstrap.kafka.svc.clusterset.local"; got != want {
		t.Errorf("bootstrap %s, want %s", got, want)
	}
	b := Broker{ID: 0, Component: "my-cluster-broker", ClusterID: "cluster1"}
	if got, want := k.BrokerHost(internal, b), "my-cluster-broker-0.cluster1.my-cluster-kafka-brokers.kafka.svc.clusterset.local"; got != want {
		t.Errorf("broker %s, want %s", got, want)
	}
	lb := Listener{Name: "external", Port: 9096, Type: ListenerLoadBalancer}
	if got, want := k.BrokerHost(lb, b), "my-cluster-broker-external-0.kafka.svc"; got != want {
		t.Errorf("an outside listener's broker %s, want %s", got, want)
	}
}
