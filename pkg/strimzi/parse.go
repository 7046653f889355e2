package strimzi

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// FieldError is a parse failure: the field path in the object and what is wrong with it.
type FieldError struct {
	// Field is the JSON path of the offending field, such as spec.kafka.listeners[1].tls.
	Field string
	// Detail says what is wrong.
	Detail string
}

// Error implements error.
func (e *FieldError) Error() string { return e.Field + ": " + e.Detail }

// fieldErr is a FieldError at path.
func fieldErr(path, format string, args ...any) *FieldError {
	return &FieldError{Field: path, Detail: fmt.Sprintf(format, args...)}
}

// ParseKafka reads a Strimzi Kafka from unstructured content of apiVersion kafka.strimzi.io/v1 or
// v1beta2. Missing optional fields parse to their zero values; a field of the wrong shape is an
// error naming its path. Unknown listener and authentication types are kept as they are, because a
// newer Strimzi may add some; the listener choice treats them as unfit or non-internal.
func ParseKafka(obj map[string]any) (*Kafka, error) {
	k := &Kafka{}
	var err error
	if k.APIVersion, err = optString(obj, "apiVersion", "apiVersion"); err != nil {
		return nil, err
	}
	if k.Namespace, k.Name, k.Generation, err = parseMeta(obj); err != nil {
		return nil, err
	}
	if k.Stretch, err = stretchMode(obj); err != nil {
		return nil, err
	}
	spec, err := optMap(obj, "spec", "spec")
	if err != nil {
		return nil, err
	}
	kafka, err := optMap(spec, "kafka", "spec.kafka")
	if err != nil {
		return nil, err
	}
	if k.ListenerForm, k.Listeners, err = parseListeners(kafka["listeners"], "spec.kafka.listeners"); err != nil {
		return nil, err
	}
	replicas, err := optInt64(kafka, "replicas", "spec.kafka.replicas")
	if err != nil {
		return nil, err
	}
	if replicas < 0 || replicas > MaxReplicas {
		return nil, fieldErr("spec.kafka.replicas", "must be from 0 to %d, got %d", MaxReplicas, replicas)
	}
	k.Replicas = int32(replicas)
	status, err := optMap(obj, "status", "status")
	if err != nil {
		return nil, err
	}
	if k.Status.ObservedGeneration, err = optInt64(status, "observedGeneration", "status.observedGeneration"); err != nil {
		return nil, err
	}
	if k.Status.Conditions, err = parseConditions(status, "status.conditions"); err != nil {
		return nil, err
	}
	if k.Status.Listeners, err = parseListenerStatuses(status, "status.listeners"); err != nil {
		return nil, err
	}
	return k, nil
}

// stretchMode reads the strimzi.io/stretch-mode annotation: only "enabled" turns it on.
func stretchMode(obj map[string]any) (bool, error) {
	meta, _ := optMap(obj, "metadata", "metadata")
	annotations, err := optMap(meta, "annotations", "metadata.annotations")
	if err != nil {
		return false, err
	}
	v, err := optString(annotations, AnnotationStretchMode, "metadata.annotations."+AnnotationStretchMode)
	return v == "enabled", err
}

// ParseKafkaUser reads a Strimzi KafkaUser from unstructured content of apiVersion
// kafka.strimzi.io/v1 or v1beta2 (v1beta1 and v1alpha1 have the same fields).
func ParseKafkaUser(obj map[string]any) (*KafkaUser, error) {
	u := &KafkaUser{}
	var err error
	if u.APIVersion, err = optString(obj, "apiVersion", "apiVersion"); err != nil {
		return nil, err
	}
	if u.Namespace, u.Name, u.Generation, err = parseMeta(obj); err != nil {
		return nil, err
	}
	spec, err := optMap(obj, "spec", "spec")
	if err != nil {
		return nil, err
	}
	auth, err := optMap(spec, "authentication", "spec.authentication")
	if err != nil {
		return nil, err
	}
	t, err := optString(auth, "type", "spec.authentication.type")
	if err != nil {
		return nil, err
	}
	u.Authentication = UserAuthentication(t)
	status, err := optMap(obj, "status", "status")
	if err != nil {
		return nil, err
	}
	if u.Status.ObservedGeneration, err = optInt64(status, "observedGeneration", "status.observedGeneration"); err != nil {
		return nil, err
	}
	if u.Status.Conditions, err = parseConditions(status, "status.conditions"); err != nil {
		return nil, err
	}
	if u.Status.Username, err = optString(status, "username", "status.username"); err != nil {
		return nil, err
	}
	if u.Status.Secret, err = optString(status, "secret", "status.secret"); err != nil {
		return nil, err
	}
	return u, nil
}

// parseMeta reads the metadata kafkalink uses.
func parseMeta(obj map[string]any) (namespace, name string, generation int64, err error) {
	meta, err := optMap(obj, "metadata", "metadata")
	if err != nil {
		return "", "", 0, err
	}
	if namespace, err = optString(meta, "namespace", "metadata.namespace"); err != nil {
		return "", "", 0, err
	}
	if name, err = optString(meta, "name", "metadata.name"); err != nil {
		return "", "", 0, err
	}
	if generation, err = optInt64(meta, "generation", "metadata.generation"); err != nil {
		return "", "", 0, err
	}
	return namespace, name, generation, nil
}

