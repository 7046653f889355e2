package bindingcontroller

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
)

// staleTemplateKeys lists the labels and annotations kafkalink set on a binding Secret (by its
// managedFields, under controller.FieldManager, by update or by the server-side apply of earlier
// versions) that meta no longer has: an earlier template's, which the next write removes. A
// Secret read from the cache carries no managedFields, so nothing is stale in it; applySecret
// reads the live Secret when the template changed.
func staleTemplateKeys(s *corev1.Secret, meta binding.SecretMeta) (labels, annotations []string) {
	if s == nil {
		return nil, nil
	}
	for _, mf := range s.ManagedFields {
		if mf.Manager != controller.FieldManager || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		l, a := metadataKeys(mf.FieldsV1.GetRawBytes())
		labels = appendMissing(labels, l, meta.Labels)
		annotations = appendMissing(annotations, a, meta.Annotations)
	}
	sort.Strings(labels)
	sort.Strings(annotations)
	return labels, annotations
}

// metadataKeys reads the label and annotation keys a managedFields entry's fieldsV1 lists
// ({"f:metadata":{"f:labels":{"f:key":{}}}}); bytes it cannot read list none.
func metadataKeys(fieldsV1 []byte) (labels, annotations []string) {
	var f struct {
		Metadata struct {
			Labels      map[string]json.RawMessage `json:"f:labels"`
			Annotations map[string]json.RawMessage `json:"f:annotations"`
		} `json:"f:metadata"`
	}
	if json.Unmarshal(fieldsV1, &f) != nil {
		return nil, nil
	}
	return fieldKeys(f.Metadata.Labels), fieldKeys(f.Metadata.Annotations)
}

// fieldKeys is the map keys of a fieldsV1 set, "f:" taken off; other members (".", "k:", "v:")
// are not keys of a map.
func fieldKeys(set map[string]json.RawMessage) []string {
	var out []string
	for k := range set {
		if name, ok := strings.CutPrefix(k, "f:"); ok && name != "" {
			out = append(out, name)
		}
	}
	return out
}

// appendMissing appends to out the keys not in want and not in out already.
func appendMissing(out, keys []string, want map[string]string) []string {
	for _, k := range keys {
		if _, ok := want[k]; ok {
			continue
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}
