package encryption

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/config"
	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

var (
	secretsID = [16]byte{0x5e, 0xc2}
	plainID   = [16]byte{0x91, 0xa1}
	unknownID = [16]byte{0xee}
)

// keyDir is a folder with a new KEK_secrets, as a mounted Secret.
func keyDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	if err := os.WriteFile(filepath.Join(dir, "KEK_secrets"), k, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chainOver is a chain of the RecordEncryption filter over the KEKs in dir, as the proxy builds
// it, which has learned the ids of secrets and plain from a Metadata response.
func chainOver(t testing.TB, dir string, lim filter.Limits) *filter.Chain {
	t.Helper()
	c, err := filter.NewChain(context.Background(), "a", []config.Filter{{Name: "e", Type: "RecordEncryption",
		Config: []byte(`{"kms":"KubernetesSecretKms","kmsConfig":{"keyDir":"` + dir + `"},"selector":"TemplateKekSelector","selectorConfig":{"template":"KEK_$(topicName)"}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	c.WithLimits(lim)
	t.Cleanup(func() { _ = c.Close() })
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	_, _, state, err := c.Request(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1))
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(12)
	for id, name := range map[[16]byte]string{secretsID: "secrets", plainID: "plain"} {
		mt := kmsg.NewMetadataResponseTopic()
		mt.TopicID, mt.Topic = id, &name
		resp.Topics = append(resp.Topics, mt)
	}
	if _, err := c.Response(kmsg.Metadata.Int16(), 12, frameResponse(resp), state); err != nil {
		t.Fatal(err)
	}
	return c
}

// frameResponse frames a response as a broker sends it (flexible versions: header tags).
func frameResponse(resp kmsg.Response) []byte {
	b := []byte{0, 0, 0, 0, 0, 0, 0, 1}
	if resp.IsFlexible() {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// producedByID sends raw as a Produce v13 to topic id through c and returns the records c
// forwards: what the broker would store.
func producedByID(t testing.TB, c *filter.Chain, id [16]byte, raw []byte) []byte {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(13)
	req.Acks, req.TimeoutMillis = -1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	fwd, answer, _, err := c.Request(kmsg.NewRequestFormatter().AppendRequest(nil, req, 2))
	if err != nil || answer != nil {
		t.Fatalf("produce by id: answer %d bytes, %v", len(answer), err)
	}
	sent := kmsg.NewPtrProduceRequest()
	sent.SetVersion(13)
	if err := sent.ReadFrom(fwd[4+2+2+4+2+1:]); err != nil { // size, key, version, correlation id, null client id, tags
		t.Fatal(err)
	}
	if sent.Topics[0].TopicID != id {
		t.Fatalf("forwarded to topic id %x, want %x", sent.Topics[0].TopicID, id)
	}
	return sent.Topics[0].Partitions[0].Records
}

// shareFetched passes a ShareFetch v1 response through c, one partition per entry of parts (by
// topic id, its records acquired as offsets 0 to 9), and returns the response the client gets.
func shareFetched(t testing.TB, c *filter.Chain, parts []sharePart) *kmsg.ShareFetchResponse {
	t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.SetVersion(1)
	_, _, state, err := c.Request(kmsg.NewRequestFormatter().AppendRequest(nil, req, 3))
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrShareFetchResponse()
	resp.SetVersion(1)
	for i, p := range parts {
		st := kmsg.NewShareFetchResponseTopic()
		st.TopicID = p.id
		sp := kmsg.NewShareFetchResponseTopicPartition()
		sp.Partition, sp.Records = int32(i), bytes.Clone(p.records)
		sp.AcquiredRecords = []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 0, LastOffset: 9, DeliveryCount: 1}}
		st.Partitions = []kmsg.ShareFetchResponseTopicPartition{sp}
		resp.Topics = append(resp.Topics, st)
	}
	out, err := c.Response(kmsg.ShareFetch.Int16(), 1, frameResponse(resp), state)
	if err != nil {
		t.Fatal(err)
	}
	got := kmsg.NewPtrShareFetchResponse()
	got.SetVersion(1)
	if err := got.ReadFrom(out[9:]); err != nil {
		t.Fatal(err)
	}
	return got
}

type sharePart struct {
	id      [16]byte
	records []byte
}

func randomValue(n int) []byte {
	v := make([]byte, n)
	_, _ = rand.Read(v)
	return v
}

// TestShareFetchDecrypted: records the filter encrypted on their way in (a Produce v13, by
// topic id) reach a share-group consumer decrypted, with their acquired ranges. A partition it
// cannot hand out in the clear (its DEK cannot be unwrapped now, its batch is over the limits,
// its topic id is unknown) goes without records and without acquired ranges, which a consumer
// could otherwise acknowledge as gaps: the broker delivers them again once its lock ends.
func TestShareFetchDecrypted(t *testing.T) {
	for name, tc := range map[string]struct {
		id    [16]byte
		codec int16
		// reader is the chain the records are fetched through, from the KEK folder they were
		// written under; nil: the one that wrote them.
		reader   func(t *testing.T, dir string) *filter.Chain
		wantCode int16
		wantKept bool
	}{
		"encrypted records come back in the clear, their acquired ranges kept": {id: secretsID, wantKept: true},
		"compressed encrypted records come back in the clear":                  {id: secretsID, codec: int16(records.CodecZstd), wantKept: true},
		"a topic without a KEK passes as the broker sent it":                   {id: plainID, wantKept: true},
		"a DEK the KMS cannot unwrap now fails the partition, retriably": {id: secretsID, wantCode: errKafkaStorageErr,
			reader: func(t *testing.T, dir string) *filter.Chain {
				other := t.TempDir() // another replica, whose KEK file cannot be read now
				if err := os.Mkdir(filepath.Join(other, "KEK_secrets"), 0o700); err != nil {
					t.Fatal(err)
				}
				return chainOver(t, other, filter.DefaultLimits())
			}},
		"a batch over the limits fails the partition with MESSAGE_TOO_LARGE": {id: secretsID, codec: int16(records.CodecGzip), wantCode: errMessageTooLarge,
			reader: func(t *testing.T, dir string) *filter.Chain {
				lim := filter.DefaultLimits()
				lim.MaxBatch = 1 << 10
				return chainOver(t, dir, lim)
			}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := keyDir(t)
			writer := chainOver(t, dir, filter.DefaultLimits())
			value := append([]byte("share-plaintext "), randomValue(4<<10)...)
			stored := producedByID(t, writer, tc.id, batch(t, tc.codec, value))
			if (tc.id == secretsID) == bytes.Contains(stored, value[:16]) {
				t.Fatalf("stored in the clear: %v, want %v", bytes.Contains(stored, value[:16]), tc.id != secretsID)
			}
			reader := writer
			if tc.reader != nil {
				reader = tc.reader(t, dir)
			}
			p := shareFetched(t, reader, []sharePart{{tc.id, stored}}).Topics[0].Partitions[0]
			if !tc.wantKept {
				if p.ErrorCode != tc.wantCode || len(p.Records) != 0 || len(p.AcquiredRecords) != 0 {
					t.Fatalf("error %d, %d bytes of records, %d acquired ranges; want error %d and neither", p.ErrorCode, len(p.Records), len(p.AcquiredRecords), tc.wantCode)
				}
				return
			}
			if p.ErrorCode != 0 || len(p.AcquiredRecords) != 1 {
				t.Fatalf("error %d, %d acquired ranges", p.ErrorCode, len(p.AcquiredRecords))
			}
			got := mustDecode(t, p.Records).Records[0]
			if !bytes.Equal(got.Value, value) || len(got.Headers) != 0 {
				t.Errorf("the consumer gets %d bytes (equal %v), %d headers", len(got.Value), bytes.Equal(got.Value, value), len(got.Headers))
			}
		})
	}
}

// TestShareFetchOfUnknownIDHandsOutNothing: a ShareFetch partition of a topic id the chain has
// not learned, whose records could be ciphertext, goes out with UNKNOWN_TOPIC_ID and neither
// records nor acquired ranges; another partition of the same response is decrypted.
func TestShareFetchOfUnknownIDHandsOutNothing(t *testing.T) {
	c := chainOver(t, keyDir(t), filter.DefaultLimits())
	stored := producedByID(t, c, secretsID, batch(t, 0, []byte("share-plaintext")))
	resp := shareFetched(t, c, []sharePart{{unknownID, stored}, {secretsID, stored}})
	u, k := resp.Topics[0].Partitions[0], resp.Topics[1].Partitions[0]
	if u.ErrorCode != kerr.UnknownTopicID.Code || len(u.Records) != 0 || len(u.AcquiredRecords) != 0 {
		t.Errorf("the unknown id: error %d, %d bytes, %d acquired ranges", u.ErrorCode, len(u.Records), len(u.AcquiredRecords))
	}
	if k.ErrorCode != 0 || string(mustDecode(t, k.Records).Records[0].Value) != "share-plaintext" {
		t.Errorf("the known id: error %d", k.ErrorCode)
	}
}

// TestShareFetchShareSpent: of two partitions that do not both fit the response's share, one
// is decrypted and the other goes without records, acquired ranges or an error, as a Fetch's
// does; its records come again after the broker's acquisition lock.
func TestShareFetchShareSpent(t *testing.T) {
	dir := keyDir(t)
	writer := chainOver(t, dir, filter.DefaultLimits())
	var parts []sharePart
	for range 2 {
		// gzip: zstd's window alone would be over the share
		parts = append(parts, sharePart{secretsID, producedByID(t, writer, secretsID, batch(t, int16(records.CodecGzip), randomValue(200<<10)))})
	}
	lim := filter.DefaultLimits()
	lim.MaxShare = 300 << 10 // one partition's 200 KiB fit, two do not
	resp := shareFetched(t, chainOver(t, dir, lim), parts)
	decrypted, spent := 0, 0
	for _, st := range resp.Topics {
		p := st.Partitions[0]
		switch {
		case p.ErrorCode == 0 && len(p.Records) > 0 && len(p.AcquiredRecords) == 1 && len(mustDecode(t, p.Records).Records[0].Headers) == 0:
			decrypted++
		case p.ErrorCode == 0 && len(p.Records) == 0 && len(p.AcquiredRecords) == 0:
			spent++
		default:
			t.Errorf("partition %d: error %d, %d bytes, %d acquired ranges", p.Partition, p.ErrorCode, len(p.Records), len(p.AcquiredRecords))
		}
	}
	if decrypted != 1 || spent != 1 {
		t.Errorf("%d partitions decrypted and %d left for later, want one each", decrypted, spent)
	}
}

// FuzzShareFetchDecrypt: a ShareFetch partition's records as a broker could return them (any
// bytes, of a topic whose id the chain knows or not) go through the chain without a panic, and
// the consumer never gets an encrypted value as a record, nor acquired ranges without the
// records they stand for when the records were taken out.
func FuzzShareFetchDecrypt(f *testing.F) {
	c := chainOver(f, keyDir(f), filter.DefaultLimits())
	sealed := producedByID(f, c, secretsID, batch(f, 0, []byte("v"), nil, []byte("w")))
	f.Add(sealed, true)
	f.Add(sealed, false)
	f.Add(sealed[:len(sealed)-3], true)
	f.Add(producedByID(f, c, secretsID, batch(f, int16(records.CodecZstd), []byte("zstd"))), true)
	huge := bytes.Clone(sealed)
	binary.BigEndian.PutUint32(huge[8:], 0x7fffffff) // a batch length of 2^31-1
	f.Add(huge, true)
	varint := bytes.Clone(sealed)
	copy(varint[61:], bytes.Repeat([]byte{0xff}, 10)) // the first record's length, an overflowing varint
	f.Add(varint, true)
	b := mustDecode(f, bytes.Clone(sealed))
	b.Records[0].Value = []byte{FormatVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01} // a KEK id of 2^63 bytes
	lying, _ := b.Encode()
	f.Add(lying, true)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, raw []byte, known bool) {
		id := unknownID
		if known {
			id = secretsID
		}
		p := shareFetched(t, c, []sharePart{{id, raw}}).Topics[0].Partitions[0]
		if len(raw) > 0 && len(p.Records) == 0 && len(p.AcquiredRecords) != 0 {
			t.Fatal("acquired ranges handed out without their records")
		}
		if !known && (len(p.Records) != 0 || p.ErrorCode != kerr.UnknownTopicID.Code) {
			t.Fatalf("a partition of an unknown id: error %d, %d bytes of records", p.ErrorCode, len(p.Records))
		}
		batches, _, _ := records.Split(p.Records)
		for _, bb := range batches {
			out, err := records.Decode(bb)
			if err != nil {
				continue // a batch the filter could not read either; nor can a consumer
			}
			for _, r := range out.Records {
				if encryptedHeader(r) >= 0 && r.Value != nil {
					t.Fatal("an encrypted value was handed out as a record")
				}
			}
		}
	})
}
