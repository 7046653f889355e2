package kafka

import (
	"encoding/binary"
	"errors"
)

// errScan stops a scan that met bytes it does not understand.
var errScan = errors.New("scan")

// scanner reads a flexible-version message from a byte slice without decoding it. Every length
// it reads is checked against the bytes left, so a scan of n bytes does at most n steps. After
// the first error every read is a no-op.
type scanner struct {
	b   []byte
	off int
	err error
	// values counts the structures a pre-scan walked (prescan.go): array elements and tagged
	// fields, each a Go value once kmsg decodes them.
	values int
}

func (s *scanner) skip(n int) {
	if s.err == nil && (n < 0 || n > len(s.b)-s.off) {
		s.err = errScan
	}
	if s.err == nil {
		s.off += n
	}
}

func (s *scanner) uvarint() uint64 {
	if s.err != nil {
		return 0
	}
	v, n := binary.Uvarint(s.b[s.off:])
	if n <= 0 {
		s.err = errScan
		return 0
	}
	s.off += n
	return v
}

// compactLen reads a compact length (length+1, 0 for null) and returns the length, at most
// what is left: every element or byte takes at least a byte.
func (s *scanner) compactLen() int {
	l := s.uvarint()
	if l == 0 {
		return 0
	}
	if l-1 > uint64(len(s.b)-s.off) {
		s.err = errScan
		return 0
	}
	return int(l - 1)
}

// eachTag walks a tagged-field section, calling fn (when not nil) with each key and value.
func (s *scanner) eachTag(fn func(key uint64, data []byte)) {
	for n := s.uvarint(); n > 0 && s.err == nil; n-- {
		key, size := s.uvarint(), s.uvarint()
		if size > uint64(len(s.b)-s.off) {
			s.err = errScan
		}
		start := s.off
		s.skip(int(size))
		if s.err == nil && fn != nil {
			fn(key, s.b[start:s.off])
		}
	}
}

// tags skips a tagged-field section and reports whether it holds key.
func (s *scanner) tags(key uint64) bool {
	found := false
	s.eachTag(func(k uint64, _ []byte) { found = found || k == key })
	return found
}

// skipTags returns the length of a tagged-field section at the start of b.
func skipTags(b []byte) (int, error) {
	s := scanner{b: b}
	s.eachTag(nil)
	if s.err != nil {
		return 0, malformed("bad tagged-field section")
	}
	return s.off, nil
}
