package gatewaycontroller

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Drift: the applied-hash annotation tells whether kafkalink's desired object changed since it
// was last applied, but not whether someone changed the live object by hand (kubectl edit, or
// another controller). A generated object is written again when the live object no longer holds
// every field kafkalink applies. Fields the server or others add (defaults, status, extra labels)
// are not drift: server-side apply would not remove them either.

// liveFields returns the live object as the map that applied objects are compared with.
func liveFields(obj any) (map[string]any, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o.Object, nil
	case runtime.Object:
		return runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	default:
		return nil, fmt.Errorf("cannot compare a %T", obj)
	}
}

// drift names the first field of desired that live does not hold with the same value, or returns
// "" when live covers desired. apiVersion and kind are skipped at the top, because typed objects
// from listers carry no type meta.
func drift(live, desired map[string]any) string {
	for k, dv := range desired {
		if k == "apiVersion" || k == "kind" {
			continue
		}
		if path := driftValue(k, live[k], dv); path != "" {
			return path
		}
	}
	return ""
}

func driftValue(path string, live, desired any) string {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			if len(d) == 0 && live == nil {
				return ""
			}
			return path
		}
		for k, dv := range d {
			if p := driftValue(path+"."+k, l[k], dv); p != "" {
				return p
			}
		}
		return ""
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(d) {
			if len(d) == 0 && live == nil {
				return ""
			}
			return path
		}
		for i := range d {
			if p := driftValue(fmt.Sprintf("%s[%d]", path, i), l[i], d[i]); p != "" {
				return p
			}
		}
		return ""
	case nil:
		return ""
	}
	if live == nil {
		// The server omits zero values of optional fields: a desired zero is held by absence.
		if reflect.ValueOf(desired).IsZero() {
			return ""
		}
		return path
	}
	if ln, ok := number(live); ok {
		if dn, ok := number(desired); ok {
			if ln == dn {
				return ""
			}
			return path
		}
	}
	if reflect.DeepEqual(live, desired) {
		return ""
	}
	return path
}

// number reads the numeric types that decoded and converted objects use, so int64(1) from a
// typed object equals float64(1) or int32(1) from elsewhere.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	default:
		return 0, false
	}
}
