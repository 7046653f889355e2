package encryption

// Kroxylicious' record format: read always, beside kafkalink's own, and written instead of it
// when experimental.recordFormat is KROXYLICIOUS_V2, so that a topic can move from Kroxylicious
// to kafkalink-proxy (and back) without re-encrypting it. docs/record-encryption.md has the
// format byte by byte; this file is written from that description, not from Kroxylicious' code.

import (
	"bytes"
	"context"
	"crypto/cipher"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/filter/records"
)

const (
	// KroxyliciousHeaderKey marks a record encrypted in Kroxylicious' format; its one-byte value
	// is Kroxylicious' encryption version.
	KroxyliciousHeaderKey = "kroxylicious.io/encryption"
	// KroxyliciousV2 is the encryption version read and written: wrapper V2 around parcel V1.
	KroxyliciousV2 byte = 2
	// kroxyliciousRetired is Kroxylicious' pre-release version, which Kroxylicious no longer
	// reads either: nothing released wrote it.
	kroxyliciousRetired byte = 1

	v2CipherAESGCM byte = 0 // AES-256-GCM with a 12-byte IV and a 128-bit tag
	v2AADNone      byte = 0 // no additional data
	v2IVLen             = 12

	// Parcel V1's zigzag lengths below zero.
	parcelNull   = -1
	parcelAbsent = -2 // the field was not parcelled: the record's own is used
)

// The record formats experimental.recordFormat names.
const (
	FormatKafkalinkV1    = "KAFKALINK_V1"
	FormatKroxyliciousV2 = "KROXYLICIOUS_V2"
)

// writesKroxylicious reads experimental.recordFormat. The other experimental keys are left to
// whoever knows them (Kroxylicious' own tuning knobs among them), as Kroxylicious ignores the
// keys it does not know.
func writesKroxylicious(experimental json.RawMessage, kms string) (bool, error) {
	var x struct {
		RecordFormat string `json:"recordFormat"`
	}
	if len(experimental) > 0 {
		if err := json.Unmarshal(experimental, &x); err != nil {
			return false, fmt.Errorf("experimental: %w", err)
		}
	}
	switch x.RecordFormat {
	case "", FormatKafkalinkV1:
		return false, nil
	case FormatKroxyliciousV2:
		if kms != KMSVault {
			return false, fmt.Errorf("experimental.recordFormat: %s needs kms %s: Kroxylicious has no %s, so it could not unwrap the DEKs of records written in its format with one",
				FormatKroxyliciousV2, KMSVault, kms)
		}
		return true, nil
	default:
		return false, fmt.Errorf("experimental.recordFormat: %q is neither %s (the default) nor %s", x.RecordFormat, FormatKafkalinkV1, FormatKroxyliciousV2)
	}
}

// rewriter seals one batch's values under d in the format the filter writes, and says how many
// records have a value to seal.
func (e *encryptor) rewriter(b *records.Batch, kekID, topic string, d *dekState, first uint64) (*records.Rewrite, int) {
	if e.kroxylicious {
		s := newKroxyliciousSealer(b, kekID, d, first)
		return s.rewrite(), s.values
	}
	s := newSealer(b, kekID, topic, d, first)
	return s.rewrite(), s.values
}

// kroxyliciousSealer writes one batch's values in Kroxylicious' format under one DEK: the
// prefix (cipher id, the Vault EDEK, AAD id) is the same for all.
type kroxyliciousSealer struct {
	batch  *records.Batch
	d      *dekState
	first  uint64 // the nonce counter of the batch's first record
	prefix []byte
	values int // records with a value, which are encrypted
}

func newKroxyliciousSealer(b *records.Batch, kekID string, d *dekState, first uint64) *kroxyliciousSealer {
	// Kroxylicious marks a record by its first header, and on fetch removes the marker only from
	// there. Null values stay null and unmarked; empty values are encrypted.
	values := 0
	for i := range b.Records {
		if r := &b.Records[i]; r.Value != nil {
			r.Headers = slices.Insert(r.Headers, 0, kmsg.Header{Key: KroxyliciousHeaderKey, Value: []byte{KroxyliciousV2}})
			values++
		}
	}
	return &kroxyliciousSealer{batch: b, d: d, first: first, prefix: appendWrapperV2Prefix(nil, kekID, d.edek), values: values}
}

