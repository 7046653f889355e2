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

// FilterSecretRef is a Secret or ConfigMap (and, but for secretDir, a key) named by a KafkaFilter
// placeholder.
type FilterSecretRef struct {
	// Kind is KindSecret or KindConfigMap.
	Kind string
	// Secret is the Secret's or ConfigMap's name, in the filter's namespace.
	Secret string
	// Key is the key for $(secretFile:secret:key) and ${provider:name:key}; empty for
	// $(secretDir:secret).
	Key string
}

// Dir is where the referenced Secret or ConfigMap is mounted in the proxy.
func (r FilterSecretRef) Dir() string {
	if r.Kind == KindConfigMap {
		return FilterConfigMapsDir + "/" + r.Secret
	}
	return FilterSecretsDir + "/" + r.Secret
}

var placeholder = regexp.MustCompile(`\$\((secretFile|secretDir):([^)]*)\)`)

// interpolation is Kroxylicious' interpolation reference, ${provider:name:key}, with the carets
// that quote it (SecureConfigInterpolator's pattern).
var interpolation = regexp.MustCompile(`(\^*)\$\{([a-z]{1,63}):([a-zA-Z0-9_.-]{1,63}):([a-zA-Z0-9_.-]+)\}`)

// SubstituteFilterSecrets replaces $(secretFile:secret:key) and ${secret:secret:key} with
// FilterSecretsDir/secret/key, $(secretDir:secret) with FilterSecretsDir/secret and
// ${configmap:configmap:key} with FilterConfigMapsDir/configmap/key in every string of a filter
// configuration (JSON), and lists the Secrets and ConfigMaps named. As in Kroxylicious, a ${…}
// reference must be a whole string, and an odd number of carets before it quotes it (half of
// them are kept: ^${a:b:c} is the text ${a:b:c}). Objects come back with their keys sorted. A
// malformed placeholder is an error naming it.
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
			out := placeholder.ReplaceAllStringFunc(t, func(m string) string {
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
			out, err := interpolate(out, refs)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			return out
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
		if list[i].Kind != list[j].Kind {
			return list[i].Kind < list[j].Kind
		}
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
		ref = FilterSecretRef{Kind: KindSecret, Secret: name, Key: key}
	default:
		if args == "" || strings.Contains(args, ":") {
			return ref, "", fmt.Errorf("write $(secretDir:<secret>)")
		}
		ref = FilterSecretRef{Kind: KindSecret, Secret: args}
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

// interpolate replaces Kroxylicious' ${provider:name:key} references in one string value.
func interpolate(text string, refs map[FilterSecretRef]bool) (string, error) {
	matches := interpolation.FindAllStringSubmatchIndex(text, -1)
	if matches == nil {
		return text, nil
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		whole := text[m[0]:m[1]]
		carets := m[3] - m[2]
		provider, name, key := text[m[4]:m[5]], text[m[6]:m[7]], text[m[8]:m[9]]
		b.WriteString(text[last:m[0]])
		last = m[1]
		b.WriteString(strings.Repeat("^", carets/2))
		if carets%2 == 1 {
			// Quoted: the reference is text.
			b.WriteString(whole[carets:])
			continue
		}
		if m[0] != 0 || m[1] != len(text) {
			return "", fmt.Errorf("%s: a ${provider:name:key} reference must be the whole value, with nothing before or after it (quote it as ^%s to keep it as text)", whole[carets:], whole[carets:])
		}
		ref := FilterSecretRef{Secret: name, Key: key}
		switch provider {
		case "secret":
			ref.Kind = KindSecret
		case "configmap":
			ref.Kind = KindConfigMap
		default:
			return "", fmt.Errorf("%s: unknown provider %q (known: configmap, secret)", whole[carets:], provider)
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return "", fmt.Errorf("%s: %s name %q: %s", whole[carets:], provider, name, strings.Join(errs, "; "))
		}
		if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
			return "", fmt.Errorf("%s: key %q: %s", whole[carets:], key, strings.Join(errs, "; "))
		}
		refs[ref] = true
		b.WriteString(ref.Dir() + "/" + key)
	}
	b.WriteString(text[last:])
	return b.String(), nil
}
