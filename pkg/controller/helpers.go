package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Unwrap returns the object of a deletion tombstone (cache.DeletedFinalStateUnknown), and any
// other object as it is. Event handlers' delete events may carry either.
func Unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// MetaOf reads the metadata of an informer object or a deletion tombstone.
func MetaOf(obj any) (metav1.Object, bool) {
	m, err := meta.Accessor(Unwrap(obj))
	if err != nil {
		return nil, false
	}
	return m, true
}

// KeyOf is the namespace/name of an informer object or tombstone, as a one-element list (none
// when it has no metadata): a MapFunc for an object's own key.
func KeyOf(obj any) []cache.ObjectName {
	m, ok := MetaOf(obj)
	if !ok {
		return nil
	}
	return []cache.ObjectName{cache.NewObjectName(m.GetNamespace(), m.GetName())}
}

// ByIndex returns the objects of type T an indexer holds under one index value; objects of other
// types are skipped, and an unknown index gives none.
func ByIndex[T any](idx cache.Indexer, index, value string) []T {
	if idx == nil {
		return nil
	}
	objs, err := idx.ByIndex(index, value)
	if err != nil {
		return nil
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// HasIndexed reports whether an indexer holds any object under one index value.
func HasIndexed(idx cache.Indexer, index, value string) bool {
	if idx == nil {
		return false
	}
	keys, err := idx.IndexKeys(index, value)
	return err == nil && len(keys) > 0
}

// IndexName is the name of an index a controller adds to a shared informer: the controller's
// queue name, a colon, and what the index values are, such as "gateway:secret". The queue name
// keeps the indexes of controllers that share an informer apart.
func IndexName(queue, values string) string { return queue + ":" + values }

// KeysByIndex returns the namespace/name keys of the objects an indexer holds under one value.
func KeysByIndex(idx cache.Indexer, index, value string) []cache.ObjectName {
	objs := ByIndex[metav1.Object](idx, index, value)
	keys := make([]cache.ObjectName, 0, len(objs))
	for _, m := range objs {
		keys = append(keys, cache.NewObjectName(m.GetNamespace(), m.GetName()))
	}
	return keys
}

// MergeConditions returns desired with each condition's lastTransitionTime taken from the old
// condition of the same type when its status is unchanged, and now otherwise, as
// meta.SetStatusCondition does. Conditions not in desired are dropped.
func MergeConditions(old, desired []metav1.Condition, now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(desired))
	for _, d := range desired {
		d.LastTransitionTime = now
		if prev := meta.FindStatusCondition(old, d.Type); prev != nil && prev.Status == d.Status {
			d.LastTransitionTime = prev.LastTransitionTime
		}
		out = append(out, d)
	}
	return out
}
