package protocollogger

import (
	"encoding/hex"
	"reflect"
	"strconv"
	"strings"
)

// format writes a kmsg request or response as compact JSON with kmsg's field names, at most
// limit bytes: formatting stops there, so a response of a million topics costs no more than a
// small one. Byte fields become their length, secret-looking config values null (see the
// package documentation).
func format(msg any, limit int) string {
	w := &boundedWriter{limit: limit}
	w.value(reflect.ValueOf(msg))
	if w.full {
		return w.b.String() + "…(cut at maxLineBytes)"
	}
	return w.b.String()
}

type boundedWriter struct {
	b     strings.Builder
	limit int
	full  bool
}

func (w *boundedWriter) write(s string) {
	if w.full {
		return
	}
	if w.b.Len()+len(s) > w.limit {
		w.b.WriteString(s[:w.limit-w.b.Len()])
		w.full = true
		return
	}
	w.b.WriteString(s)
}

// value writes v.
func (w *boundedWriter) value(v reflect.Value) {
	if w.full {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			w.write("null")
			return
		}
		w.value(v.Elem())
	case reflect.Struct:
		w.object(v)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			w.write(`"<` + strconv.Itoa(v.Len()) + ` bytes>"`)
			return
		}
		w.list(v)
	case reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 { // topic ids and other UUIDs
			b := make([]byte, v.Len())
			reflect.Copy(reflect.ValueOf(b), v)
			w.write(`"` + hex.EncodeToString(b) + `"`)
			return
		}
		w.list(v)
	case reflect.String:
		w.write(strconv.Quote(v.String()))
	case reflect.Bool:
		w.write(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.write(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		w.write(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		w.write(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	default:
		w.write("null") // maps and funcs: kmsg messages carry none outside their tags
	}
}

func (w *boundedWriter) list(v reflect.Value) {
	w.write("[")
	for i := range v.Len() {
		if i > 0 {
			w.write(",")
		}
		w.value(v.Index(i))
		if w.full {
			return
		}
	}
	w.write("]")
}

// object writes a struct's exported fields; kmsg's unknown tagged fields are left out, and a
// config entry (a struct with a Name and a Value) whose value may be secret has it null.
func (w *boundedWriter) object(v reflect.Value) {
	t := v.Type()
	secret := secretConfig(v)
	w.write("{")
	first := true
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Name == "UnknownTags" {
			continue
		}
		if !first {
			w.write(",")
		}
		first = false
		w.write(strconv.Quote(f.Name) + ":")
		if secret && (f.Name == "Value" || f.Name == "ConfigSynonyms") {
			w.write("null") // a secret's synonyms hold the same secret
			continue
		}
		w.value(v.Field(i))
		if w.full {
			return
		}
	}
	w.write("}")
}

// secretWords mark config names whose values are credentials (ssl.key.password,
// sasl.jaas.config, sasl.oauthbearer.client.secret, …).
var secretWords = []string{"password", "secret", "jaas", "key", "token", "credential"}

// secretConfig reports whether v is a config entry (a Name string and a Value *string) whose
// value must not be logged: its name looks secret, or the broker marked it sensitive.
func secretConfig(v reflect.Value) bool {
	name, value := v.FieldByName("Name"), v.FieldByName("Value")
	if !name.IsValid() || !value.IsValid() || value.Kind() != reflect.Pointer || value.Type().Elem().Kind() != reflect.String {
		return false
	}
	if s := v.FieldByName("IsSensitive"); s.IsValid() && s.Kind() == reflect.Bool && s.Bool() {
		return true
	}
	n := name
	if n.Kind() == reflect.Pointer {
		if n.IsNil() {
			return true
		}
		n = n.Elem()
	}
	if n.Kind() != reflect.String {
		return true
	}
	lower := strings.ToLower(n.String())
	for _, word := range secretWords {
		if strings.Contains(lower, word) {
			return true
		}
	}
	return false
}
