package filter

import (
	"context"
	"sync/atomic"
)

// Gate is implemented by a filter that must see every request of a connection until it opens
// the gate for it (Conn.OpenGate): the identity filters refuse the requests of a client that has
// not authenticated. While a gate of a connection is closed every key goes through the chain
// (Conn.Wants), so frames no filter wants are decoded too; once every gate is open, the
// connection's hot path is the byte-copying one again.
type Gate interface {
	Filter
	// Gates reports whether connections start with this gate closed: a configuration may not
	// need it (SaslInspection without requireAuthentication), and may still close it later
	// (CloseGate: a connection whose authentication failed).
	Gates() bool
	// Gate sees a request on a connection whose gate is closed, before the filters that want
	// its key. It lets it pass, answers it (x.Answer: it is not forwarded and no filter sees
	// it), or returns an error, which closes the connection.
	Gate(ctx context.Context, x *Exchange) error
}

// gatesOf are the chain's filters that are gates, in route order.
func gatesOf(filters []Filter) []Gate {
	var gs []Gate
	for _, f := range filters {
		if g, ok := f.(Gate); ok {
			gs = append(gs, g)
		}
	}
	return gs
}

// closedAtStart counts the gates that start closed on a connection.
func closedAtStart(gs []Gate) int32 {
	var n int32
	for _, g := range gs {
		if g.Gates() {
			n++
		}
	}
	return n
}

// connGates is which of the chain's gates are closed for one connection. closed is read on every
// frame (Wants), so it is an atomic count; open changes under Conn.mu and holds the gates
// opened or closed since the connection started (the others are as Gates says).
type connGates struct {
	closed atomic.Int32
	open   map[Gate]bool
}

// isOpen reports whether g's gate is open; c.mu is held.
func (c *Conn) isOpen(g Gate) bool {
	if open, ok := c.gates.open[g]; ok {
		return open
	}
	return !g.Gates()
}

// OpenGate opens g's gate for this connection (a client that authenticated).
func (c *Conn) OpenGate(g Gate) { c.setGate(g, true) }

// CloseGate closes g's gate again (a re-authentication that failed).
func (c *Conn) CloseGate(g Gate) { c.setGate(g, false) }

func (c *Conn) setGate(g Gate, open bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.isGate(g) || c.isOpen(g) == open {
		return
	}
	if c.gates.open == nil {
		c.gates.open = map[Gate]bool{}
	}
	c.gates.open[g] = open
	if open {
		c.gates.closed.Add(-1)
	} else {
		c.gates.closed.Add(1)
	}
}

// isGate reports whether g is one of the chain's gates.
func (c *Conn) isGate(g Gate) bool {
	for _, h := range c.gateFilters {
		if h == g {
			return true
		}
	}
	return false
}

// GateOpen reports whether g's gate is open for this connection: always when g is not one of
// the chain's gates.
func (c *Conn) GateOpen(g Gate) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.isGate(g) || c.isOpen(g)
}

// Wants reports whether requests of key go through the chain on this connection: those the
// chain wants, and every key while one of its gates is closed.
func (c *Conn) Wants(key int16) bool {
	return c.gates.closed.Load() > 0 || c.Chain.Wants(key)
}

// runGates passes x through the connection's closed gates; it reports whether one answered.
func (c *Conn) runGates(x *Exchange) (bool, error) {
	if c.gates.closed.Load() == 0 {
		return false, nil
	}
	for _, g := range c.gateFilters {
		if c.GateOpen(g) {
			continue
		}
		if err := g.Gate(c.ctx, x); err != nil {
			return false, err
		}
		if x.answer != nil {
			return true, nil
		}
	}
	return false, nil
}
