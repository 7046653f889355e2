package proxytest

// An implementation of Kroxylicious' record encryption format (encryption version 2: wrapper V2
// around parcel V1, AES-256-GCM, Vault EDEKs) that shares no code with the RecordEncryption
// filter's, so that tests can write records as Kroxylicious would and read what the filter
// writes as Kroxylicious would. It follows the grammar in Kroxylicious' WrapperV2, ParcelV1 and
// VaultEdekSerde (docs/record-encryption.md describes it), with Kafka's ByteUtils varints
// written out by hand.

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// KroxyliciousMarker is the header Kroxylicious puts first on every record it encrypts.
const KroxyliciousMarker = "kroxylicious.io/encryption"

// KroxyliciousWriter writes records as Kroxylicious' RecordEncryption filter does, under one DEK
// that Vault's datakey endpoint made.
type KroxyliciousWriter struct {
	DEK             []byte
	KEKName         string // the transit key's name
	VaultCiphertext string // vault:vN:…, the DEK wrapped by Vault
	// ParcelHeaders encrypts the headers with the value (Kroxylicious' RECORD_HEADER_VALUES,
	// which its filter does not use by default).
	ParcelHeaders bool
}

// Seal returns the headers and value of a record as Kroxylicious stores it. A null value is
// left as it is, unmarked.
func (w KroxyliciousWriter) Seal(value []byte, headers []kmsg.Header) ([]kmsg.Header, []byte, error) {
	if value == nil {
		return headers, nil, nil
	}
	var parcel bytes.Buffer
	putVarint(&parcel, int32(len(value)))
	parcel.Write(value)
	if w.ParcelHeaders {
		putVarint(&parcel, int32(len(headers)))
		for _, h := range headers {
			putUnsignedVarint(&parcel, uint32(len(h.Key)))
			parcel.WriteString(h.Key)
			if h.Value == nil {
				putVarint(&parcel, -1)
			} else {
				putVarint(&parcel, int32(len(h.Value)))
				parcel.Write(h.Value)
			}
		}
	} else {
		putVarint(&parcel, -2)
	}
	var edek bytes.Buffer
	putUnsignedVarint(&edek, uint32(len(w.KEKName)))
	edek.WriteString(w.KEKName)
	edek.WriteString(w.VaultCiphertext)

	var out bytes.Buffer
	out.WriteByte(0) // AES_256_GCM_128
	putUnsignedVarint(&out, uint32(edek.Len()))
	out.Write(edek.Bytes())
	out.WriteByte(0) // AAD none
	iv := make([]byte, 12)
	_, _ = rand.Read(iv)
	out.Write(iv)
	block, err := aes.NewCipher(w.DEK)
	if err != nil {
		return nil, nil, err
	}
	g, _ := cipher.NewGCM(block)
	out.Write(g.Seal(nil, iv, parcel.Bytes(), nil))

	marked := []kmsg.Header{{Key: KroxyliciousMarker, Value: []byte{2}}}
	if !w.ParcelHeaders {
		marked = append(marked, headers...)
	}
	return marked, out.Bytes(), nil
}

// KroxyliciousRecord is a record read as Kroxylicious reads it.
type KroxyliciousRecord struct {
	KEKName, VaultCiphertext string
	Parcel                   []byte // the decrypted parcel, as it was sealed
	Value                    []byte // nil: null
	Headers                  []kmsg.Header
}

