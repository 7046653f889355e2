package encryption

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
)

// What clients can make the filter ask of its KMS. Topic names, and the KEK ids and wrapped
// DEKs in fetched records, are chosen by clients, and each distinct one not yet cached costs a
// KMS call with the proxy's credentials: these caps bound them.
const (
	// maxLookupsPerRequest is the most distinct uncached KMS look-ups one request or response
	// may cause; partitions beyond it get a retriable error and are looked up on the retry.
	maxLookupsPerRequest = 32
	// maxLookupsPerConnMinute is the most distinct uncached KEK look-ups one connection may cause
	// per minute.
	maxLookupsPerConnMinute = 256
	// kmsCallsPerSecond and kmsBurst bound one virtual cluster's KMS calls.
	kmsCallsPerSecond = 100
	kmsBurst          = 200
	// maxTopicLen is Kafka's longest topic name.
	maxTopicLen = 249
)

// errThrottled is a look-up refused by a cap above: retriable for the client.
var errThrottled = errors.New("too many distinct keys to look up at once; retry")

// legalTopic reports whether name is a legal Kafka topic name: 1 to 249 of [a-zA-Z0-9._-], not
// "." or "..". Only such names become KEK ids (and so file names and Vault paths).
func legalTopic(name string) bool {
	if name == "" || len(name) > maxTopicLen || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !topicChar[name[i]] {
			return false
		}
	}
	return true
}

// topicChar marks the bytes a legal topic name may hold: a-z, A-Z, 0-9, '.', '_' and '-'.
var topicChar = func() (t [256]bool) {
	for c := range t {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	return t
}()

// legalKEKID reports whether a KEK id read from a fetched record could have been written by the
// filter: a template applied to a legal topic name gives printable ASCII, never a path.
func legalKEKID(id string) bool {
	if id == "" || len(id) > 1024 || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f || c == '/' || c == '\\' || c == '?' || c == '#' || c == '%' {
			return false
		}
	}
	return true
}

// lookups counts one request's (or response's) uncached KMS look-ups, and the connection's
// KEK look-ups in the current minute.
type lookups struct {
	mu   sync.Mutex // partitions are decrypted in parallel
	n    int
	conn *connQuota
}

// take reports whether one more uncached look-up is allowed; kek marks a KEK existence look-up,
// which also counts against the connection.
func (l *lookups) take(kek bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n >= maxLookupsPerRequest {
		return false
	}
	if kek && l.conn != nil && !l.conn.take(time.Now()) {
		return false
	}
	l.n++
	return true
}

// connQuota is a connection's KEK look-ups in a one-minute window.
type connQuota struct {
	mu     sync.Mutex
	window time.Time
	n      int
}

func (q *connQuota) take(now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if now.Sub(q.window) >= time.Minute {
		q.window, q.n = now, 0
	}
	if q.n >= maxLookupsPerConnMinute {
		return false
	}
	q.n++
	return true
}

// lru is a bounded cache that drops its least recently used entry when full, with an optional
// time to live per entry: from when it was put, or with idle set, from when it was last got.
type lru[V any] struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	idle  bool
	items map[string]*list.Element
	order list.List // front: most recently used
}

type lruEntry[V any] struct {
	key   string
	value V
	until time.Time // zero: no time to live
}

func newLRU[V any](size int, ttl time.Duration) *lru[V] {
	return &lru[V]{max: size, ttl: ttl, items: map[string]*list.Element{}}
}

func (c *lru[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*lruEntry[V])
	now := time.Now()
	if !e.until.IsZero() && now.After(e.until) {
		c.order.Remove(el)
		delete(c.items, key)
		return zero, false
	}
	if c.idle && c.ttl > 0 {
		e.until = now.Add(c.ttl)
	}
	c.order.MoveToFront(el)
	return e.value, true
}

// put keeps v for the cache's time to live.
func (c *lru[V]) put(key string, v V) { c.putFor(key, v, c.ttl) }

// putFor keeps v for ttl (0: until it is dropped to make room).
func (c *lru[V]) putFor(key string, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var until time.Time
	if ttl > 0 {
		until = time.Now().Add(ttl)
	}
	if el, ok := c.items[key]; ok {
		e := el.Value.(*lruEntry[V])
		e.value, e.until = v, until
		c.order.MoveToFront(el)
		return
	}
	if c.order.Len() >= c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*lruEntry[V]).key)
	}
	c.items[key] = c.order.PushFront(&lruEntry[V]{key: key, value: v, until: until})
}

func (c *lru[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// kmsGuard is how the filter calls its KMS: rate-limited per virtual cluster, counted, and
// errors logged in full (at most once a second) while clients get a fixed message, never the
// KMS's own words (a Vault error body can name paths, policies and keys).
type kmsGuard struct {
	limiter *rate.Limiter
	m       *metrics
	logMu   sync.Mutex
	// lastCallLog and lastFetchLog are when a failed call and a partition that cannot be
	// decrypted were last logged: each has its own once a second.
	lastCallLog, lastFetchLog time.Time
}

func newKMSGuard(m *metrics) *kmsGuard {
	return &kmsGuard{limiter: rate.NewLimiter(kmsCallsPerSecond, kmsBurst), m: m}
}

// errKMSBusy is a call over the virtual cluster's KMS rate: retriable.
var errKMSBusy = fmt.Errorf("%w: the virtual cluster's KMS call rate is spent", ErrKMSUnavailable)

// call runs one KMS call of operation op under kekID. A call over the rate is not sent, and not
// logged (the metric counts it); a KEK that does not exist is an answer, not logged when the
// operation asked exactly that.
func (g *kmsGuard) call(ctx context.Context, op int, kekID string, fn func() error) error {
	err := errKMSBusy
	if g.limiter.Allow() {
		err = fn()
	}
	outcome := outcomeOf(err)
	g.m.kmsCall(op, outcome)
	asked := op == opExists && outcome == outcomeNotFound
	if err != nil && outcome != outcomeThrottled && !asked {
		g.logOnce(ctx, &g.lastCallLog, err, "RecordEncryption: a KMS call failed", "call", operationNames[op], "kek", kekID, "outcome", outcomeNames[outcome])
	}
	return err
}

// logOnce logs an error unless the last log of its kind (last) was less than a second ago.
func (g *kmsGuard) logOnce(ctx context.Context, last *time.Time, err error, msg string, kv ...any) {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	if time.Since(*last) >= time.Second {
		*last = time.Now()
		klog.FromContext(ctx).Error(err, msg, kv...)
	}
}
