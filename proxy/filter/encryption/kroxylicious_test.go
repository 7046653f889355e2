package encryption

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/time/rate"

	"github.com/kafkalink/kafkalink/proxy/filter"
	"github.com/kafkalink/kafkalink/proxy/filter/records"
	"github.com/kafkalink/kafkalink/proxy/proxytest"
)

const testToken = "hvs.test-token"

// vaultFilter is the filter with VaultKmsService at standIn over plain HTTP, KEK_$(topicName),
// and format as experimental.recordFormat ("": none given).
func vaultFilter(t testing.TB, standIn *proxytest.Transit, format string) *encryptor {
	t.Helper()
	srv := httptest.NewServer(standIn)
	t.Cleanup(srv.Close)
	extra := ""
	if format != "" {
		extra = fmt.Sprintf(`,"experimental":{"recordFormat":%q}`, format)
	}
	f, err := New(json.RawMessage(fmt.Sprintf(`{"kms":"VaultKmsService","kmsConfig":{"vaultTransitEngineUrl":%q,"vaultToken":{"password":%q}},"selector":"TemplateKekSelector","selectorConfig":{"template":"KEK_$(topicName)"}%s}`,
		srv.URL+"/v1/transit", testToken, extra)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.(*encryptor).Close() })
	return f.(*encryptor)
}

// kroxyliciousWriter writes as Kroxylicious does, under a DEK the stand-in's datakey endpoint made.
func kroxyliciousWriter(t testing.TB, standIn *proxytest.Transit) proxytest.KroxyliciousWriter {
	t.Helper()
	dek, wrapped, err := standIn.DataKey("KEK_secrets")
	if err != nil {
		t.Fatal(err)
	}
	return proxytest.KroxyliciousWriter{DEK: dek, KEKName: "KEK_secrets", VaultCiphertext: wrapped}
}

