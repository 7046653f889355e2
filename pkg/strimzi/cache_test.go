package strimzi

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPruneKafkaUserKeepsWhatIsParsed checks the KafkaUser cache transform: the pruned object
// parses to the same KafkaUser as the whole one, and what is not read (ACLs, quotas, labels,
// condition timestamps) is gone.
func TestPruneKafkaUserKeepsWhatIsParsed(t *testing.T) {
	whole := map[string]any{
		"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaUser",
		"metadata": map[string]any{"name": "app", "namespace": "ns", "generation": int64(3), "uid": "u1", "resourceVersion": "9",
			"labels": map[string]any{LabelCluster: "my"}, "annotations": map[string]any{"a": "b"}},
		"spec": map[string]any{
			"authentication": map[string]any{"type": "scram-sha-512", "password": map[string]any{"valueFrom": map[string]any{}}},
			"authorization":  map[string]any{"type": "simple", "acls": []any{map[string]any{"operations": []any{"Read"}}}},
			"quotas":         map[string]any{"producerByteRate": int64(1024)},
		},
		"status": map[string]any{
			"observedGeneration": int64(3), "username": "app", "secret": "app",
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "R", "message": "m",
				"lastTransitionTime": "2026-01-01T00:00:00Z"}},
		},
	}
	want, err := ParseKafkaUser(whole)
	if err != nil {
		t.Fatal(err)
	}
	pruned, err := PruneKafkaUser(&unstructured.Unstructured{Object: whole})
	if err != nil {
		t.Fatal(err)
	}
	obj := pruned.(*unstructured.Unstructured).Object
	got, err := ParseKafkaUser(obj)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pruned user parses to %+v, want %+v", got, want)
	}
	for _, path := range [][]string{{"spec", "authorization"}, {"spec", "quotas"}, {"spec", "authentication", "password"},
		{"metadata", "labels"}, {"metadata", "annotations"}} {
		if _, found, _ := unstructured.NestedFieldNoCopy(obj, path...); found {
			t.Errorf("%v kept", path)
		}
	}
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	if len(conds) != 1 || len(conds[0].(map[string]any)) != 4 {
		t.Errorf("conditions kept as %v, want the four fields Condition has", conds)
	}
}
