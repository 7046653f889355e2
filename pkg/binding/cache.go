package binding

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"sync"
)

// StoreCache remembers the PKCS12 and JKS stores built for given inputs, so that thousands of
// connections to one Kafka decode Strimzi's ca.p12 and build their truststores once per CA
// change instead of once per reconcile (each costs milliseconds of PBKDF). The stores are a pure
// function of the cache key, so a cached answer is exactly what building would give; the cache
// changes speed, never output. It is safe for concurrent use; a nil *StoreCache caches nothing.
type StoreCache struct {
	mu         sync.Mutex
	maxEntries int
	entries    map[[32]byte]map[string][]byte
	hits       uint64
	// parsed are CA bundles parsed, by the SHA-256 of their PEM (see certificates).
	parsed map[[32]byte][]*x509.Certificate
}

// maxParsed bounds the parsed CA bundles: one per Kafka and CA generation, and per listener that
// reports its own certificates. When full the map starts over, as entries does.
const maxParsed = 64

// NewStoreCache returns a cache holding at most maxEntries store sets. A truststore set is shared
// by every connection to one Kafka; a keystore set belongs to one user (about 5 KiB with PKCS12
// and JKS), so twice the number of connections is a generous bound.
func NewStoreCache(maxEntries int) *StoreCache {
	return &StoreCache{maxEntries: maxEntries, entries: map[[32]byte]map[string][]byte{}}
}

// get copies the cached entries into data and reports whether there were any.
func (c *StoreCache) get(key [32]byte, data map[string][]byte) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return false
	}
	c.hits++
	for k, v := range e {
		// Callers own the returned Secret data, so they get copies they may modify.
		data[k] = bytes.Clone(v)
	}
	return true
}

// put remembers the given entries of data. When full it starts over: entries are cheap to
// rebuild, and a plain reset keeps the memory bound without bookkeeping.
func (c *StoreCache) put(key [32]byte, data map[string][]byte, keys ...string) {
	if c == nil || c.maxEntries <= 0 {
		return
	}
	e := make(map[string][]byte, len(keys))
	for _, k := range keys {
		if v, ok := data[k]; ok {
			e[k] = bytes.Clone(v)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.maxEntries {
		clear(c.entries)
	}
	c.entries[key] = e
}

// certificates parses PEM certificates as parseCertificates does, remembering the result by the
// SHA-256 of the bytes: every connection to one Kafka reads the same CA bundle, and parsing it
// again was most of what a sync that changes nothing allocated, 20,000 times over after a CA
// renewal (issue 30). Failures are not remembered. The certificates are shared between callers,
// which only read them. where is called only to describe a failure.
func (c *StoreCache) certificates(data []byte, where func() string) ([]*x509.Certificate, *Failure) {
	if c == nil || c.maxEntries <= 0 {
		return parseCertificates(data, where())
	}
	key := sha256.Sum256(data)
	c.mu.Lock()
	certs, ok := c.parsed[key]
	c.mu.Unlock()
	if ok {
		return certs, nil
	}
	certs, f := parseCertificates(data, where())
	if f != nil {
		return nil, f
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parsed == nil || len(c.parsed) >= maxParsed {
		c.parsed = map[[32]byte][]*x509.Certificate{}
	}
	c.parsed[key] = certs
	return certs, nil
}