// batchOf encodes records into one uncompressed batch.
func batchOf(t testing.TB, recs ...kmsg.Record) []byte {
	t.Helper()
	b := records.Batch{Header: kmsg.RecordBatch{Magic: 2}}
	for i, r := range recs {
		r.OffsetDelta = int32(i)
		b.Records = append(b.Records, r)
	}
	raw, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

var ownHeaders = []kmsg.Header{{Key: "trace", Value: []byte("t-1")}, {Key: "nothing", Value: nil}}

// TestReadsWhatKroxyliciousWrites: records written by the rules of Kroxylicious' format (by
// proxytest's writer, which shares no code with the filter) are opened on fetch, with their
// headers as Kroxylicious would give them; what Kroxylicious refuses is refused, as a malformed
// value is, and never handed out as a value.
func TestReadsWhatKroxyliciousWrites(t *testing.T) {
	standIn := proxytest.NewTransit(testToken, "KEK_secrets")
	e := vaultFilter(t, standIn, "")
	w := kroxyliciousWriter(t, standIn)
	marker := kmsg.Header{Key: KroxyliciousHeaderKey, Value: []byte{2}}
	for name, tc := range map[string]struct {
		parcelHeaders bool
		value         []byte
		change        func(r *kmsg.Record)
		wantHeaders   []kmsg.Header
		wantErr       int16
		noKMS         bool // refused before Vault is asked
	}{
		"a value whose headers stayed in the record is opened and loses the marker":    {value: []byte("alpha"), wantHeaders: ownHeaders},
		"a value whose headers were parcelled gets them back in place of the record's": {parcelHeaders: true, value: []byte("alpha"), wantHeaders: ownHeaders},
		"an empty value comes back empty, not null":                                    {value: []byte{}, wantHeaders: ownHeaders},
		"a marker that is not the first header is found, and left where it is": {value: []byte("alpha"),
			change: func(r *kmsg.Record) { r.Headers = append(r.Headers[1:], r.Headers[0]) }, wantHeaders: append(slices.Clone(ownHeaders), marker)},
		"version 1, retired, is refused":             {value: []byte("alpha"), change: func(r *kmsg.Record) { r.Headers[0].Value = []byte{1} }, wantErr: errKafkaStorageErr},
		"a version of two bytes is refused":          {value: []byte("alpha"), change: func(r *kmsg.Record) { r.Headers[0].Value = []byte{2, 0} }, wantErr: errKafkaStorageErr},
		"a cipher other than AES-256-GCM is refused": {value: []byte("alpha"), change: func(r *kmsg.Record) { r.Value[0] = 1 }, wantErr: errKafkaStorageErr},
		"an AAD other than none is refused": {value: []byte("alpha"), change: func(r *kmsg.Record) {
			r.Value[bytes.Index(r.Value, []byte(w.VaultCiphertext))+len(w.VaultCiphertext)] = 1
		}, wantErr: errKafkaStorageErr},
		"a changed ciphertext does not decrypt": {value: []byte("alpha"), change: func(r *kmsg.Record) { r.Value[len(r.Value)-1] ^= 1 }, wantErr: errKafkaStorageErr},
		"a KEK name that is no legal KEK id is refused": {value: []byte("alpha"), change: func(r *kmsg.Record) {
			at := bytes.Index(r.Value, []byte("KEK_secrets"))
			if at < 0 {
				t.Fatal("no KEK name in the value")
			}
			copy(r.Value[at:], "KEK/secrets")
		}, wantErr: errKafkaStorageErr, noKMS: true},
	} {
		w.ParcelHeaders = tc.parcelHeaders
		headers, value, err := w.Seal(tc.value, slices.Clone(ownHeaders))
		if err != nil {
			t.Fatal(err)
		}
		r := kmsg.Record{Key: []byte("k"), Value: value, Headers: headers}
		if tc.change != nil {
			tc.change(&r)
		}
		asked := standIn.Calls("decrypt")
		p := fetched(t, e, "secrets", batchOf(t, r))
		if tc.noKMS && standIn.Calls("decrypt") != asked {
			t.Errorf("%s: Vault was asked to unwrap its DEK", name)
		}
		if p.ErrorCode != tc.wantErr {
			t.Errorf("%s: error %d, want %d", name, p.ErrorCode, tc.wantErr)
			continue
		}
		if tc.wantErr != 0 {
			continue
		}
		got := mustDecode(t, p.RecordBatches).Records[0]
		if !bytes.Equal(got.Value, tc.value) || got.Value == nil || !reflect.DeepEqual(got.Headers, tc.wantHeaders) {
			t.Errorf("%s: value %q, headers %v; want %q, %v", name, got.Value, got.Headers, tc.value, tc.wantHeaders)
		}
	}
}

// TestOneBatchHoldsBothFormats: a batch with a record in kafkalink's format, one in
// Kroxylicious', and one never encrypted is read whole, each record by its own marker.
func TestOneBatchHoldsBothFormats(t *testing.T) {
	standIn := proxytest.NewTransit(testToken, "KEK_secrets")
	e := vaultFilter(t, standIn, "")
	ours := mustDecode(t, encrypted(t, e, "secrets", batch(t, 0, []byte("kafkalink's")))).Records[0]
	headers, value, err := kroxyliciousWriter(t, standIn).Seal([]byte("Kroxylicious'"), slices.Clone(ownHeaders))
	if err != nil {
		t.Fatal(err)
	}
	raw := batchOf(t, ours, kmsg.Record{Value: value, Headers: headers}, kmsg.Record{Value: []byte("never encrypted")})
	p := fetched(t, vaultFilter(t, standIn, ""), "secrets", raw) // a replica with nothing cached
	if p.ErrorCode != 0 {
		t.Fatalf("error %d", p.ErrorCode)
	}
	got := mustDecode(t, p.RecordBatches).Records
	for i, want := range []string{"kafkalink's", "Kroxylicious'", "never encrypted"} {
		if string(got[i].Value) != want {
			t.Errorf("record %d: %q, want %q", i, got[i].Value, want)
		}
	}
	if len(got[0].Headers) != 0 || !reflect.DeepEqual(got[1].Headers, ownHeaders) {
		t.Errorf("headers %v and %v: want none and the record's own", got[0].Headers, got[1].Headers)
	}
}

// TestBothMarkersOnOneRecord: a client's own header may use the other format's key; the record
// is read in the format the filter wrote, and the client's header is kept.
func TestBothMarkersOnOneRecord(t *testing.T) {
	standIn := proxytest.NewTransit(testToken, "KEK_secrets")
	for format, own := range map[string]kmsg.Header{
		FormatKafkalinkV1:    {Key: KroxyliciousHeaderKey, Value: []byte{KroxyliciousV2}},
		FormatKroxyliciousV2: {Key: HeaderKey, Value: []byte{FormatVersion}},
	} {
		e := vaultFilter(t, standIn, format)
		raw := batchOf(t, kmsg.Record{Value: []byte("v"), Headers: []kmsg.Header{own}})
		p := fetched(t, e, "secrets", encrypted(t, e, "secrets", raw))
		if p.ErrorCode != 0 {
			t.Errorf("%s: error %d", format, p.ErrorCode)
			continue
		}
		if r := mustDecode(t, p.RecordBatches).Records[0]; string(r.Value) != "v" || !reflect.DeepEqual(r.Headers, []kmsg.Header{own}) {
			t.Errorf("%s: value %q, headers %v; want v and the client's %s", format, r.Value, r.Headers, own.Key)
		}
	}
}

// TestWritesWhatKroxyliciousReads: with recordFormat KROXYLICIOUS_V2, what the filter stores is
// read by proxytest's reader (as Kroxylicious reads it: the DEK unwrapped by Vault's decrypt
// endpoint, the value by crypto/aes): the marker first, a fresh IV per record, the parcel the
// value with its headers left in the record; tombstones untouched. A proxy with the default
// format reads it too.
func TestWritesWhatKroxyliciousReads(t *testing.T) {
	standIn := proxytest.NewTransit(testToken, "KEK_secrets")
	e := vaultFilter(t, standIn, FormatKroxyliciousV2)
	in := []kmsg.Record{{Value: []byte("alpha"), Headers: slices.Clone(ownHeaders)}, {Value: []byte{}}, {Key: []byte("gone")}, {Value: []byte("alpha")}}
	b := records.Batch{Header: kmsg.RecordBatch{Magic: 2, Attributes: int16(records.CodecZstd)}, Records: in}
	raw, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	stored := encrypted(t, e, "secrets", raw)
	got := mustDecode(t, stored).Records
	if got[2].Value != nil || len(got[2].Headers) != 0 {
		t.Errorf("a tombstone was changed: %q, %v", got[2].Value, got[2].Headers)
	}
	if bytes.Equal(got[0].Value, got[3].Value) {
		t.Error("two records of the same value were stored the same: the IV is not fresh")
	}
	for _, i := range []int{0, 1, 3} {
		if len(got[i].Headers) == 0 || got[i].Headers[0].Key != KroxyliciousHeaderKey {
			t.Errorf("record %d: headers %v, the marker not first", i, got[i].Headers)
			continue
		}
		r, err := proxytest.OpenKroxylicious(got[i].Headers, got[i].Value, standIn.Decrypt)
		if err != nil {
			t.Errorf("record %d: Kroxylicious' reader: %v", i, err)
			continue
		}
		v := in[i].Value
		wantParcel := append(append([]byte{byte(2 * len(v))}, v...), 0x03) // zigzag length (< 64), value, headers absent
		if r.KEKName != "KEK_secrets" || !strings.HasPrefix(r.VaultCiphertext, "vault:v1:") || !bytes.Equal(r.Parcel, wantParcel) ||
			!bytes.Equal(r.Value, v) || len(r.Headers) != len(in[i].Headers) || (len(r.Headers) > 0 && !reflect.DeepEqual(r.Headers, in[i].Headers)) {
			t.Errorf("record %d: KEK %q, EDEK %q, parcel %x (want %x), value %q, headers %v", i, r.KEKName, r.VaultCiphertext, r.Parcel, wantParcel, r.Value, r.Headers)
		}
	}
	p := fetched(t, vaultFilter(t, standIn, ""), "secrets", stored)
	if p.ErrorCode != 0 {
		t.Fatalf("the default format's fetch: error %d", p.ErrorCode)
	}
	for i, r := range mustDecode(t, p.RecordBatches).Records {
		if !bytes.Equal(r.Value, in[i].Value) || (r.Value == nil) != (in[i].Value == nil) || len(r.Headers) != len(in[i].Headers) {
			t.Errorf("record %d read back as %q, %v", i, r.Value, r.Headers)
		}
	}
}

// TestRecordFormatConfig: experimental.recordFormat picks the format written; Kroxylicious'
// needs Vault; other experimental keys are ignored, as Kroxylicious ignores them.
func TestRecordFormatConfig(t *testing.T) {
	base := `{"kms":%q,"kmsConfig":%s,"selector":"TemplateKekSelector","selectorConfig":{"template":"$(topicName)"},"experimental":%s}`
	vault, secret := `{"vaultTransitEngineUrl":"http://v/v1/transit","vaultToken":{"password":"t"}}`, `{"keyDir":"/k"}`
	for name, tc := range map[string]struct {
		kms, kmsConfig, experimental string
		kroxylicious                 bool
		wantErr                      string
	}{
		"Kroxylicious' format with Vault is written":               {kms: KMSVault, kmsConfig: vault, experimental: `{"recordFormat":"KROXYLICIOUS_V2"}`, kroxylicious: true},
		"kafkalink's format is the default":                        {kms: KMSVault, kmsConfig: vault, experimental: `{}`},
		"kafkalink's format may be named":                          {kms: KMSSecret, kmsConfig: secret, experimental: `{"recordFormat":"KAFKALINK_V1"}`},
		"Kroxylicious' tuning keys beside it are ignored":          {kms: KMSVault, kmsConfig: vault, experimental: `{"maxEncryptionsPerDek":5000,"recordFormat":"KROXYLICIOUS_V2"}`, kroxylicious: true},
		"Kroxylicious' format with a Kubernetes Secret is refused": {kms: KMSSecret, kmsConfig: secret, experimental: `{"recordFormat":"KROXYLICIOUS_V2"}`, wantErr: "Kroxylicious has no KubernetesSecretKms"},
		"an unknown format is refused, naming the two":             {kms: KMSVault, kmsConfig: vault, experimental: `{"recordFormat":"V3"}`, wantErr: `"V3" is neither KAFKALINK_V1 (the default) nor KROXYLICIOUS_V2`},
		"experimental that is no object is refused":                {kms: KMSVault, kmsConfig: vault, experimental: `"KROXYLICIOUS_V2"`, wantErr: "experimental:"},
	} {
		f, err := New(json.RawMessage(fmt.Sprintf(base, tc.kms, tc.kmsConfig, tc.experimental)))
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %v, want an error with %q", name, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case f.(*encryptor).kroxylicious != tc.kroxylicious:
			t.Errorf("%s: writes Kroxylicious' format: %v", name, f.(*encryptor).kroxylicious)
		}
	}
}

