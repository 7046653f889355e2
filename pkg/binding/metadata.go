package binding

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// ReasonMetadataNotAllowed: spec.template.secret.metadata holds a label or annotation key that
// the operator's --allowed-metadata-prefixes does not allow; the message lists them. The binding
// Secret is not written until the key is removed (an existing one keeps its last good data).
const ReasonMetadataNotAllowed = "MetadataNotAllowed"

// SecretMeta is the binding Secret's name and the metadata kafkalink puts on it.
type SecretMeta struct {
	// Name is spec.secretName, or the connection's name.
	Name string
	// Labels are kafkalink's own labels and the template's.
	Labels map[string]string
	// Annotations are the template's and AnnotationAppliedHash.
	Annotations map[string]string
}

// SecretName is the name of a connection's binding Secret: spec.secretName, or the connection's.
func SecretName(conn *kafkav1beta2.KafkaConnection) string {
	if conn.Spec.SecretName != "" {
		return conn.Spec.SecretName
	}
	return conn.Name
}

// SecretMetadata computes the binding Secret's name, labels and annotations from a connection.
// allowedPrefixes is the operator's --allowed-metadata-prefixes (nil allows any key); a template
// key outside them fails with ReasonMetadataNotAllowed, naming every such key. The annotation
// wellknown.AnnotationAppliedHash sums the template's entries, so a removed entry is seen as
// drift and the next apply drops it.
func SecretMetadata(conn *kafkav1beta2.KafkaConnection, allowedPrefixes []string) (SecretMeta, *Failure) {
	m := SecretMeta{
		Name:        SecretName(conn),
		Labels:      map[string]string{wellknown.LabelBinding: wellknown.LabelBindingValue, wellknown.LabelManagedBy: wellknown.LabelManagedByValue},
		Annotations: map[string]string{},
	}
	var labels, annotations map[string]string
	if t := conn.Spec.Template; t != nil && t.Secret != nil && t.Secret.Metadata != nil {
		labels, annotations = plain(t.Secret.Metadata.Labels), plain(t.Secret.Metadata.Annotations)
	}
	var refused []string
	for _, kv := range []struct {
		what string
		from map[string]string
		to   map[string]string
	}{{"label", labels, m.Labels}, {"annotation", annotations, m.Annotations}} {
		for _, k := range sortedKeys(kv.from) {
			switch {
			case !prefixAllowed(k, allowedPrefixes):
				refused = append(refused, kv.what+" "+k)
			case ownKey(k):
				// The schema refuses these; an object older than that rule must not take over
				// the label the binding controller selects on.
				refused = append(refused, kv.what+" "+k+" (kafkalink's own)")
			default:
				kv.to[k] = kv.from[k]
			}
		}
	}
	if len(refused) > 0 {
		allowed := "the operator allows keys with any other prefix"
		if allowedPrefixes != nil {
			allowed = "the operator's --allowed-metadata-prefixes: " + strings.Join(allowedPrefixes, ", ")
		}
		return SecretMeta{Name: m.Name}, fail(ReasonMetadataNotAllowed, fmt.Sprintf(
			"spec.template.secret.metadata has keys that are not allowed: %s (%s); remove them",
			strings.Join(refused, ", "), allowed))
	}
	m.Annotations[wellknown.AnnotationAppliedHash] = metadataHash(labels, annotations)
	return m, nil
}

// ownKey reports whether a key is one kafkalink writes itself.
func ownKey(k string) bool {
	return strings.HasPrefix(k, "kafkalink.io/") || k == wellknown.LabelManagedBy
}

// prefixAllowed reports whether a key starts with one of the prefixes; nil allows every key.
func prefixAllowed(key string, prefixes []string) bool {
	if prefixes == nil {
		return true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

func plain[V ~string](m map[string]V) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// metadataHash sums the template's labels and annotations, with lengths so that no two
// templates collide by concatenation; the first 16 bytes in hex are plenty to see a change.
func metadataHash(labels, annotations map[string]string) string {
	h := sha256.New()
	var n [8]byte
	for _, m := range []map[string]string{labels, annotations} {
		binary.BigEndian.PutUint64(n[:], uint64(len(m)))
		h.Write(n[:])
		for _, k := range sortedKeys(m) {
			for _, s := range []string{k, m[k]} {
				binary.BigEndian.PutUint64(n[:], uint64(len(s)))
				h.Write(n[:])
				h.Write([]byte(s))
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// MetadataCurrent reports whether an existing Secret's labels and annotations hold what m wants.
// Keys others added are left alone; kafkalink's own keys and the template's must be equal.
func MetadataCurrent(m SecretMeta, labels, annotations map[string]string) bool {
	for k, v := range m.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for k, v := range m.Annotations {
		if got, ok := annotations[k]; !ok || got != v {
			return false
		}
	}
	return true
}
