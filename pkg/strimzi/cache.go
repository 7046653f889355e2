package strimzi

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// GVRs are a Strimzi resource in the versions kafkalink reads, newest first: an informer watches
// the first the cluster serves.
func GVRs(resource string) []schema.GroupVersionResource {
	return []schema.GroupVersionResource{
		{Group: Group, Version: VersionV1, Resource: resource},
		{Group: Group, Version: VersionV1beta2, Resource: resource},
	}
}

// Cache transforms: each keeps only what its Parse function reads, so an informer holds a small
// part of objects that can be large (a Kafka's spec carries the whole broker configuration, a
// KafkaUser its ACLs and quotas, and there may be thousands of users).
func PruneKafka(obj any) (any, error) {
	return prune(obj, [][]string{{"metadata", "annotations", AnnotationStretchMode},
		{"spec", "kafka", "listeners"}, {"spec", "kafka", "replicas"}, {"status"}}), nil
}

// PruneKafkaUser is the cache transform of KafkaUsers (see PruneKafka): what ParseKafkaUser
// reads and no more, since a big installation has a KafkaUser per application. Of conditions
// it keeps the fields Condition has (no timestamps).
func PruneKafkaUser(obj any) (any, error) {
	out := prune(obj, [][]string{{"spec", "authentication", "type"}, {"status", "observedGeneration"},
		{"status", "username"}, {"status", "secret"}, {"status", "conditions"}})
	if u, ok := out.(*unstructured.Unstructured); ok {
		trimConditions(u.Object)
	}
	return out, nil
}

// trimConditions keeps of each status condition the fields that Condition holds.
func trimConditions(obj map[string]any) {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, "status", "conditions")
	conds, _ := v.([]any)
	for i, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		kept := make(map[string]any, 4)
		for _, k := range []string{"type", "status", "reason", "message"} {
			if v, ok := m[k]; ok {
				kept[k] = v
			}
		}
		conds[i] = kept
	}
}

// PruneKafkaNodePool is the cache transform of KafkaNodePools (see PruneKafka).
func PruneKafkaNodePool(obj any) (any, error) {
	return prune(obj, [][]string{{"metadata", "labels", LabelCluster}, {"spec", "roles"},
		{"spec", "crossClusterTechnology"}, {"status", "nodeIds"}}), nil
}

// prune keeps an object's identity and the fields at the given paths.
func prune(obj any, keep [][]string) any {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj
	}
	out := map[string]any{
		"apiVersion": u.Object["apiVersion"],
		"kind":       u.Object["kind"],
	}
	meta := map[string]any{}
	if m, ok := u.Object["metadata"].(map[string]any); ok {
		for _, k := range []string{"name", "namespace", "uid", "resourceVersion", "generation", "deletionTimestamp"} {
			if v, ok := m[k]; ok {
				meta[k] = v
			}
		}
	}
	out["metadata"] = meta
	for _, path := range keep {
		v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...)
		if err != nil || !found {
			continue
		}
		_ = unstructured.SetNestedField(out, v, path...)
	}
	u.Object = out
	return u
}

// CachedNodePools parses the KafkaNodePools a cache (of PruneKafkaNodePool objects, indexed by
// namespace) holds in the given namespaces; one that does not parse is left out, so its Kafka's
// brokers come from the others. A nil cache holds none.
func CachedNodePools(idx cache.Indexer, namespaces map[string]bool) []*KafkaNodePool {
	if idx == nil {
		return nil
	}
	var pools []*KafkaNodePool
	for ns := range namespaces {
		objs, _ := idx.ByIndex(cache.NamespaceIndex, ns)
		for _, o := range objs {
			if u, ok := o.(*unstructured.Unstructured); ok {
				if p, err := ParseKafkaNodePool(u.Object); err == nil {
					pools = append(pools, p)
				}
			}
		}
	}
	return pools
}
