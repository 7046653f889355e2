package kafka

import (
	"bytes"
	"time"
)

// Bounded decoding. kmsg (v1.15.0) reads a tagged-field section as "count, then count times a
// key, a size and the bytes", and keeps looping after the frame runs out, each turn cheap but
// counted: a corrupt count, which a uvarint of 4 or 5 bytes can make up to 2^32, costs some 25 s
// of CPU before kmsg reports the frame invalid. The fuzz tests found such frames. Arrays and
// strings are checked against the bytes left, so tagged fields are the one place this happens.
//
// A frame whose uvarints are all 3 bytes or shorter (no run of 3 bytes with the high bit set)
// cannot announce more than 2^21 tagged fields, milliseconds of looping, and is decoded inline.
// Any other frame is decoded on a copy in a goroutine the caller stops waiting for after
// decodeLimit: the frame is then refused as malformed and the connection closed, and the
// abandoned decode ends by itself.

// decodeBase and decodePerMiB make up decodeLimit; variables so a test can shorten them.
var (
	decodeBase   = time.Second
	decodePerMiB = 100 * time.Millisecond
)

func decodeLimit(size int) time.Duration {
	return decodeBase + time.Duration(size>>20)*decodePerMiB
}

// DecodeBounded runs decode on frame (or on a copy of it), giving up as described above.
// decode must read only the slice it is given.
func DecodeBounded(frame []byte, decode func([]byte) error) error {
	if !mayHoldLongUvarint(frame) {
		return decode(frame)
	}
	own := bytes.Clone(frame)
	done := make(chan error, 1)
	go func() { done <- decode(own) }()
	limit := decodeLimit(len(frame))
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return malformed("decoding a %d-byte frame took over %s: a corrupt tagged-field count", len(frame), limit)
	}
}

// mayHoldLongUvarint reports whether frame has 3 bytes in a row with the high bit set, the
// start of a uvarint of 4 bytes or more.
func mayHoldLongUvarint(frame []byte) bool {
	run := 0
	for _, b := range frame {
		if b&0x80 == 0 {
			run = 0
			continue
		}
		if run++; run == 3 {
			return true
		}
	}
	return false
}
