package records

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPooledBatchesKeepTheirRecords: batches decompressed into pooled buffers keep their values
// while other batches are decoded, and a released buffer serves the next batch whole.
func TestPooledBatchesKeepTheirRecords(t *testing.T) {
	encode := func(codec Codec, n, size int, seed byte) []byte {
		b := &Batch{Header: kmsg.RecordBatch{Magic: 2, Attributes: int16(codec)}}
		for i := range n {
			b.Records = append(b.Records, kmsg.Record{OffsetDelta: int32(i), Value: bytes.Repeat([]byte{seed + byte(i)}, size)})
		}
		raw, err := b.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	for _, codec := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		for round := range 3 {
			var held []*Batch
			for i, size := range []int{100, 40 << 10, 300 << 10} {
				b, err := DecodeWithin(encode(codec, 4, size, byte(10*i+round)), nil)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, b)
			}
			for i, b := range held {
				for j, r := range b.Records {
					if want := bytes.Repeat([]byte{byte(10*i+round) + byte(j)}, len(r.Value)); !bytes.Equal(r.Value, want) {
						t.Fatalf("codec %d round %d: batch %d record %d changed while others were decoded", codec, round, i, j)
					}
				}
				b.Release()
			}
		}
	}
}
