package bindingcontroller

import (
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
)

func TestStaleTemplateKeys(t *testing.T) {
	entry := func(manager, subresource, raw string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Subresource: subresource, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(raw)}
	}
	meta := binding.SecretMeta{Labels: map[string]string{"kafkalink.io/binding": "kafkaconnection", "tier": "gold"},
		Annotations: map[string]string{"kafkalink.io/applied-hash": "h"}}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		// kafkalink's update: the template's old label and annotation, and ones it still sets.
		entry(controller.FieldManager, "", `{"f:metadata":{"f:labels":{".":{},"f:kafkalink.io/binding":{},"f:team":{},"f:tier":{}},"f:annotations":{"f:kafkalink.io/applied-hash":{},"f:old":{}}},"f:data":{"f:a":{}}}`),
		// An earlier version's server-side apply, under the same manager.
		entry(controller.FieldManager, "", `{"f:metadata":{"f:labels":{"f:zone":{},"f:team":{}}}}`),
		// Another tool's, and kafkalink's on another subresource: not ours to remove.
		entry("kubectl-label", "", `{"f:metadata":{"f:labels":{"f:mine":{}}}}`),
		entry(controller.FieldManager, "status", `{"f:metadata":{"f:labels":{"f:sub":{}}}}`),
		entry(controller.FieldManager, "", `not json`),
	}}}
	labels, annotations := staleTemplateKeys(s, meta)
	if want := []string{"team", "zone"}; !slices.Equal(labels, want) {
		t.Errorf("stale labels %q, want %q", labels, want)
	}
	if want := []string{"old"}; !slices.Equal(annotations, want) {
		t.Errorf("stale annotations %q, want %q", annotations, want)
	}
	if l, a := staleTemplateKeys(nil, meta); l != nil || a != nil {
		t.Errorf("a Secret not read has stale keys %q %q", l, a)
	}
}

// FuzzMetadataKeys: managedFields come from the API server, but are bytes all the same; whatever
// they hold, reading them does not panic and yields only keys that were in them.
func FuzzMetadataKeys(f *testing.F) {
	f.Add([]byte(`{"f:metadata":{"f:labels":{"f:a":{},".":{}},"f:annotations":{"f:b":{}}}}`))
	f.Add([]byte(`{"f:metadata":{"f:labels":null}}`))
	f.Add([]byte(`{"f:metadata":[]}`))
	f.Add([]byte(`{"f:metadata":{"f:labels":{"f:":{},"k:{}":{}}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		labels, annotations := metadataKeys(raw)
		for _, k := range slices.Concat(labels, annotations) {
			if k == "" {
				t.Errorf("an empty key from %q", raw)
			}
		}
		sort.Strings(labels)
		if len(slices.Compact(labels)) != len(labels) {
			t.Errorf("a key twice in %q", labels)
		}
	})
}
