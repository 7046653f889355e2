package kafka

import (
	"bufio"
	"io"
)

// Splicer moves exactly n bytes from the connection a relay reads to the one it writes inside
// the kernel (splice(2)), so record data the proxy only passes on never crosses its memory. It
// is given when both connections are plain TCP; it answers ok false when it cannot take the
// source's bytes now, and the relay copies them instead. A source that ends early is io.EOF.
type Splicer func(n int64) (ok bool, err error)

// spliceMin is the least number of not yet read bytes worth a splice: below it, copying through
// the buffers costs less than a splice's system calls (two per pipe-full, and a flush first).
const spliceMin = 64 << 10

// mover passes on bytes the proxy does not change, from src to dst.
type mover struct {
	src *bufio.Reader
	dst io.Writer
	// from is src's source when that is the connection (nil for a frame in memory), and splice,
	// when set, takes the bytes src has not read yet straight from the connection.
	from   *lazyReader
	splice Splicer
}

// pass moves n bytes: the ones src has buffered through dst, the rest spliced when a splice
// is possible and worth it, else copied (passThrough).
func (m mover) pass(n int64) error {
	if m.splice == nil || m.from == nil { // TLS, or a frame in memory: the common small-field case stays one call
		return passThrough(m.dst, m.src, n)
	}
	head := int64(m.src.Buffered())
	flusher, ok := m.dst.(interface{ Flush() error })
	if !ok || len(m.from.prefix) > 0 || n-head < spliceMin {
		return passThrough(m.dst, m.src, n)
	}
	if err := passThrough(m.dst, m.src, head); err != nil {
		return err
	}
	// Bytes already written to dst's buffer must reach the connection before the spliced ones.
	if err := flusher.Flush(); err != nil {
		return err
	}
	spliced, err := m.splice(n - head)
	if !spliced {
		return passThrough(m.dst, m.src, n-head)
	}
	return err
}
