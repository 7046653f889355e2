package records

import (
	"crypto/sha256"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func crc32Of(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// FuzzRoundTrip: any bytes decode or fail without a panic; a batch built from the fuzzer's
// records, in every codec, once encoded and decoded, comes back with the same records,
// offsets, timestamps, headers and producer fields.
func FuzzRoundTrip(f *testing.F) {
	seed := &Batch{Header: kmsg.RecordBatch{Magic: 2}, Records: []kmsg.Record{{Key: []byte("k"), Value: []byte("v"),
		Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}}}}}
	raw, _ := seed.Encode()
	f.Add(raw, []byte("value"), int64(7), int16(3))
	f.Add(raw[:20], []byte{}, int64(-1), int16(0))
	huge := append([]byte(nil), raw...)
	huge[60] = 0x7f // a huge record count
	f.Add(huge, []byte{0xff}, int64(1<<62), int16(-1))
	f.Fuzz(func(t *testing.T, data, value []byte, producerID int64, epoch int16) {
		_, _ = Decode(data)
		_, _, _ = Split(data)
		for _, codec := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
			h := sha256.Sum256(value)
			b := &Batch{Header: kmsg.RecordBatch{Magic: 2, Attributes: int16(codec) | 0x10, FirstOffset: producerID & 0xffff,
				ProducerID: producerID, ProducerEpoch: epoch, FirstSequence: int32(epoch), FirstTimestamp: producerID, MaxTimestamp: producerID + 1,
				LastOffsetDelta: 1},
				Records: []kmsg.Record{
					{Key: h[:4], Value: value, TimestampDelta64: 1, Headers: []kmsg.Header{{Key: string(h[4:8]), Value: value}}},
					{Value: h[:], OffsetDelta: 1},
				}}
			again := reencode(t, b)
			if again.Header.ProducerID != producerID || again.Header.ProducerEpoch != epoch || again.Header.Attributes != b.Header.Attributes ||
				again.Header.FirstOffset != b.Header.FirstOffset || again.Header.FirstTimestamp != b.Header.FirstTimestamp {
				t.Fatalf("codec %d: header %+v, want %+v", codec, again.Header, b.Header)
			}
		}
	})
}
