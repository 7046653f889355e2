package kafka

import (
	"bufio"
	"io"
	"sync"
)

// A connection's read and write buffers are large (bufSize), so that bulk Produce and Fetch
// traffic moves in few system calls. They are pooled and held only while bytes are in flight:
// a connection that waits for its next request or response holds none, so the memory of many
// idle connections is their sockets, TLS state and goroutines, not 4 × 64 KiB each.

// bufSize is the size of each pooled buffer.
const bufSize = 64 << 10

// headSize is the read buffer of a side whose bulk bytes are spliced (lazyReader.spliced): a
// bufio.Reader fills with as much as the socket holds, so a 64 KiB one reads up to 64 KiB of
// record data with each frame's or Fetch partition's head, and that much goes through user space,
// a copy each way, where the rest is spliced. Larger reads bypass it (bufio reads straight into
// a caller's buffer at least its size).
const headSize = 4 << 10

var (
	readers     = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}
	headReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, headSize) }}
	writers     = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bufSize) }}
)

// waitSize is the small buffer an idle connection waits with: most requests and responses that
// end an idle spell fit in it, so waking up costs no extra read.
const waitSize = 512

// waitBuffers are the wait buffers of the sides that give theirs back between bursts (the
// response side, which waits on the broker only while responses are awaited).
var waitBuffers = sync.Pool{New: func() any { return new([waitSize]byte) }}

// lazyReader reads conn through a pooled bufio.Reader that it takes when bytes arrive and gives
// back when it holds none.
type lazyReader struct {
	conn io.Reader
	br   *bufio.Reader
	// wait is what waitForBytes reads into: a buffer the reader keeps (its own, NewRequestRelay)
	// or, when nil, one from waitBuffers held until releaseAll.
	wait   []byte
	pooled *[waitSize]byte
	prefix []byte // bytes read into wait, not yet taken by br
	// spliced: the bulk of what is read is spliced; br is a headSize one.
	spliced bool
}

// Read serves the bytes read while waiting first, then conn: it is br's source.
func (l *lazyReader) Read(p []byte) (int, error) {
	if len(l.prefix) > 0 {
		n := copy(p, l.prefix)
		l.prefix = l.prefix[n:]
		return n, nil
	}
	return l.conn.Read(p)
}

// buffered is how many bytes have been read from conn and not yet consumed.
func (l *lazyReader) buffered() int {
	n := len(l.prefix)
	if l.br != nil {
		n += l.br.Buffered()
	}
	return n
}

// reader is the buffered reader, with a buffer from the pool if it had none.
func (l *lazyReader) reader() *bufio.Reader {
	if l.br == nil {
		l.br = l.pool().Get().(*bufio.Reader)
		l.br.Reset(l)
	}
	return l.br
}

// pool is where the reader's buffer comes from.
func (l *lazyReader) pool() *sync.Pool {
	if l.spliced {
		return &headReaders
	}
	return &readers
}

// release gives the buffer back if it holds no bytes.
func (l *lazyReader) release() {
	if l.br != nil && l.br.Buffered() == 0 {
		l.br.Reset(nil)
		l.pool().Put(l.br)
		l.br = nil
	}
}

// releaseAll is release, and gives a pooled wait buffer back too, when nothing read into it is
// left: for a side that waits no more until its next burst.
func (l *lazyReader) releaseAll() {
	l.release()
	if l.pooled != nil && len(l.prefix) == 0 {
		waitBuffers.Put(l.pooled)
		l.pooled = nil
	}
}

// waitForBytes blocks until conn has bytes (or fails), holding no pooled buffer meanwhile but
// the wait buffer.
func (l *lazyReader) waitForBytes() error {
	if l.buffered() > 0 {
		return nil
	}
	l.release()
	wait := l.wait
	if wait == nil {
		if l.pooled == nil {
			l.pooled = waitBuffers.Get().(*[waitSize]byte)
		}
		wait = l.pooled[:]
	}
	for {
		n, err := l.conn.Read(wait)
		if n > 0 {
			l.prefix = wait[:n]
			return nil // an error comes again with the next read
		}
		if err != nil {
			return err
		}
	}
}

// lazyWriter writes conn through a pooled bufio.Writer that it takes for the first write and
// gives back when flushed.
type lazyWriter struct {
	conn io.Writer
	bw   *bufio.Writer
}

// writer is the buffered writer, with a buffer from the pool if it had none.
func (l *lazyWriter) writer() *bufio.Writer {
	if l.bw == nil {
		l.bw = writers.Get().(*bufio.Writer)
		l.bw.Reset(l.conn)
	}
	return l.bw
}

// send writes what is buffered and keeps the buffer: the caller still writes to it.
func (l *lazyWriter) send() error {
	if l.bw == nil {
		return nil
	}
	return l.bw.Flush()
}

// flush writes what is buffered and gives the buffer back.
func (l *lazyWriter) flush() error {
	if l.bw == nil {
		return nil
	}
	if err := l.bw.Flush(); err != nil {
		return err
	}
	l.bw.Reset(nil)
	writers.Put(l.bw)
	l.bw = nil
	return nil
}
