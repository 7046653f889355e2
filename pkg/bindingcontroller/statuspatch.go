package bindingcontroller

import (
	"encoding/json"
	"reflect"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
)

// statusPatch is the JSON merge patch (RFC 7386) that turns a connection's status from old into
// want, with resourceVersion as the precondition: only the fields that differ, null for those
// want no longer has; lists (conditions, targets) go whole, as merge patches replace them.
func statusPatch(old, want *kafkav1beta2.KafkaConnectionStatus, resourceVersion string) ([]byte, error) {
	o, err := asMap(old)
	if err != nil {
		return nil, err
	}
	n, err := asMap(want)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": resourceVersion},
		"status":   mergeDiff(o, n),
	})
}

// asMap is v as JSON decodes into maps.
func asMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}

// mergeDiff is the merge patch from old to want: want's entries that differ (objects compared
// member by member), and null for old's entries want does not have.
func mergeDiff(old, want map[string]any) map[string]any {
	out := map[string]any{}
	for k, wv := range want {
		ov, had := old[k]
		om, oldIsMap := ov.(map[string]any)
		wm, wantIsMap := wv.(map[string]any)
		switch {
		case had && oldIsMap && wantIsMap:
			if d := mergeDiff(om, wm); len(d) > 0 {
				out[k] = d
			}
		case !had || !reflect.DeepEqual(ov, wv):
			out[k] = wv
		}
	}
	for k := range old {
		if _, ok := want[k]; !ok {
			out[k] = nil
		}
	}
	return out
}
