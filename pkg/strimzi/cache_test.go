package strimzi

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPruneKafkaUserCachesTheParsedUser checks the KafkaUser cache transform: it holds what
// ParseKafkaUser makes of the whole object, or its error, with the cache's metadata; an object
// already transformed passes through; and a deep copy shares nothing that can change.
func TestPruneKafkaUserCachesTheParsedUser(t *testing.T) {
	whole := map[string]any{
		"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaUser",
		"metadata": map[string]any{"name": "app", "namespace": "ns", "generation": int64(3), "uid": "u1", "resourceVersion": "9",
			"labels": map[string]any{LabelCluster: "my"}},
		"spec": map[string]any{
			"authentication": map[string]any{"type": "scram-sha-512"},
			"authorization":  map[string]any{"type": "simple", "acls": []any{map[string]any{"operations": []any{"Read"}}}},
		},
		"status": map[string]any{
			"observedGeneration": int64(3), "username": "app", "secret": "app-creds",
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}},
		},
	}
	want, err := ParseKafkaUser(whole)
	if err != nil {
		t.Fatal(err)
	}
	obj, _ := PruneKafkaUser(&unstructured.Unstructured{Object: whole})
	cached, ok := obj.(*CachedKafkaUser)
	if !ok {
		t.Fatalf("cached a %T", obj)
	}
	if !reflect.DeepEqual(cached.User, want) || cached.Err != nil {
		t.Errorf("cached %+v, %v; want %+v", cached.User, cached.Err, want)
	}
	if cached.Namespace != "ns" || cached.Name != "app" || cached.ResourceVersion != "9" || cached.UID != "u1" || cached.Generation != 3 {
		t.Errorf("metadata %+v", cached.ObjectMeta)
	}
	if again, _ := PruneKafkaUser(cached); again != cached {
		t.Error("a cached user was transformed again")
	}
	cp := cached.DeepCopyObject().(*CachedKafkaUser)
	cp.User.Status.Conditions[0].Status = "False"
	if cached.User.Status.Conditions[0].Status != "True" {
		t.Error("a deep copy shares its conditions")
	}

	bad := map[string]any{"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaUser",
		"metadata": map[string]any{"name": "bad", "namespace": "ns"}, "spec": "not an object"}
	obj, _ = PruneKafkaUser(&unstructured.Unstructured{Object: bad})
	if c := obj.(*CachedKafkaUser); c.Err == nil || c.User != nil || c.Name != "bad" {
		t.Errorf("a user that does not parse is cached as %+v", c)
	}
}