// TestKroxyliciousLookupsAreCapped: the KEK names in Kroxylicious' EDEKs cost KMS look-ups as
// kafkalink's KEK ids do: one Fetch response naming 100 of them makes at most
// maxLookupsPerRequest calls to Vault, and the partitions beyond fail retriably.
func TestKroxyliciousLookupsAreCapped(t *testing.T) {
	standIn := proxytest.NewTransit(testToken, "KEK_secrets")
	e := vaultFilter(t, standIn, "")
	w := kroxyliciousWriter(t, standIn)
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "secrets"
	for i := range int32(100) {
		w.KEKName = fmt.Sprintf("KEK_%d", i)
		headers, value, err := w.Seal([]byte("v"), nil)
		if err != nil {
			t.Fatal(err)
		}
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.RecordBatches = i, batchOf(t, kmsg.Record{Value: value, Headers: headers})
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = []kmsg.FetchResponseTopic{rt}
	before := standIn.Calls("decrypt")
	if err := e.OnResponse(t.Context(), fetchExchange(resp)); err != nil {
		t.Fatal(err)
	}
	if n := standIn.Calls("decrypt") - before; n > maxLookupsPerRequest || n == 0 {
		t.Errorf("100 KEK names made %d decrypt calls, want 1 to %d", n, maxLookupsPerRequest)
	}
	// A KEK Vault says does not exist leaves its records sealed (as a deleted KEK does); the names
	// left unlooked-up fail retriably, for a later fetch.
	retried := 0
	for _, p := range resp.Topics[0].Partitions {
		switch p.ErrorCode {
		case errKafkaStorageErr:
			retried++
		case 0:
			if r := mustDecode(t, p.RecordBatches).Records[0]; kroxyliciousHeader(r) < 0 || string(r.Value) == "v" {
				t.Errorf("partition %d: a record under a KEK that does not exist was opened", p.Partition)
			}
		default:
			t.Errorf("partition %d: error %d, want none (sealed) or KAFKA_STORAGE_ERROR", p.Partition, p.ErrorCode)
		}
	}
	if retried < 100-maxLookupsPerRequest {
		t.Errorf("%d partitions failed retriably, want at least the %d not looked up", retried, 100-maxLookupsPerRequest)
	}
}

// parcelVectors are Kroxylicious' own parcel exemplars (testdata/kroxylicious-parcels.json).
type parcelVectors struct {
	Vectors map[string]struct {
		Serialized  []byte
		Value       []byte
		ValueAbsent bool
		Headers     *[]struct{ Key, Value []byte }
	}
}

// TestKroxyliciousParcelVectors: Kroxylicious' own parcel exemplars read as Kroxylicious reads
// them, and the one the filter writes (headers absent) written byte for byte.
func TestKroxyliciousParcelVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/kroxylicious-parcels.json")
	if err != nil {
		t.Fatal(err)
	}
	var pv parcelVectors
	if err := json.Unmarshal(raw, &pv); err != nil || len(pv.Vectors) != 8 {
		t.Fatalf("%d vectors: %v", len(pv.Vectors), err)
	}
	for name, v := range pv.Vectors {
		p, err := readParcelV1(v.Serialized)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.valueAbsent != v.ValueAbsent || !bytes.Equal(p.value, v.Value) || (p.value == nil) != (v.Value == nil) || p.headersAbsent != (v.Headers == nil) {
			t.Errorf("%s: value %q (absent %v), headers absent %v", name, p.value, p.valueAbsent, p.headersAbsent)
		}
		if v.Headers != nil {
			var want []kmsg.Header
			for _, h := range *v.Headers {
				want = append(want, kmsg.Header{Key: string(h.Key), Value: h.Value})
			}
			if len(p.headers) != len(want) || (len(want) > 0 && !reflect.DeepEqual(p.headers, want)) {
				t.Errorf("%s: headers %v, want %v", name, p.headers, want)
			}
		}
		if v.Headers == nil && !v.ValueAbsent {
			if got := appendParcelV1(nil, v.Value); !bytes.Equal(got, v.Serialized) {
				t.Errorf("%s: written as %x, Kroxylicious' exemplar is %x", name, got, v.Serialized)
			}
		}
	}
}

