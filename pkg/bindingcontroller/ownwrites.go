package bindingcontroller

import (
	"sync"

	"k8s.io/client-go/tools/cache"
)

// ownWrites remembers, per connection, the resourceVersion its status patch replaced, until the
// informer delivers the patched object. Until then the cache shows the old version: a sync in
// that window (another event for the connection, such as its new binding Secret arriving) would
// compute the same status again and patch it with a precondition the API server has moved past.
// That conflict costs the API server about as much as a write, and the retry is rate-limited.
// The informer's event for the patch enqueues the connection again, so a sync that finds its
// own write pending can stop. The zero value is ready to use.
type ownWrites struct {
	mu sync.Mutex
	// replaced is the resourceVersion each connection had before kafkalink's last status patch.
	replaced map[cache.ObjectName]string
}

// wrote records that a status patch turned the connection at resourceVersion before into a
// version after. A patch that changed nothing keeps the version and brings no event: nothing
// to wait for.
func (w *ownWrites) wrote(key cache.ObjectName, before, after string) {
	if before == after {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.replaced == nil {
		w.replaced = map[cache.ObjectName]string{}
	}
	w.replaced[key] = before
}

// pending reports whether the cached connection, at resourceVersion cached, is still the version
// kafkalink's last status patch replaced. Once the cache shows another version (the patch's, or
// a later one) the record goes.
func (w *ownWrites) pending(key cache.ObjectName, cached string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	before, ok := w.replaced[key]
	if ok && before == cached {
		return true
	}
	delete(w.replaced, key)
	return false
}

// forget drops the record of a deleted connection.
func (w *ownWrites) forget(key cache.ObjectName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.replaced, key)
}
