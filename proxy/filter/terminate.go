package filter

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/kafka"
)

// Terminator is implemented by a filter that authenticates clients itself and never forwards
// their SASL (SaslTermination). Its virtual cluster's connections have no upstream connection
// until the chain forwards a request, and that connection authenticates to the broker as the
// proxy (proxy/server).
type Terminator interface {
	Filter
	TerminatesSASL() bool
}

// TerminatesSASL reports whether a filter of the chain authenticates clients itself.
func (c *Chain) TerminatesSASL() bool {
	for _, f := range c.filters {
		if t, ok := f.(Terminator); ok && t.TerminatesSASL() {
			return true
		}
	}
	return false
}

// upstreamVersions are the ApiVersions keys the virtual cluster's brokers last offered, as they
// offered them: learnt from every ApiVersions response the chain sees and from the proxy's own
// upstream handshake (LearnVersions). A filter that answers ApiVersions before a client may be
// connected upstream (SaslTermination) answers from them (LocalApiVersions).
type upstreamVersions struct {
	keys atomic.Pointer[[]kmsg.ApiVersionsResponseApiKey]
}

// LearnVersions keeps the versions of a successful ApiVersions response from the broker.
func (c *Chain) LearnVersions(resp *kmsg.ApiVersionsResponse) {
	if resp == nil || resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		return
	}
	keys := make([]kmsg.ApiVersionsResponseApiKey, len(resp.ApiKeys))
	for i, k := range resp.ApiKeys {
		keys[i] = kmsg.ApiVersionsResponseApiKey{ApiKey: k.ApiKey, MinVersion: k.MinVersion, MaxVersion: k.MaxVersion}
	}
	c.versions.keys.Store(&keys)
}

// LocalApiVersions is an ApiVersions response the proxy gives itself: the versions the brokers
// last offered (known), or before any was seen every version the proxy decodes, capped as the
// relay caps the broker's answers (what kmsg decodes, and for keys the filters see what they
// decode).
func (c *Chain) LocalApiVersions() (resp *kmsg.ApiVersionsResponse, known bool) {
	resp = kmsg.NewPtrApiVersionsResponse()
	var keys []kmsg.ApiVersionsResponseApiKey
	if p := c.versions.keys.Load(); p != nil {
		keys, known = slices.Clone(*p), true
	} else {
		keys = decodedVersions()
	}
	for _, k := range keys {
		k.MaxVersion = min(k.MaxVersion, kafka.MaxVersion(k.ApiKey))
		if k.MaxVersion < 0 || k.MinVersion > k.MaxVersion {
			continue
		}
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp, known
}

// decodedVersions are the versions of every key kmsg knows, from 0 to its highest.
func decodedVersions() []kmsg.ApiVersionsResponseApiKey {
	var keys []kmsg.ApiVersionsResponseApiKey
	for k := int16(0); k < 1<<10; k++ {
		if req := kmsg.RequestForKey(k); req != nil {
			keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MaxVersion: req.MaxVersion()})
		}
	}
	return keys
}

// OnEnd registers fn to run once the connection ended (a filter's timers for it); it runs at
// once when the connection already ended.
func (c *Conn) OnEnd(fn func()) {
	c.mu.Lock()
	if !c.ended {
		c.onEnd = append(c.onEnd, fn)
		fn = nil
	}
	c.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// End runs what filters registered with OnEnd; the relay calls it once the connection ended.
func (c *Conn) End() {
	c.mu.Lock()
	fns := c.onEnd
	c.onEnd, c.ended = nil, true
	c.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// maxGatedFrame is the largest request a connection with a closed gate (a client that has not
// authenticated) may send, as Kafka's sasl.server.max.receive.size: the chain reads such
// requests whole, whatever their key.
const maxGatedFrame = 512 << 10

// MaxFrame is the largest request the chain takes on this connection: the chain's, and while a
// gate is closed at most maxGatedFrame.
func (c *Conn) MaxFrame() int32 {
	if c.gates.closed.Load() > 0 {
		return min(c.Chain.MaxFrame(), maxGatedFrame)
	}
	return c.Chain.MaxFrame()
}

// SASLWatcher is implemented by filters that read the SASL exchange between a client and the
// broker (SaslInspection, OauthBearerValidation). Filters that only see SASL requests among all
// others (Authorization) are not watchers.
type SASLWatcher interface {
	Filter
	WatchesSASL()
}

// checkTermination refuses a chain in which one filter authenticates clients and another watches
// their SASL exchange with the broker (SASLWatcher): the first answers it all, so the other would
// never see an exchange reach the broker. cfgs are the filters' configurations,
// in the chain's order, for their names.
func (c *Chain) checkTermination(cfgs []config.Filter) error {
	term := slices.IndexFunc(c.filters, func(f Filter) bool {
		t, ok := f.(Terminator)
		return ok && t.TerminatesSASL()
	})
	if term < 0 {
		return nil
	}
	for i, f := range c.filters {
		if _, watches := f.(SASLWatcher); i == term || !watches {
			continue
		}
		return fmt.Errorf("filter %s (%s) sees the clients' SASL requests, which filter %s (%s) answers itself: a virtual cluster either terminates SASL at the proxy or passes it to the broker, not both",
			cfgs[i].Name, cfgs[i].Type, cfgs[term].Name, cfgs[term].Type)
	}
	return nil
}
