package records

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// realBatches produces records with a real client (franz-go) to kfake with a codec, in a
// transaction when txn is set, and returns the partition's batches as the broker stores them.
func realBatches(t *testing.T, codec kgo.CompressionCodec, txn bool, values []string) []byte {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic("t"),
		kgo.ProducerLinger(50 * time.Millisecond)}
	if txn {
		opts = append(opts, kgo.TransactionalID("txn-1"))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if txn {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
	}
	var rs []*kgo.Record
	for i, v := range values {
		rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(v)}}})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if txn {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("t")
	md.Topics = []kmsg.MetadataRequestTopic{mt}
	mdResp, err := md.RequestWith(ctx, cl)
	if err != nil || len(mdResp.Topics) != 1 {
		t.Fatalf("metadata: %v", err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes, req.MaxWaitMillis = 1<<20, 100
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "t", mdResp.Topics[0].TopicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		t.Fatalf("fetch: %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("fetch: error %d, %d bytes, high watermark %d", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
	}
	return p.RecordBatches
}

func TestRealClientBatchesRoundTrip(t *testing.T) {
	values := []string{"one", "two", string(bytes.Repeat([]byte("three"), 500))}
	for name, codec := range map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()} {
		for _, txn := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/transactional=%v", name, txn), func(t *testing.T) {
				raw := realBatches(t, codec, txn, values)
				batches, rest, err := Split(raw)
				if err != nil || len(rest) != 0 || len(batches) == 0 {
					t.Fatalf("split: %d batches, %d bytes left, %v", len(batches), len(rest), err)
				}
				var got []string
				for _, raw := range batches {
					b, err := Decode(raw)
					if err != nil {
						t.Fatal(err)
					}
					if b.Header.Attributes&0x20 != 0 { // a transaction's control batch (the commit marker)
						continue
					}
					for _, r := range b.Records {
						got = append(got, string(r.Value))
						if string(r.Headers[0].Value) != string(r.Value) {
							t.Errorf("header of %q lost", r.Value)
						}
					}
					again := reencode(t, b)
					if !reflect.DeepEqual(again.Header.ProducerID, b.Header.ProducerID) || again.Header.FirstSequence != b.Header.FirstSequence ||
						again.Header.ProducerEpoch != b.Header.ProducerEpoch || again.Header.Attributes != b.Header.Attributes ||
						again.Header.FirstOffset != b.Header.FirstOffset || again.Header.FirstTimestamp != b.Header.FirstTimestamp ||
						again.Header.MaxTimestamp != b.Header.MaxTimestamp || again.Header.LastOffsetDelta != b.Header.LastOffsetDelta {
						t.Errorf("header changed: %+v, was %+v", again.Header, b.Header)
					}
					if codec == kgo.NoCompression() {
						enc, _ := b.Encode()
						if !bytes.Equal(enc, raw) {
							t.Error("an uncompressed batch does not come back byte for byte")
						}
					}
				}
				if !reflect.DeepEqual(got, values) {
					t.Errorf("records %q, want %q", got, values)
				}
			})
		}
	}
}

// reencode encodes a batch and decodes the result, which must equal the batch in every record.
func reencode(t testing.TB, b *Batch) *Batch {
	t.Helper()
	enc, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Decode(enc)
	if err != nil {
		t.Fatalf("an encoded batch does not decode: %v", err)
	}
	if len(again.Records) != len(b.Records) {
		t.Fatalf("%d records, want %d", len(again.Records), len(b.Records))
	}
	for i := range b.Records {
		x, y := b.Records[i], again.Records[i]
		x.Length, y.Length = 0, 0
		if !reflect.DeepEqual(normalize(x), normalize(y)) {
			t.Fatalf("record %d: %+v, want %+v", i, y, x)
		}
	}
	return again
}

// normalize makes nil and empty headers the same, as the wire does not tell them apart, and the
// two timestamp delta fields agree, as decoding sets both.
func normalize(r kmsg.Record) kmsg.Record {
	if len(r.Headers) == 0 {
		r.Headers = nil
	}
	if r.TimestampDelta64 == 0 {
		r.TimestampDelta64 = int64(r.TimestampDelta)
	}
	r.TimestampDelta = int32(r.TimestampDelta64)
	return r
}

func TestDecodeRefuses(t *testing.T) {
	b := &Batch{Header: kmsg.RecordBatch{Magic: 2, Attributes: int16(CodecNone)}, Records: []kmsg.Record{{Value: []byte("v")}}}
	good, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)-1] ^= 0xff
	v1 := bytes.Clone(good)
	v1[16] = 1
	huge := bytes.Clone(good)
	binary.BigEndian.PutUint32(huge[57:61], 1<<30) // a record count far beyond the bytes
	for name, tc := range map[string]struct {
		raw  []byte
		want error
	}{
		"a flipped byte (CRC)":  {corrupt, ErrMalformed},
		"message format v1":     {v1, ErrUnsupported},
		"a short header":        {good[:40], ErrMalformed},
		"a huge record count":   {huge, ErrMalformed},
		"an unknown codec (7)":  {withCodec(t, good, 7), ErrUnsupported},
		"gzip that is not gzip": {withCodec(t, good, int16(CodecGzip)), ErrMalformed},
	} {
		if _, err := Decode(tc.raw); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

// withCodec sets a batch's codec bits and fixes its CRC, so only the codec is wrong.
func withCodec(t *testing.T, raw []byte, codec int16) []byte {
	t.Helper()
	out := bytes.Clone(raw)
	attrs := int16(binary.BigEndian.Uint16(out[21:23]))&^0x07 | codec
	binary.BigEndian.PutUint16(out[21:23], uint16(attrs))
	binary.BigEndian.PutUint32(out[17:21], crc32Of(out[21:]))
	return out
}

// TestAppendRewritten: a rewritten value is written in place of the record's, the other records
// are kept, and a rewrite that writes other than the length it announced is an error, not a
// corrupt batch.
func TestAppendRewritten(t *testing.T) {
	b := &Batch{Header: kmsg.RecordBatch{Magic: 2, Attributes: int16(CodecGzip)}, Records: []kmsg.Record{
		{Key: []byte("k"), Value: []byte("old"), Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}}},
		{OffsetDelta: 1, Value: []byte("kept")},
	}}
	rw := &Rewrite{
		Len:    func(i int) int { return map[int]int{0: 9, 1: -1}[i] },
		Append: func(dst []byte, _ int) ([]byte, error) { return append(dst, "rewritten"...), nil },
	}
	raw, err := b.AppendRewritten([]byte("prefix"), rw)
	if err != nil || string(raw[:6]) != "prefix" {
		t.Fatalf("%v, %q", err, raw[:6])
	}
	got, err := Decode(raw[6:])
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Records[0].Value) != "rewritten" || string(got.Records[0].Key) != "k" || len(got.Records[0].Headers) != 1 || string(got.Records[1].Value) != "kept" {
		t.Errorf("records %+v", got.Records)
	}
	rw.Len = func(int) int { return 8 }
	if _, err := b.AppendRewritten(nil, rw); err == nil {
		t.Error("a rewrite longer than announced was accepted")
	}
}
