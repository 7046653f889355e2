package kafka

import (
	"encoding/binary"
	"errors"
)

// Produce responses are the one rewritten response on the hot path: one per produce request.
// Only their top-level tagged field 0, NodeEndpoints (v10+, sent when a partition's leader
// moved), holds addresses. produceHasNodeEndpoints walks the response without decoding it, so the
// common response, without endpoints, is forwarded untouched and costs no kmsg decode (and no
// bounded decode either: see decode.go).

// errScan stops a scan that found bytes it does not understand; the caller then leaves the
// frame to kmsg, which judges it.
var errScan = errors.New("scan")

// scanner reads a flexible-version message from a byte slice.
type scanner struct {
	b   []byte
	off int
	err error
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

// tags skips a tagged-field section and reports whether it holds key.
func (s *scanner) tags(key uint64) bool {
	found := false
	for n := s.uvarint(); n > 0 && s.err == nil; n-- {
		if s.uvarint() == key {
			found = true
		}
		s.skip(s.compactSize())
	}
	return found
}

// compactSize reads a tagged field's size, at most what is left.
func (s *scanner) compactSize() int {
	l := s.uvarint()
	if l > uint64(len(s.b)-s.off) {
		s.err = errScan
		return 0
	}
	return int(l)
}

// produceHasNodeEndpoints reports whether a Produce response body (after the response header)
// of a flexible version carries NodeEndpoints. An error means the body does not follow the
// layout this scanner knows; the caller decodes it with kmsg instead.
func produceHasNodeEndpoints(version int16, body []byte) (bool, error) {
	if !Flexible(KeyProduce, version) {
		return false, errScan
	}
	s := &scanner{b: body}
	for topics := s.compactLen(); topics > 0 && s.err == nil; topics-- {
		if version >= 13 {
			s.skip(16) // topic id
		} else {
			s.skip(s.compactLen()) // name
		}
		for parts := s.compactLen(); parts > 0 && s.err == nil; parts-- {
			s.skip(4 + 2 + 8 + 8 + 8) // index, error code, base offset, log append time, log start offset
			for recs := s.compactLen(); recs > 0 && s.err == nil; recs-- {
				s.skip(4)              // batch index
				s.skip(s.compactLen()) // error message
				s.tags(0)
			}
			s.skip(s.compactLen()) // error message
			s.tags(0)              // current leader
		}
		s.tags(0)
	}
	s.skip(4) // throttle
	found := s.tags(0)
	if s.err == nil && s.off != len(body) {
		s.err = errScan
	}
	return found, s.err
}