// parseListeners reads spec.kafka.listeners in either form into one model and refuses duplicate
// names, which would make the choice by name ambiguous.
func parseListeners(v any, path string) (ListenerForm, []Listener, error) {
	var (
		form ListenerForm
		out  []Listener
		err  error
	)
	switch lv := v.(type) {
	case nil:
		return ListenerFormArray, nil, nil
	case []any:
		form = ListenerFormArray
		out, err = parseArrayListeners(lv, path)
	case map[string]any:
		form = ListenerFormObject
		out, err = parseObjectListeners(lv, path)
	default:
		return "", nil, fieldErr(path, "must be a list of listeners or an object with plain, tls and external, got %s", describe(v))
	}
	if err != nil {
		return "", nil, err
	}
	seen := make(map[string]int, len(out))
	for i, l := range out {
		if j, dup := seen[l.Name]; dup {
			return "", nil, fieldErr(fmt.Sprintf("%s[%d].name", path, i), "duplicate listener name %q (also at index %d)", l.Name, j)
		}
		seen[l.Name] = i
	}
	return form, out, nil
}

// parseArrayListeners reads the array form of spec.kafka.listeners.
func parseArrayListeners(items []any, path string) ([]Listener, error) {
	out := make([]Listener, 0, len(items))
	for i, item := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fieldErr(p, "must be an object, got %s", describe(item))
		}
		var l Listener
		var err error
		if l.Name, err = optString(m, "name", p+".name"); err != nil {
			return nil, err
		}
		if l.Name == "" {
			return nil, fieldErr(p+".name", "is required")
		}
		port, err := optInt64(m, "port", p+".port")
		if err != nil {
			return nil, err
		}
		if port < 0 || port > math.MaxUint16 {
			return nil, fieldErr(p+".port", "must be a port number, got %d", port)
		}
		l.Port = int32(port)
		t, err := optString(m, "type", p+".type")
		if err != nil {
			return nil, err
		}
		if t == "" {
			return nil, fieldErr(p+".type", "is required")
		}
		l.Type = ListenerType(t)
		// The CRD requires tls; absent means plain, as the listener proposal's new default says.
		if l.TLS, err = optBool(m, "tls", false, p+".tls"); err != nil {
			return nil, err
		}
		if l.Authentication, err = parseListenerAuth(m, p); err != nil {
			return nil, err
		}
		if l.ParentRefs, err = parseParentRefs(m, p); err != nil {
			return nil, err
		}
		if l.OAuth, err = parseOAuth(m, p); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// parseObjectListeners converts the old object form as the listener proposal does: plain becomes
// an internal listener on 9092 without TLS, tls an internal one on 9093 with TLS, and external one
// on 9094 of the external type, with TLS unless external.tls says false (old Strimzi's default was
// TLS on, and nodeport and loadbalancer could turn it off).
func parseObjectListeners(obj map[string]any, path string) ([]Listener, error) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != OldPlainName && k != OldTLSName && k != OldExternalName {
			return nil, fieldErr(path+"."+k, "unknown listener in the object form (want plain, tls or external)")
		}
	}
	var out []Listener
	for _, name := range []string{OldPlainName, OldTLSName, OldExternalName} {
		v, present := obj[name]
		// "plain:" with nothing after it is null in YAML; Strimzi took that as not configured.
		if !present || v == nil {
			continue
		}
		p := path + "." + name
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fieldErr(p, "must be an object, got %s", describe(v))
		}
		l := Listener{Name: name}
		switch name {
		case OldPlainName:
			l.Port, l.Type, l.TLS = OldPlainPort, ListenerInternal, false
		case OldTLSName:
			l.Port, l.Type, l.TLS = OldTLSPort, ListenerInternal, true
		case OldExternalName:
			t, err := optString(m, "type", p+".type")
			if err != nil {
				return nil, err
			}
			if t == "" {
				return nil, fieldErr(p+".type", "is required")
			}
			tls, err := optBool(m, "tls", true, p+".tls")
			if err != nil {
				return nil, err
			}
			l.Port, l.Type, l.TLS = OldExternalPort, ListenerType(t), tls
		}
		var err error
		if l.Authentication, err = parseListenerAuth(m, p); err != nil {
			return nil, err
		}
		if l.ParentRefs, err = parseParentRefs(m, p); err != nil {
			return nil, err
		}
		if l.OAuth, err = parseOAuth(m, p); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// parseListenerAuth reads a listener's authentication type.