// OpenKroxylicious reads a stored record as Kroxylicious does, unwrapping its DEK with unwrap
// (Vault's decrypt endpoint).
func OpenKroxylicious(headers []kmsg.Header, value []byte, unwrap func(kekName, ciphertext string) ([]byte, error)) (KroxyliciousRecord, error) {
	var out KroxyliciousRecord
	marker := -1
	for i, h := range headers {
		if h.Key == KroxyliciousMarker {
			marker = i
			break
		}
	}
	if marker < 0 || !bytes.Equal(headers[marker].Value, []byte{2}) {
		return out, errors.New("no kroxylicious.io/encryption header of version 2")
	}
	r := bytes.NewReader(value)
	edek, err := readWrapperHead(r)
	if err != nil {
		return out, err
	}
	er := bytes.NewReader(edek)
	kekName, err := readN(er, int(readUnsignedVarint(er)))
	if err != nil {
		return out, err
	}
	ct, _ := readN(er, er.Len())
	out.KEKName, out.VaultCiphertext = string(kekName), string(ct)
	dek, err := unwrap(out.KEKName, out.VaultCiphertext)
	if err != nil {
		return out, err
	}
	iv, err := readN(r, 12)
	if err != nil {
		return out, err
	}
	sealed, _ := readN(r, r.Len())
	block, err := aes.NewCipher(dek)
	if err != nil {
		return out, err
	}
	g, _ := cipher.NewGCM(block)
	if out.Parcel, err = g.Open(nil, iv, sealed, nil); err != nil {
		return out, err
	}
	return out, readParcel(&out, headers, marker)
}

// readWrapperHead reads a wrapper up to its IV and returns the EDEK.
func readWrapperHead(r *bytes.Reader) ([]byte, error) {
	if c, _ := r.ReadByte(); c != 0 {
		return nil, fmt.Errorf("cipher id %d, not AES_256_GCM_128 (0)", c)
	}
	edek, err := readN(r, int(readUnsignedVarint(r)))
	if err != nil {
		return nil, err
	}
	if a, _ := r.ReadByte(); a != 0 {
		return nil, fmt.Errorf("AAD id %d, not NONE (0)", a)
	}
	return edek, nil
}

// readParcel fills out's value and headers from its parcel.
func readParcel(out *KroxyliciousRecord, stored []kmsg.Header, marker int) error {
	p := bytes.NewReader(out.Parcel)
	switch n := readVarint(p); {
	case n == -1:
	case n >= 0:
		var err error
		if out.Value, err = readN(p, int(n)); err != nil {
			return err
		}
	default:
		return fmt.Errorf("value length %d", n)
	}
	switch n := readVarint(p); {
	case n == -2 && marker == 0:
		out.Headers = stored[1:]
	case n == -2:
		out.Headers = stored
	case n >= 0:
		for range n {
			key, err := readN(p, int(readUnsignedVarint(p)))
			if err != nil {
				return err
			}
			h := kmsg.Header{Key: string(key)}
			if l := readVarint(p); l >= 0 {
				if h.Value, err = readN(p, int(l)); err != nil {
					return err
				}
			}
			out.Headers = append(out.Headers, h)
		}
	default:
		return fmt.Errorf("header count %d", n)
	}
	if p.Len() != 0 {
		return fmt.Errorf("%d bytes after the parcel", p.Len())
	}
	return nil
}

// readN reads n bytes, which must be there.
func readN(r *bytes.Reader, n int) ([]byte, error) {
	if n < 0 || n > r.Len() {
		return nil, fmt.Errorf("%d bytes announced, %d left", n, r.Len())
	}
	b := make([]byte, n)
	_, _ = r.Read(b)
	return b, nil
}

// putUnsignedVarint and putVarint are Kafka's ByteUtils.writeUnsignedVarint and writeVarint.
func putUnsignedVarint(b *bytes.Buffer, v uint32) {
	for v&^0x7f != 0 {
		b.WriteByte(byte(v&0x7f | 0x80))
		v >>= 7
	}
	b.WriteByte(byte(v))
}

func putVarint(b *bytes.Buffer, v int32) { putUnsignedVarint(b, uint32(v<<1)^uint32(v>>31)) }

// readUnsignedVarint and readVarint are Kafka's ByteUtils.readUnsignedVarint and readVarint,
// for the records tests write and the filter writes: bytes cut short read as zeros.
func readUnsignedVarint(r *bytes.Reader) uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c, _ := r.ReadByte()
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			break
		}
	}
	return v
}

func readVarint(r *bytes.Reader) int32 {
	u := readUnsignedVarint(r)
	return int32(u>>1) ^ -int32(u&1)
}
