package gatewaycontroller

import (
	"sync"

	"k8s.io/client-go/tools/cache"

	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gateway"
)

// heldName is a name in a namespace that a gateway wants for a generated object of some kind.
type heldName struct {
	kind, namespace, name string
}

// nameWaiters remembers which gateways want names held by objects they do not control, so that
// when such an object goes away (or gets the gateway as owner) the gateway is reconciled and
// creates its own. Owner references cannot lead there: the holder is not the gateway's.
type nameWaiters struct {
	mu        sync.Mutex
	byName    map[heldName]map[cache.ObjectName]bool
	byGateway map[cache.ObjectName][]heldName
}

func newNameWaiters() *nameWaiters {
	return &nameWaiters{byName: map[heldName]map[cache.ObjectName]bool{}, byGateway: map[cache.ObjectName][]heldName{}}
}

// set replaces the names, in the gateway's namespace, that a gateway waits for; none forgets
// the gateway.
func (w *nameWaiters) set(gw cache.ObjectName, keys []gateway.ObjectKey) {
	names := make([]heldName, 0, len(keys))
	for _, k := range keys {
		names = append(names, heldName{k.Kind, gw.Namespace, k.Name})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.byGateway[gw] {
		delete(w.byName[n], gw)
		if len(w.byName[n]) == 0 {
			delete(w.byName, n)
		}
	}
	delete(w.byGateway, gw)
	for _, n := range names {
		if w.byName[n] == nil {
			w.byName[n] = map[cache.ObjectName]bool{}
		}
		w.byName[n][gw] = true
	}
	if len(names) > 0 {
		w.byGateway[gw] = names
	}
}

func (w *nameWaiters) waiting(n heldName) []cache.ObjectName {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]cache.ObjectName, 0, len(w.byName[n]))
	for gw := range w.byName[n] {
		out = append(out, gw)
	}
	return out
}

// generatedToGateways maps an object of a kind the gateway generates to its owning gateway and to
// the gateways waiting for its name.
func (c *Controller) generatedToGateways(kind string) controller.MapFunc {
	return func(obj any) []cache.ObjectName { return c.ownerOrWaiting(kind, obj) }
}

// ownerOrWaiting is the gateway controlling an object of a generated kind, and the gateways
// waiting for its name.
func (c *Controller) ownerOrWaiting(kind string, obj any) []cache.ObjectName {
	keys := ownerGateway(obj)
	if m, ok := controller.MetaOf(obj); ok {
		keys = append(keys, c.waiters.waiting(heldName{kind, m.GetNamespace(), m.GetName()})...)
	}
	return keys
}
