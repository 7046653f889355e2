package kafka

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"io"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// h1Frame is the 44-byte flexible Produce request whose transactional_id length, a 9-byte
// uvarint, once moved the acks offset to math.MaxInt64 so that the bounds check overflowed and
// the slice expression panicked, taking the whole process down.
const h1Frame = "000000280000000900000001ffff00ebffffffffffffff7f0000000000000000000000000000000000000000"

func TestProduceAcksHugeTransactionalIDLength(t *testing.T) {
	frame, err := hex.DecodeString(h1Frame)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := ProduceAcks(9, frame[4:]); ok {
		t.Fatal("acks found behind a transactional id longer than the frame")
	}
	pending := make(chan Pending, 4)
	err = CopyRequests(bytes.NewReader(frame), io.Discard, pending, RelayOptions{MaxFrame: 1 << 20})
	if err == nil {
		t.Fatal("the H1 frame was accepted")
	}
}

// extremeUvarints are compact lengths and counts a hostile client can send: 0 (null), small,
// the edges of int32 and int64 (plus one, as compact lengths are length+1), and the longest
// encodings binary.Uvarint accepts (9 and 10 bytes).
var extremeUvarints = []uint64{0, 1, 2, 0x7f, 0x80, math.MaxInt32, math.MaxInt32 + 1, math.MaxUint32,
	math.MaxInt64 - 1, math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64 - 1, math.MaxUint64, 1 << 56, 1 << 62}

// extremeInt16s are classic string lengths and nullable markers.
var extremeInt16s = []int16{-32768, -2, -1, 0, 1, 2, math.MaxInt16}

// requestKeysParsed are the request keys whose headers or bodies the proxy reads: Produce
// (acks), ApiVersions (answered locally when too new), SaslHandshake (v0 refused), and every
// key whose response is rewritten (checked against the proxy's maximum version).
var requestKeysParsed = func() []int16 {
	keys := []int16{kmsg.Produce.Int16(), kmsg.SASLHandshake.Int16(), kmsg.ApiVersions.Int16()}
	for k := int16(0); k < maxKey; k++ {
		if k != kmsg.Produce.Int16() && k != kmsg.ApiVersions.Int16() && NeedsRewrite(k, MaxVersion(k)) {
			keys = append(keys, k)
		}
	}
	return keys
}()

// hostileRequest builds one request frame for key and version: header with a classic client id
// of length cl, flexible header tags made of the uvarints in tags, then a body of compact
// lengths, a classic int16 length and filler.
func hostileRequest(key, version int16, cl int16, uvs []uint64, i16 int16, tail []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 7)
	b = binary.BigEndian.AppendUint16(b, uint16(cl))
	if cl > 0 {
		b = append(b, bytes.Repeat([]byte{'c'}, int(min(cl, 16)))...)
	}
	for _, u := range uvs {
		b = binary.AppendUvarint(b, u)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(i16))
	b = append(b, tail...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// FuzzHostileRequests builds request headers and bodies for every request key the proxy parses,
// at every version (and beyond), with extreme uvarints, int16 lengths and nulls chosen by the
// fuzzer, and checks that ProduceAcks and CopyRequests never panic and never forward a frame
// the size limit refuses.
func FuzzHostileRequests(f *testing.F) {
	f.Add(uint8(0), int16(9), int16(-1), uint8(0), uint8(12), uint8(0), uint8(3), []byte{0, 0, 0, 0})
	f.Add(uint8(0), int16(3), int16(math.MaxInt16), uint8(1), uint8(2), uint8(3), uint8(0), []byte{})
	f.Add(uint8(5), int16(99), int16(2), uint8(4), uint8(5), uint8(6), uint8(6), []byte{1, 2})
	f.Fuzz(func(t *testing.T, ki uint8, version, cl int16, u1, u2, u3, i16 uint8, tail []byte) {
		key := requestKeysParsed[int(ki)%len(requestKeysParsed)]
		uvs := []uint64{extremeUvarints[int(u1)%len(extremeUvarints)], extremeUvarints[int(u2)%len(extremeUvarints)],
			extremeUvarints[int(u3)%len(extremeUvarints)]}
		frame := hostileRequest(key, version, extremeInt16s[int(uint16(cl))%len(extremeInt16s)], uvs, extremeInt16s[int(i16)%len(extremeInt16s)], tail)
		checkHostile(t, key, version, frame)
		// The same with the fuzzer's own client id length, and cut at every length up to 64 bytes.
		frame = hostileRequest(key, version, cl, uvs, int16(i16), tail)
		checkHostile(t, key, version, frame)
	})
}

func checkHostile(t *testing.T, key, version int16, frame []byte) {
	t.Helper()
	for n := 4; n <= len(frame); n++ {
		if key == kmsg.Produce.Int16() {
			_, _, _ = ProduceAcks(version, frame[4:n])
		}
		if n > 64 && n < len(frame) {
			n = len(frame) - 1
		}
	}
	pending := make(chan Pending, 8)
	var out bytes.Buffer
	_ = CopyRequests(bytes.NewReader(frame), &out, pending, RelayOptions{MaxFrame: 1 << 16})
	for range pending {
	}
	if out.Len() > 1<<16+4 {
		t.Fatalf("%d bytes forwarded beyond the frame limit", out.Len())
	}
}

// TestHostileRequests runs every combination of the extreme values once for every key parsed,
// at the first flexible and last classic versions, so the normal test run covers them too.
func TestHostileRequests(t *testing.T) {
	for _, key := range requestKeysParsed {
		vs := []int16{-1, 0, 3, MaxVersion(key), MaxVersion(key) + 1, math.MaxInt16}
		if Flexible(key, firstFlexible[key]) {
			vs = append(vs, firstFlexible[key], firstFlexible[key]-1)
		}
		for _, v := range vs {
			for _, cl := range extremeInt16s {
				for _, u := range extremeUvarints {
					for _, i16 := range []int16{-1, math.MaxInt16} {
						checkHostile(t, key, v, hostileRequest(key, v, cl, []uint64{0, u, 1}, i16, []byte{0, 1, 0, 0}))
						checkHostile(t, key, v, hostileRequest(key, v, cl, []uint64{u}, i16, nil))
					}
				}
			}
		}
	}
}
