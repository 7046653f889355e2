package kafka

import "github.com/twmb/franz-go/pkg/kmsg"

// Produce responses are the one rewritten response on the hot path: one per produce request.
// Only their top-level tagged field 0, NodeEndpoints (v10+, sent when a partition's leader
// moved), holds addresses. produceHasNodeEndpoints walks the response without decoding it, so the
// common response, without endpoints, is forwarded untouched and costs no kmsg decode (and no
// bounded decode either: see decode.go). The walk uses scanner (scan.go).

// produceHasNodeEndpoints reports whether a Produce response body (after the response header)
// of a flexible version carries NodeEndpoints. An error means the body does not follow the
// layout this scanner knows; the caller decodes it with kmsg instead.
func produceHasNodeEndpoints(version int16, body []byte) (bool, error) {
	if !Flexible(kmsg.Produce.Int16(), version) {
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