// FuzzKroxyliciousV2: any bytes as a value marked as Kroxylicious' (wrapper), and any bytes as
// the parcel inside a wrapper that decrypts (parcel), give a partition error or a record, never
// a panic; a parcel the parser takes gives that parcel's value, one it refuses an error.
func FuzzKroxyliciousV2(f *testing.F) {
	e, _ := newTestFilter(f, "")
	e.guard.limiter.SetLimit(rate.Inf)
	dek, edek, err := e.kms.GenerateDEK(f.Context(), "KEK_secrets")
	if err != nil {
		f.Fatal(err)
	}
	w := proxytest.KroxyliciousWriter{DEK: dek, KEKName: "KEK_secrets", VaultCiphertext: string(edek)}
	_, real, err := w.Seal([]byte("hi -n\n"), nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range [][2][]byte{
		{real, {0x0c, 'h', 'i', ' ', '-', 'n', '\n', 0x03}},
		{{0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0}, {0xfe, 0xff, 0xff, 0xff, 0x0f, 0x03}},                                                    // EDEK and value lengths of 2^31 and more
		{{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}}, // overflowing varints
		{{0, 3, 1, 'K', 'x', 0, 1, 2, 3}, {0x01, 0x01}},                                                                                 // an IV cut short; null value and headers
		{{0, 3, 1, 'K', 'x', 1}, {0x03, 0x03}},                                                                                          // AAD id 1; both absent
		{{1}, {0x05, 0x03}},                                                                                                             // cipher id 1; value length -3
		{{}, {0x00, 0xfe, 0xff, 0xff, 0xff, 0x0f}},                                                                                      // empty; a header count of 2^31-1
		{{0, 0x80, 0x80, 0x80, 0x80, 0x80}, {0x00, 0x02, 0xff, 0xff, 0xff, 0xff, 0x0f}},                                                 // an unfinished varint; a header key of 2^32-1
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, wrapper, parcel []byte) {
		if wrapper == nil {
			wrapper = []byte{} // a null value is never opened: not this target's subject
		}
		marked := []kmsg.Header{{Key: KroxyliciousHeaderKey, Value: []byte{KroxyliciousV2}}}
		p := fetched(t, e, "secrets", batchOf(t, kmsg.Record{Value: wrapper, Headers: marked}))
		// A value that does not decrypt fails its partition, or, under a KEK the KMS says does not
		// exist, is handed out as stored: sealed and marked, never as if it were the record.
		if r := mustDecodeOrNil(t, p.RecordBatches); p.ErrorCode == 0 && r != nil && !bytes.Equal(r.Records[0].Value, []byte("hi -n\n")) &&
			(!bytes.Equal(r.Records[0].Value, wrapper) || kroxyliciousHeader(r.Records[0]) < 0) {
			t.Fatal("a value that did not decrypt was handed out as a record")
		}
		sealed := append(appendWrapperV2Prefix(nil, "KEK_secrets", edek), make([]byte, v2IVLen)...)
		aead, err := newGCM(dek)
		if err != nil {
			t.Fatal(err)
		}
		sealed = aead.Seal(sealed, make([]byte, v2IVLen), parcel, nil)
		want, perr := readParcelV1(bytes.Clone(parcel))
		p = fetched(t, e, "secrets", batchOf(t, kmsg.Record{Value: sealed, Headers: marked}))
		switch got := mustDecodeOrNil(t, p.RecordBatches); {
		case perr != nil && p.ErrorCode != errKafkaStorageErr:
			t.Fatalf("a parcel the parser refuses (%v): error %d", perr, p.ErrorCode)
		case perr == nil && p.ErrorCode != 0:
			t.Fatalf("a parcel the parser takes: error %d", p.ErrorCode)
		case perr == nil && !want.valueAbsent && !bytes.Equal(got.Records[0].Value, want.value):
			t.Fatalf("value %q, the parcel's %q", got.Records[0].Value, want.value)
		case perr == nil && want.valueAbsent && !bytes.Equal(got.Records[0].Value, sealed):
			t.Fatal("an absent value did not give back the record's own")
		}
	})
}

