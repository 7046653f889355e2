package strimzi

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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

// CachedKafkaUser is what the KafkaUser cache holds: the user as ParseKafkaUser read it, or why
// it could not, and the metadata a cache needs. A big installation has a KafkaUser per
// application: parsed once when cached, a user takes a few hundred bytes instead of the
// kilobytes of its JSON maps, and no sync parses it again.
type CachedKafkaUser struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	User *KafkaUser // nil when Err is set
	Err  error      // from ParseKafkaUser
}

// DeepCopyObject makes CachedKafkaUser a runtime.Object, which a cache holds.
func (u *CachedKafkaUser) DeepCopyObject() runtime.Object {
	out := *u
	u.DeepCopyInto(&out.ObjectMeta)
	if u.User != nil {
		user := *u.User
		user.Status.Conditions = slices.Clone(u.User.Status.Conditions)
		out.User = &user
	}
	return &out
}

// PruneKafkaUser is the cache transform of KafkaUsers: it parses the user into a CachedKafkaUser.
// Anything else (an object already transformed) is returned as it is.
func PruneKafkaUser(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	user, err := ParseKafkaUser(u.Object)
	return &CachedKafkaUser{
		TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
		ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			ResourceVersion: u.GetResourceVersion(), Generation: u.GetGeneration(), DeletionTimestamp: u.GetDeletionTimestamp()},
		User: user, Err: err,
	}, nil
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