func (s *kroxyliciousSealer) rewrite() *records.Rewrite {
	return &records.Rewrite{
		Len: func(i int) int {
			v := s.batch.Records[i].Value
			if v == nil {
				return -1
			}
			return len(s.prefix) + v2IVLen + parcelV1Len(v) + s.d.aead.Overhead()
		},
		Append: func(dst []byte, i int) ([]byte, error) {
			iv := s.d.nonce(s.first + uint64(i))
			dst = append(append(dst, s.prefix...), iv[:]...)
			start := len(dst)
			// The parcel is written where its ciphertext goes and sealed in place.
			dst = appendParcelV1(dst, s.batch.Records[i].Value)
			return s.d.aead.Seal(dst[:start], iv[:], dst[start:], nil), nil
		},
	}
}

// appendWrapperV2Prefix appends what comes before a wrapper V2's IV: the cipher id, the Vault
// EDEK with its length, and the AAD id.
func appendWrapperV2Prefix(dst []byte, kekID string, vaultCiphertext []byte) []byte {
	edekLen := uvarintLen(uint64(len(kekID))) + len(kekID) + len(vaultCiphertext)
	dst = append(dst, v2CipherAESGCM)
	dst = binary.AppendUvarint(dst, uint64(edekLen))
	dst = appendVaultEdek(dst, kekID, vaultCiphertext)
	return append(dst, v2AADNone)
}

// appendVaultEdek is Kroxylicious' Vault EDEK: the KEK name with its length, then Vault's
// ciphertext string to the end (no length: the wrapper's EDEK length bounds it).
func appendVaultEdek(dst []byte, kekName string, vaultCiphertext []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(kekName)))
	return append(append(dst, kekName...), vaultCiphertext...)
}

// appendParcelV1 is the parcel Kroxylicious writes: the value, and its headers absent (they
// stay in the record, in the clear).
func appendParcelV1(dst, value []byte) []byte {
	dst = binary.AppendVarint(dst, int64(len(value)))
	dst = append(dst, value...)
	return binary.AppendVarint(dst, parcelAbsent)
}

func parcelV1Len(value []byte) int {
	return uvarintLen(zigzag(int64(len(value)))) + len(value) + uvarintLen(zigzag(parcelAbsent))
}

func zigzag(n int64) uint64 { return uint64(n<<1) ^ uint64(n>>63) }

func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// kroxyliciousHeader is the index of Kroxylicious' marker: the first header with its key, the
// one Kroxylicious reads; -1 when there is none.
func kroxyliciousHeader(r kmsg.Record) int {
	for i := range r.Headers {
		if r.Headers[i].Key == KroxyliciousHeaderKey {
			return i
		}
	}
	return -1
}

// isKroxylicious reports whether a record is read in Kroxylicious' format. A record carries both
// markers when a client's own headers used the other format's key; which one the filter added is
// then told by the value's first byte, which the formats never share: kafkalink's version 0x01,
// Kroxylicious' cipher id 0x00.
func isKroxylicious(r kmsg.Record) bool {
	if kroxyliciousHeader(r) < 0 {
		return false
	}
	return encryptedHeader(r) < 0 || len(r.Value) > 0 && r.Value[0] == v2CipherAESGCM
}

