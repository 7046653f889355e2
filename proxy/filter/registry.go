package filter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// ReadFile reads a file a filter's configuration names: os.ReadFile in the proxy (recorded, so
// that a reload sees when the content changed), the content of the referenced Secrets in the
// operator.
type ReadFile func(path string) ([]byte, error)

// Env is what a filter is built with besides its configuration.
type Env struct {
	// ReadFile reads the files the configuration names.
	ReadFile ReadFile
	// VirtualCluster is the name of the virtual cluster whose chain the filter is in, for the
	// labels of its metrics; empty in the operator's check, which serves no traffic.
	VirtualCluster string
}

// Build makes a filter from its configuration, already decoded into the filter's own Go type C,
// reading the files it names with env.ReadFile. It opens no connection: the operator runs it to
// check a configuration, with the Secrets the placeholders name, so that a route reports a wrong
// configuration in its status instead of the proxy refusing the virtual cluster.
type Build[C any] func(cfg *C, env Env) (Filter, error)

// builder is a registered type's Build with the strict decode of its configuration in front.
type builder func(raw json.RawMessage, env Env) (Filter, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]builder{}
)

// RegisterTyped makes a filter type available under each of its names (kafkalink's, and
// Kroxylicious' fully qualified one); filter implementations call it from init. The KafkaFilter's
// config is decoded into C once, strictly (DecodeStrict), for both the proxy and the operator's
// check.
func RegisterTyped[C any](build Build[C], names ...string) {
	b := func(raw json.RawMessage, env Env) (Filter, error) {
		cfg := new(C)
		if err := DecodeStrict(raw, cfg); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		return build(cfg, env)
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, n := range names {
		registry[n] = b
	}
}

// DecodeStrict decodes a configuration (or a part of one), refusing fields it does not know: a
// typo is an error, not a silently ignored setting.
func DecodeStrict(raw json.RawMessage, into any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// lookup is a filter type's builder, nil for a type this proxy does not implement.
func lookup(typ string) builder {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return registry[typ]
}

// New builds a filter of a registered type from its configuration, as a chain would.
func New(typ string, config json.RawMessage, env Env) (Filter, error) {
	b := lookup(typ)
	if b == nil {
		return nil, fmt.Errorf("type %s is not implemented by kafkalink-proxy (it implements %v)", typ, Types())
	}
	return b(config, env)
}

// Check checks a configuration of a filter type this proxy implements, as the proxy would build
// it; a type it does not implement (another proxy image's) is not checked. What the check built
// is closed at once.
func Check(typ string, config json.RawMessage, env Env) error {
	b := lookup(typ)
	if b == nil {
		return nil
	}
	f, err := b(config, env)
	if err != nil {
		return err
	}
	return closeFilter(f)
}

// Types lists the filter types this proxy implements, sorted: the operator's default
// --proxy-filter-types.
func Types() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for t := range registry {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
