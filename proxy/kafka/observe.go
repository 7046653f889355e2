package kafka

import (
	"time"
)

// epoch anchors Nanotime: time.Since on it reads the monotonic clock, so request timings are
// immune to wall-clock steps.
var epoch = time.Now()

// Nanotime is a monotonic clock reading in nanoseconds, the unit of Pending.Received.
func Nanotime() int64 { return int64(time.Since(epoch)) }

// maxUnflushed bounds the responses waiting for a flush to be timed: under a long burst of
// pipelined responses the relay flushes at least this often, so the list never grows.
const maxUnflushed = 256

// responseClock times responses until they have left the proxy: a response written to the
// client's buffered writer has left once that buffer is flushed, which the relay does before it
// waits for anything. It keeps the responses written since the last flush and reports them to
// Stats when the flush succeeds, with one clock reading for all of them.
type responseClock struct {
	dst   *lazyWriter
	stats Stats
	done  []Pending
}

// add notes that p's response is about to be written.
func (c *responseClock) add(p Pending) error {
	if c.stats == nil {
		return nil
	}
	if len(c.done) >= maxUnflushed {
		if err := c.flush(); err != nil {
			return err
		}
	}
	c.done = append(c.done, p)
	return nil
}

// flush flushes dst (giving its buffer back) and reports every response it carried out.
func (c *responseClock) flush() error {
	if err := c.dst.flush(); err != nil {
		return err
	}
	if len(c.done) > 0 {
		now := Nanotime()
		for _, p := range c.done {
			c.stats.Responded(p.Key, time.Duration(now-p.Received))
		}
		c.done = c.done[:0]
	}
	return nil
}