func parseListenerAuth(m map[string]any, path string) (ListenerAuthentication, error) {
	auth, err := optMap(m, "authentication", path+".authentication")
	if err != nil {
		return "", err
	}
	if auth == nil {
		return ListenerAuthNone, nil
	}
	t, err := optString(auth, "type", path+".authentication.type")
	if err != nil {
		return "", err
	}
	if t == "" {
		return "", fieldErr(path+".authentication.type", "is required when authentication is set")
	}
	return ListenerAuthentication(t), nil
}

// parseListenerStatuses reads status.listeners: addresses, bootstrap servers, certificates.
func parseListenerStatuses(status map[string]any, path string) ([]ListenerStatus, error) {
	items, err := optSlice(status, "listeners", path)
	if err != nil || items == nil {
		return nil, err
	}
	out := make([]ListenerStatus, 0, len(items))
	for i, item := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fieldErr(p, "must be an object, got %s", describe(item))
		}
		var ls ListenerStatus
		if ls.Name, err = optString(m, "name", p+".name"); err != nil {
			return nil, err
		}
		if ls.Name == "" {
			// Releases before the array form named status listeners by type only.
			if ls.Name, err = optString(m, "type", p+".type"); err != nil {
				return nil, err
			}
		}
		if ls.BootstrapServers, err = optString(m, "bootstrapServers", p+".bootstrapServers"); err != nil {
			return nil, err
		}
		addrs, err := optSlice(m, "addresses", p+".addresses")
		if err != nil {
			return nil, err
		}
		for j, a := range addrs {
			ap := fmt.Sprintf("%s.addresses[%d]", p, j)
			am, ok := a.(map[string]any)
			if !ok {
				return nil, fieldErr(ap, "must be an object, got %s", describe(a))
			}
			var addr ListenerAddress
			if addr.Host, err = optString(am, "host", ap+".host"); err != nil {
				return nil, err
			}
			port, err := optInt64(am, "port", ap+".port")
			if err != nil {
				return nil, err
			}
			if port < 0 || port > math.MaxUint16 {
				return nil, fieldErr(ap+".port", "must be a port number, got %d", port)
			}
			addr.Port = int32(port)
			ls.Addresses = append(ls.Addresses, addr)
		}
		certs, err := optSlice(m, "certificates", p+".certificates")
		if err != nil {
			return nil, err
		}
		for j, c := range certs {
			s, ok := c.(string)
			if !ok {
				return nil, fieldErr(fmt.Sprintf("%s.certificates[%d]", p, j), "must be a string, got %s", describe(c))
			}
			ls.Certificates = append(ls.Certificates, s)
		}
		out = append(out, ls)
	}
	return out, nil
}

// parseConditions reads status.conditions.
func parseConditions(status map[string]any, path string) ([]Condition, error) {
	items, err := optSlice(status, "conditions", path)
	if err != nil || items == nil {
		return nil, err
	}
	out := make([]Condition, 0, len(items))
	for i, item := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fieldErr(p, "must be an object, got %s", describe(item))
		}
		var c Condition
		for _, f := range []struct {
			key string
			dst *string
		}{{"type", &c.Type}, {"status", &c.Status}, {"reason", &c.Reason}, {"message", &c.Message}} {
			if *f.dst, err = optString(m, f.key, p+"."+f.key); err != nil {
				return nil, err
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// The accessors below treat a missing key and an explicit null alike (both mean "not set"), and
// read from a nil map as if it were empty, so callers can chain them over absent parents.

func optMap(m map[string]any, key, path string) (map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	mv, ok := v.(map[string]any)
	if !ok {
		return nil, fieldErr(path, "must be an object, got %s", describe(v))
	}
	return mv, nil
}

func optSlice(m map[string]any, key, path string) ([]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	sv, ok := v.([]any)
	if !ok {
		return nil, fieldErr(path, "must be a list, got %s", describe(v))
	}
	return sv, nil
}

func optString(m map[string]any, key, path string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fieldErr(path, "must be a string, got %s", describe(v))
	}
	return s, nil
}

func optBool(m map[string]any, key string, def bool, path string) (bool, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fieldErr(path, "must be a boolean, got %s", describe(v))
	}
	return b, nil
}

// optInt64 accepts every number type unstructured content holds: int64 from the API machinery's
// decoder, float64 from encoding/json, json.Number, and the smaller Go integer types.
func optInt64(m map[string]any, key, path string) (int64, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return 0, nil
	}
	return intValue(v, path)
}

// intValue reads an integer in any of the forms JSON decoders give it.
func intValue(v any, path string) (int64, error) {
	switch n := v.(type) {
	case int64:
		return n, nil
	case int:
		return int64(n), nil
	case int32:
		return int64(n), nil
	case float64:
		if n != math.Trunc(n) || n < math.MinInt64 || n >= math.MaxInt64 {
			return 0, fieldErr(path, "must be an integer, got %v", n)
		}
		return int64(n), nil
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return 0, fieldErr(path, "must be an integer, got %s", string(n))
		}
		return i, nil
	default:
		return 0, fieldErr(path, "must be an integer, got %s", describe(v))
	}
}

// describe names the JSON type of a value for error messages without echoing user data.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int32, int64, float64, json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("a %T", v)
	}
}
