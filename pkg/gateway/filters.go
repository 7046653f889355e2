package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FilterSecretRef is a Secret (and, for secretFile, a key) named by a KafkaFilter placeholder.
type FilterSecretRef struct {
	// Secret is the Secret's name, in the filter's namespace.
	Secret string
	// Key is the key for $(secretFile:secret:key); empty for $(secretDir:secret).
	Key string
}

var placeholder = regexp.MustCompile(`\$\((secretFile|secretDir):([^)]*)\)`)

// SubstituteFilterSecrets replaces $(secretFile:secret:key) with
// FilterSecretsDir/secret/key and $(secretDir:secret) with FilterSecretsDir/secret in every
// string of a filter configuration (JSON), and lists the Secrets named. Objects come back with
// their keys sorted. A malformed placeholder is an error naming it.
func SubstituteFilterSecrets(raw []byte) ([]byte, []FilterSecretRef, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep numbers exactly as written
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, fmt.Errorf("config is not JSON: %w", err)
	}
	refs := map[FilterSecretRef]bool{}
	var firstErr error
	var walk func(any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e)
			}
			return t
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
			return t
		case string:
			return placeholder.ReplaceAllStringFunc(t, func(m string) string {
				sub := placeholder.FindStringSubmatch(m)
				ref, path, err := parsePlaceholder(sub[1], sub[2])
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: %w", m, err)
					}
					return m
				}
				refs[ref] = true
				return path
			})
		default:
			return v
		}
	}
	v = walk(v)
	if firstErr != nil {
		return nil, nil, firstErr
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	list := make([]FilterSecretRef, 0, len(refs))
	for r := range refs {
		list = append(list, r)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].Secret != list[j].Secret {
			return list[i].Secret < list[j].Secret
		}
		return list[i].Key < list[j].Key
	})
	return out, list, nil
}

// parsePlaceholder reads the arguments of one placeholder and gives its path.
func parsePlaceholder(kind, args string) (FilterSecretRef, string, error) {
	var ref FilterSecretRef
	switch kind {
	case "secretFile":
		name, key, ok := strings.Cut(args, ":")
		if !ok || name == "" || key == "" {
			return ref, "", fmt.Errorf("write $(secretFile:<secret>:<key>)")
		}
		if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
			return ref, "", fmt.Errorf("key %q: %s", key, strings.Join(errs, "; "))
		}
		ref = FilterSecretRef{Secret: name, Key: key}
	default:
		if args == "" || strings.Contains(args, ":") {
			return ref, "", fmt.Errorf("write $(secretDir:<secret>)")
		}
		ref = FilterSecretRef{Secret: args}
	}
	if errs := validation.IsDNS1123Subdomain(ref.Secret); len(errs) > 0 {
		return ref, "", fmt.Errorf("secret name %q: %s", ref.Secret, strings.Join(errs, "; "))
	}
	path := FilterSecretsDir + "/" + ref.Secret
	if ref.Key != "" {
		path += "/" + ref.Key
	}
	return ref, path, nil
}