// decryptKroxylicious opens a record in Kroxylicious' format: its value and, when they were
// parcelled, its headers. A record it cannot read fails as a malformed kafkalink value does.
func (e *encryptor) decryptKroxylicious(ctx context.Context, r *kmsg.Record, l *lookups, last *openedDEK) error {
	hi := kroxyliciousHeader(*r)
	if r.Value == nil {
		return nil // Kroxylicious never marks a null value: nothing to open
	}
	if err := kroxyliciousVersion(r.Headers[hi].Value); err != nil {
		return err
	}
	w, err := parseWrapperV2(r.Value)
	if err != nil {
		return err
	}
	aead, err := e.openedFor(ctx, w.kekName, w.vaultCiphertext, l, last)
	if err != nil {
		return err
	}
	// Decrypted in place, as kafkalink's values are; Kroxylicious binds no additional data.
	plain, err := aead.Open(w.ciphertext[:0], w.iv, w.ciphertext, nil)
	if err != nil {
		return fmt.Errorf("a record in Kroxylicious' format does not decrypt: %w", err)
	}
	p, err := readParcelV1(plain)
	if err != nil {
		return err
	}
	switch {
	case p.valueAbsent:
		// The record's own value, which is the wrapper as fetched: GCM is deterministic for a key
		// and IV, so sealing the parcel again gives back the bytes decrypted over.
		r.Value = append(bytes.Clone(r.Value[:len(r.Value)-len(w.ciphertext)]), aead.Seal(nil, w.iv, plain, nil)...)
	case p.value == nil:
		r.Value = nil
	default:
		r.Value = p.value
	}
	switch {
	case !p.headersAbsent:
		r.Headers = p.headers
	case hi == 0:
		r.Headers = r.Headers[1:]
	}
	return nil
}

// Why a value in Kroxylicious' format is refused: made once, as refusals may be many.
var (
	errV2Marker          = fmt.Errorf("%w: the "+KroxyliciousHeaderKey+" header is not one byte", errMalformedValue)
	errV2Retired         = fmt.Errorf("%w: Kroxylicious' encryption version 1 is retired (Kroxylicious no longer reads it either)", errMalformedValue)
	errV2Version         = fmt.Errorf("%w: an unknown Kroxylicious encryption version (2 is read)", errMalformedValue)
	errV2Cipher          = fmt.Errorf("%w: the cipher is not AES-256-GCM (id 0)", errMalformedValue)
	errV2EDEK            = fmt.Errorf("%w: the EDEK is longer than the value", errMalformedValue)
	errV2VaultEDEK       = fmt.Errorf("%w: the EDEK is no Vault EDEK", errMalformedValue)
	errV2AAD             = fmt.Errorf("%w: the AAD is not none (id 0)", errMalformedValue)
	errV2IV              = fmt.Errorf("%w: the IV is cut short", errMalformedValue)
	errParcelValue       = fmt.Errorf("%w: the parcel's value length is wrong", errMalformedValue)
	errParcelHeaders     = fmt.Errorf("%w: the parcel's header count is wrong", errMalformedValue)
	errParcelTrailing    = fmt.Errorf("%w: bytes after the parcel", errMalformedValue)
	errParcelHeaderKey   = fmt.Errorf("%w: a parcelled header key is longer than the parcel", errMalformedValue)
	errParcelHeaderValue = fmt.Errorf("%w: a parcelled header value length is wrong", errMalformedValue)
)

// kroxyliciousVersion checks the marker's value: Kroxylicious' encryption version, one byte.
func kroxyliciousVersion(v []byte) error {
	switch {
	case len(v) != 1:
		return errV2Marker
	case v[0] == kroxyliciousRetired:
		return errV2Retired
	case v[0] != KroxyliciousV2:
		return errV2Version
	}
	return nil
}

// openedFor is the DEK a record names, the previous record's when it names the same one. The
// KEK name is checked and looked up as a kafkalink record's KEK id is.
func (e *encryptor) openedFor(ctx context.Context, kekName, edek []byte, l *lookups, last *openedDEK) (cipher.AEAD, error) {
	if last.aead != nil && bytes.Equal(kekName, last.kekID) && bytes.Equal(edek, last.edek) {
		return last.aead, nil
	}
	if !legalKEKID(string(kekName)) {
		return nil, errMalformedValue
	}
	aead, err := e.openDEK(ctx, string(kekName), edek, l)
	if err != nil {
		return nil, err
	}
	last.set(kekName, edek, aead)
	return aead, nil
}

