package controller

import (
	"encoding/json"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FinalizerPatch is the JSON merge patch that adds (want) or removes a finalizer of an object,
// nil when the object already is so. It carries the object's resourceVersion, so a concurrent
// change to the finalizers fails the patch (and the sync retries) instead of being lost.
func FinalizerPatch(obj metav1.Object, finalizer string, want bool) []byte {
	if slices.Contains(obj.GetFinalizers(), finalizer) == want {
		return nil
	}
	finalizers := slices.DeleteFunc(slices.Clone(obj.GetFinalizers()), func(f string) bool { return f == finalizer })
	if want {
		finalizers = append(finalizers, finalizer)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": obj.GetResourceVersion()}})
	return patch
}
