package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFinalizerPatch(t *testing.T) {
	obj := &metav1.ObjectMeta{ResourceVersion: "7", Finalizers: []string{"other"}}
	if got := string(FinalizerPatch(obj, "mine", true)); got != `{"metadata":{"finalizers":["other","mine"],"resourceVersion":"7"}}` {
		t.Errorf("add: %s", got)
	}
	if p := FinalizerPatch(obj, "mine", false); p != nil {
		t.Errorf("removing an absent finalizer patches: %s", p)
	}
	obj.Finalizers = []string{"mine", "other"}
	if got := string(FinalizerPatch(obj, "mine", false)); got != `{"metadata":{"finalizers":["other"],"resourceVersion":"7"}}` {
		t.Errorf("remove: %s", got)
	}
	if p := FinalizerPatch(obj, "mine", true); p != nil {
		t.Errorf("adding a present finalizer patches: %s", p)
	}
}
