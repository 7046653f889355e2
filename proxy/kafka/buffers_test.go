package kafka

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"
)

// TestLazyReaderKeepsEveryByte reads a stream through waits and pooled buffers, in the pattern
// CopyRequests uses (wait, read some, release when empty), over sources that return few bytes
// per read: every byte arrives once and in order, and an emptied reader holds no buffer.
func TestLazyReaderKeepsEveryByte(t *testing.T) {
	data := make([]byte, 300<<10)
	_, _ = rand.Read(data)
	for name, src := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(data) },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) },
		"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
	} {
		for _, wait := range []int{0, 16, waitSize} {
			testLazyReader(t, fmt.Sprintf("%s/wait=%d", name, wait), src(), wait, data)
		}
	}
}

// testLazyReader reads data from src as TestLazyReaderKeepsEveryByte does, waiting with a
// buffer of its own of size wait, or with a pooled one (wait 0) that releaseAll gives back.
func testLazyReader(t *testing.T, name string, src io.Reader, wait int, data []byte) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		l := &lazyReader{conn: src}
		if wait > 0 {
			l.wait = make([]byte, wait)
		}
		var got []byte
		small, large := make([]byte, 12), make([]byte, 70<<10)
		for step := 0; ; step++ {
			if l.buffered() == 0 {
				l.releaseAll()
				if l.br != nil || l.pooled != nil {
					t.Fatal("an empty reader kept a buffer")
				}
				if err := l.waitForBytes(); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatal(err)
				}
			}
			// Alternate small and large reads, as frame headers and bodies do.
			buf := small
			if step%2 == 1 {
				buf = large
			}
			k, err := l.reader().Read(buf)
			got = append(got, buf[:k]...)
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes, want the %d written, in order", len(got), len(data))
		}
	})
}

// TestLazyWriterGivesBufferBack checks a flushed writer holds no buffer and wrote everything.
func TestLazyWriterGivesBufferBack(t *testing.T) {
	var out bytes.Buffer
	l := &lazyWriter{conn: &out}
	for i := range 3 {
		_, _ = l.writer().Write(bytes.Repeat([]byte{byte(i)}, 100<<10))
		if err := l.flush(); err != nil {
			t.Fatal(err)
		}
		if l.bw != nil {
			t.Fatal("a flushed writer kept its buffer")
		}
	}
	if out.Len() != 300<<10 {
		t.Fatalf("wrote %d bytes, want %d", out.Len(), 300<<10)
	}
}