func mustDecodeOrNil(t *testing.T, raw []byte) *records.Batch {
	if raw == nil {
		return nil
	}
	return mustDecode(t, raw)
}

func fetchExchange(resp *kmsg.FetchResponse) *filter.Exchange {
	return &filter.Exchange{Key: kmsg.Fetch.Int16(), Request: kmsg.NewPtrFetchRequest(), Response: resp}
}

// TestMalformedParcelsRefused: a parcel that decrypted but does not parse is refused; nothing
// is allocated for the lengths it announces.
func TestMalformedParcelsRefused(t *testing.T) {
	for name, parcel := range map[string][]byte{
		"bytes after the headers":                    {0x02, 'v', 0x03, 0x00},
		"a value length of -3":                       {0x05, 0x03},
		"a value longer than the parcel":             {0x0a, 'v', 0x03},
		"a value length past 32 bits":                {0x80, 0x80, 0x80, 0x80, 0x10, 0x03},
		"a header count larger than its bytes allow": {0x02, 'v', 0xfe, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x00},
		"a header value length of -2":                {0x02, 'v', 0x02, 0x01, 'k', 0x03},
		"a header key longer than the parcel":        {0x02, 'v', 0x02, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00},
		"no header count":                            {0x02, 'v'},
		"nothing":                                    {},
	} {
		if p, err := readParcelV1(parcel); err == nil {
			t.Errorf("%s: read as value %q, %d headers", name, p.value, len(p.headers))
		}
	}
	huge := []byte{0x02, 'v', 0xfe, 0xff, 0xff, 0xff, 0x0f}
	if testing.AllocsPerRun(100, func() { _, _ = readParcelV1(huge) }) > 0 {
		t.Error("a header count of 2^31-1 over no bytes allocated")
	}
}