// wrapperV2 is a parsed wrapper V2; its fields are slices of the value.
type wrapperV2 struct {
	kekName, vaultCiphertext []byte // the Vault EDEK
	iv                       []byte
	ciphertext               []byte // the parcel's ciphertext, then the tag
}

// parseWrapperV2 parses an encrypted value. Every length is checked against the bytes left
// before it is used, so a value announcing more than it holds is refused, never allocated for.
func parseWrapperV2(v []byte) (wrapperV2, error) {
	var w wrapperV2
	if len(v) == 0 || v[0] != v2CipherAESGCM {
		return w, errV2Cipher
	}
	edek, rest, ok := uvarintField(v[1:])
	if !ok {
		return w, errV2EDEK
	}
	if w.kekName, w.vaultCiphertext, ok = parseVaultEdek(edek); !ok {
		return w, errV2VaultEDEK
	}
	if len(rest) == 0 || rest[0] != v2AADNone {
		return w, errV2AAD
	}
	if rest = rest[1:]; len(rest) < v2IVLen {
		return w, errV2IV
	}
	w.iv, w.ciphertext = rest[:v2IVLen], rest[v2IVLen:]
	return w, nil
}

// parseVaultEdek splits Kroxylicious' Vault EDEK into the KEK name and Vault's ciphertext.
func parseVaultEdek(b []byte) (kekName, vaultCiphertext []byte, ok bool) {
	kekName, rest, ok := uvarintField(b)
	if !ok || len(rest) == 0 {
		return nil, nil, false
	}
	return kekName, rest, true
}

// uvarintField splits off an unsigned-varint length and that many bytes.
func uvarintField(b []byte) (field, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// parcelV1 is a decrypted parcel; value and header values are slices of it.
type parcelV1 struct {
	value         []byte // nil: a null value
	valueAbsent   bool
	headers       []kmsg.Header // nil: null headers (none)
	headersAbsent bool          // the record's own headers are kept
}

// readParcelV1 parses a parcel. Counts and lengths are checked against the bytes left, so
// nothing is allocated beyond what the parcel holds; bytes after it make it malformed.
func readParcelV1(b []byte) (parcelV1, error) {
	var p parcelV1
	n, b, ok := zigzagField(b)
	switch {
	case !ok || n < parcelAbsent || n > int64(len(b)):
		return p, errParcelValue
	case n == parcelAbsent:
		p.valueAbsent = true
	case n >= 0:
		p.value, b = b[:n:n], b[n:] // not nil when empty: b is a slice of the parcel
	}
	if n, b, ok = zigzagField(b); !ok || n < parcelAbsent || n > int64(len(b)/2) {
		return p, errParcelHeaders
	}
	p.headersAbsent = n == parcelAbsent
	if n >= 0 {
		var err error
		if p.headers, b, err = readParcelHeaders(b, int(n)); err != nil {
			return p, err
		}
	}
	if len(b) != 0 {
		return p, errParcelTrailing
	}
	return p, nil
}

// readParcelHeaders reads n headers (n at most half the bytes: each takes two at least).
func readParcelHeaders(b []byte, n int) ([]kmsg.Header, []byte, error) {
	headers := make([]kmsg.Header, 0, n)
	for range n {
		key, rest, ok := uvarintField(b)
		if !ok {
			return nil, nil, errParcelHeaderKey
		}
		l, rest, ok := zigzagField(rest)
		if !ok || l < parcelNull || l > int64(len(rest)) {
			return nil, nil, errParcelHeaderValue
		}
		h := kmsg.Header{Key: string(key)}
		if l >= 0 {
			h.Value, rest = rest[:l:l], rest[l:]
		}
		headers, b = append(headers, h), rest
	}
	return headers, b, nil
}

// zigzagField splits off a zigzag varint of Kafka's (32 bits).
func zigzagField(b []byte) (int64, []byte, bool) {
	n, k := binary.Varint(b)
	if k <= 0 || n != int64(int32(n)) {
		return 0, nil, false
	}
	return n, b[k:], true
}
