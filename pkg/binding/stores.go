package binding

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	pkcs12 "software.sslmate.com/src/go-pkcs12"

	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// Entries of Strimzi's Secrets that kafkalink reads.
const (
	caCertEntry       = strimzi.CACertKey
	caP12Entry        = "ca.p12"
	caPasswordEntry   = "ca.password"
	userCertEntry     = "user.crt"
	userKeyEntry      = "user.key"
	userP12Entry      = "user.p12"
	userPasswordEntry = "user.password"
	userSCRAMPassword = "password"
)

// Aliases inside the stores kafkalink builds.
const (
	truststoreAliasPrefix = "ca-"
	keystoreAlias         = "user"
)

// parseCertificates reads every CERTIFICATE block of a PEM entry. It refuses entries without one
// (CertificateNotPEM) and blocks that are not X.509 (CertificateInvalid); other PEM block types
// are skipped, as Kafka clients skip them.
func parseCertificates(data []byte, where string) ([]*x509.Certificate, *Failure) {
	var out []*x509.Certificate
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fail(ReasonCertificateInvalid, fmt.Sprintf("%s holds a PEM certificate that is not valid X.509: %v", where, err))
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fail(ReasonCertificateNotPEM, fmt.Sprintf("%s does not hold a PEM certificate", where))
	}
	return out, nil
}

// appendUnique appends the certificates not already in list, keeping first-seen order.
func appendUnique(list []*x509.Certificate, seen map[string]bool, certs ...*x509.Certificate) []*x509.Certificate {
	for _, c := range certs {
		k := string(c.Raw)
		if !seen[k] {
			seen[k] = true
			list = append(list, c)
		}
	}
	return list
}

// encodeCertsPEM writes certificates as canonical PEM, so that comments, whitespace or other
// block types in the source never reach the binding.
func encodeCertsPEM(certs []*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

// parsePrivateKey reads an unencrypted PEM private key in PKCS#8, PKCS#1 or SEC 1 form.
func parsePrivateKey(data []byte, where string) (crypto.Signer, *Failure) {
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, fail(ReasonPrivateKeyInvalid, fmt.Sprintf("%s does not hold a PEM private key", where))
		}
		var (
			key any
			err error
		)
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "ENCRYPTED PRIVATE KEY":
			return nil, fail(ReasonPrivateKeyInvalid, fmt.Sprintf("%s holds an encrypted private key", where))
		default:
			continue
		}
		if err != nil {
			return nil, fail(ReasonPrivateKeyInvalid, fmt.Sprintf("%s holds a %s block that does not parse: %v", where, block.Type, err))
		}
		switch k := key.(type) {
		case *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey:
			return k.(crypto.Signer), nil
		default:
			return nil, fail(ReasonPrivateKeyInvalid, fmt.Sprintf("%s holds a private key of unsupported type %T", where, key))
		}
	}
}

// publicKeyMatches reports whether the certificate carries the key's public half.
func publicKeyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	pub, ok := key.Public().(equaler)
	return ok && pub.Equal(cert.PublicKey)
}

// detReader is a deterministic byte stream (SHA-256 in counter mode over a seed). The PKCS12 and
// JKS encoders draw salts and IVs from it instead of crypto/rand, so the same inputs give
// byte-identical stores and reconciles never rewrite the Secret. Salts and IVs still differ
// whenever the content or the password differs, which is what they are for here.
type detReader struct {
	seed [32]byte
	ctr  uint64
	buf  []byte
}

// newDetReader is a detReader seeded from a domain (one per store kind) and the store's inputs.
func newDetReader(domain string, parts ...[]byte) *detReader {
	return &detReader{seed: digest(domain, parts...)}
}

// Read fills p from the stream; it never fails.
func (r *detReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.buf) == 0 {
			var block [40]byte
			copy(block[:32], r.seed[:])
			binary.BigEndian.PutUint64(block[32:], r.ctr)
			r.ctr++
			sum := sha256.Sum256(block[:])
			r.buf = sum[:]
		}
		c := copy(p[n:], r.buf)
		r.buf = r.buf[c:]
		n += c
	}
	return n, nil
}

var _ io.Reader = (*detReader)(nil)

// digest hashes a domain label and length-prefixed parts, so no two part lists collide.
func digest(domain string, parts ...[]byte) [32]byte {
	h := sha256.New()
	var l [8]byte
	for _, p := range append([][]byte{[]byte(domain)}, parts...) {
		binary.BigEndian.PutUint64(l[:], uint64(len(p)))
		h.Write(l[:])
		h.Write(p)
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// derivedTruststorePassword is the truststore password when the CA Secret has none. It guards
// public certificates only (stores need a password for their integrity check), so deriving it
// from them is enough and keeps it stable.
func derivedTruststorePassword(certs []*x509.Certificate) string {
	parts := make([][]byte, len(certs))
	for i, c := range certs {
		parts[i] = c.Raw
	}
	d := digest("kafkalink truststore password", parts...)
	return hex.EncodeToString(d[:16])
}

// derivedKeystorePassword is the keystore password when the user Secret has none. It is keyed by
// the private key itself, so only someone who already holds the key can compute it.
func derivedKeystorePassword(keyDER []byte) string {
	m := hmac.New(sha256.New, keyDER)
	m.Write([]byte("kafkalink keystore password"))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// sameCertSet reports whether two lists hold the same certificates, in any order.
func sameCertSet(a, b []*x509.Certificate) bool {
	if len(a) != len(b) {
		return false
	}
	set := make(map[string]int, len(a))
	for _, c := range a {
		set[string(c.Raw)]++
	}
	for _, c := range b {
		k := string(c.Raw)
		if set[k] == 0 {
			return false
		}
		set[k]--
	}
	return true
}

// truststoreP12 returns the source PKCS12 truststore when it holds exactly the wanted certificates
// under the given password (Strimzi's ca.p12, as the proposal says), or a new one built
// deterministically.
func truststoreP12(certs []*x509.Certificate, password string, source []byte) ([]byte, *Failure) {
	if len(source) > 0 && cheapToDecode(source) {
		if got, err := pkcs12.DecodeTrustStore(source, password); err == nil && sameCertSet(got, certs) {
			// A copy, because the source is a lister's Secret and the result becomes the caller's.
			return bytes.Clone(source), nil
		}
	}
	entries := make([]pkcs12.TrustStoreEntry, len(certs))
	parts := [][]byte{[]byte(password)}
	for i, c := range certs {
		// Numbered names, because renewed CA certificates can share a subject and Java would
		// then keep only one of them.
		entries[i] = pkcs12.TrustStoreEntry{Cert: c, FriendlyName: fmt.Sprintf("%s%d", truststoreAliasPrefix, i)}
		parts = append(parts, c.Raw)
	}
	enc := pkcs12.Modern2023.WithRand(newDetReader("kafkalink truststore p12", parts...))
	out, err := enc.EncodeTrustStoreEntries(entries, password)
	if err != nil {
		return nil, fail(ReasonStoreEncodingFailed, fmt.Sprintf("encoding the PKCS12 truststore: %v", err))
	}
	return out, nil
}

// truststoreJKS builds a JKS truststore; JKS has no random parts except the entry dates, which
// come from the certificates.
func truststoreJKS(certs []*x509.Certificate, password string) ([]byte, *Failure) {
	ks := keystore.New(keystore.WithOrderedAliases(), keystore.WithCustomRandomNumberGenerator(newDetReader("kafkalink truststore jks")))
	for i, c := range certs {
		err := ks.SetTrustedCertificateEntry(fmt.Sprintf("%s%d", truststoreAliasPrefix, i), keystore.TrustedCertificateEntry{
			CreationTime: c.NotBefore.UTC(),
			Certificate:  keystore.Certificate{Type: "X509", Content: c.Raw},
		})
		if err != nil {
			return nil, fail(ReasonStoreEncodingFailed, fmt.Sprintf("encoding the JKS truststore: %v", err))
		}
	}
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(password)); err != nil {
		return nil, fail(ReasonStoreEncodingFailed, fmt.Sprintf("encoding the JKS truststore: %v", err))
	}
	return b.Bytes(), nil
}

// keystoreP12 builds the PKCS12 keystore deterministically. Unlike the truststore it never reuses
// the source user.p12: checking that one holds the right key means decrypting a key bag whose
// PBKDF iteration count can hide inside an encrypted safe, where cheapToDecode cannot see it, so
// a hand-made user.p12 could stall a worker. The source password is still used, so the result is
// as stable as a reused store would be.
func keystoreP12(key crypto.Signer, keyDER []byte, chain []*x509.Certificate, password string) ([]byte, *Failure) {
	parts := [][]byte{[]byte(password), keyDER}
	for _, c := range chain {
		parts = append(parts, c.Raw)
	}
	enc := pkcs12.Modern2023.WithRand(newDetReader("kafkalink keystore p12", parts...))
	out, err := enc.Encode(key, chain[0], chain[1:], password)
	if err != nil {
		return nil, fail(ReasonStoreEncodingFailed, fmt.Sprintf("encoding the PKCS12 keystore: %v", err))
	}
	return out, nil
}

// keystoreJKS builds a JKS keystore with one private key entry; the key is protected with the
// store password, which is what Kafka clients assume when ssl.key.password is unset.
func keystoreJKS(keyDER []byte, chain []*x509.Certificate, password string) ([]byte, *Failure) {
	parts := [][]byte{[]byte(password), keyDER}
	certs := make([]keystore.Certificate, len(chain))
	for i, c := range chain {
		parts = append(parts, c.Raw)
		certs[i] = keystore.Certificate{Type: "X509", Content: c.Raw}
	}
	ks := keystore.New(keystore.WithOrderedAliases(), keystore.WithCustomRandomNumberGenerator(newDetReader("kafkalink keystore jks", parts...)))
	err := ks.SetPrivateKeyEntry(keystoreAlias, keystore.PrivateKeyEntry{
		CreationTime:     chain[0].NotBefore.UTC(),
		PrivateKey:       keyDER,
		CertificateChain: certs,
	}, []byte(password))
	if err != nil {
		return nil, fail(ReasonStoreEncodingFailed, fmt.Sprintf("encoding the JKS keystore: %v", err))
	}
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(password)); err != nil {
		return nil, fail(ReasonStoreEncodingFailed, fmt.Sprintf("encoding the JKS keystore: %v", err))
	}
	return b.Bytes(), nil
}

// Limits of cheapToDecode. Strimzi's stores use 2,048 (OpenSSL) or 10,000 (Java) iterations.
const (
	maxPBKDFIterations = 100_000
	maxDERDepth        = 24
	maxDERNodes        = 4096
)

// cheapToDecode reports whether decoding a PKCS12 truststore costs a bounded amount of work. The
// iteration counts of its MAC and of its encryption are plain DER INTEGERs that a decoder obeys,
// so a store written by hand with 2^31 iterations would hold a worker for minutes. Every INTEGER
// reachable without decrypting (walking into OCTET STRINGs that are DER themselves) must be small;
// a false alarm (a large certificate serial in an unencrypted bag) only means the store is rebuilt.
// A truststore is decrypted in one step, so nothing is hidden from this walk; see keystoreP12.
func cheapToDecode(der []byte) bool {
	nodes := 0
	return walkDER(der, 0, &nodes)
}

// walkDER is cheapToDecode's walk: every node of b within maxDERDepth and maxDERNodes, every INTEGER small.
func walkDER(b []byte, depth int, nodes *int) bool {
	if depth > maxDERDepth {
		return false
	}
	for len(b) > 0 {
		*nodes++
		if *nodes > maxDERNodes {
			return false
		}
		tag, constructed, content, rest, ok := readTLV(b)
		if !ok {
			return false
		}
		b = rest
		switch {
		case constructed:
			if !walkDER(content, depth+1, nodes) {
				return false
			}
		case tag == 0x02: // INTEGER
			if len(content) > 4 || new(big.Int).SetBytes(content).Int64() > maxPBKDFIterations {
				return false
			}
		case tag == 0x04: // OCTET STRING, possibly DER inside (authSafe, safe contents, parameters)
			inner := 0
			if len(content) > 0 && walkDERQuiet(content, depth+1, &inner) && !walkDER(content, depth+1, nodes) {
				return false
			}
		}
	}
	return true
}

// walkDERQuiet reports whether b is entirely well-formed DER, so that opaque octet strings (salts,
// ciphertext) that merely start like DER are not judged.
func walkDERQuiet(b []byte, depth int, nodes *int) bool {
	if depth > maxDERDepth {
		return false
	}
	for len(b) > 0 {
		*nodes++
		if *nodes > maxDERNodes {
			return false
		}
		_, constructed, content, rest, ok := readTLV(b)
		if !ok {
			return false
		}
		if constructed && !walkDERQuiet(content, depth+1, nodes) {
			return false
		}
		b = rest
	}
	return true
}

// readTLV reads one DER element with a single-byte tag (all PKCS12 needs; high tag numbers are
// refused) and a definite length.
func readTLV(b []byte) (tag byte, constructed bool, content, rest []byte, ok bool) {
	if len(b) < 2 || b[0]&0x1f == 0x1f {
		return 0, false, nil, nil, false
	}
	tag, constructed = b[0]&0x1f, b[0]&0x20 != 0
	if b[0]&0xc0 != 0 {
		tag = 0xff // context-specific and application tags are not universal INTEGER or OCTET STRING
	}
	l, n := int(b[1]), 2
	if l&0x80 != 0 {
		size := l & 0x7f
		if size == 0 || size > 3 || len(b) < 2+size {
			return 0, false, nil, nil, false
		}
		l = 0
		for _, c := range b[2 : 2+size] {
			l = l<<8 | int(c)
		}
		n = 2 + size
	}
	if l > len(b)-n {
		return 0, false, nil, nil, false
	}
	return tag, constructed, b[n : n+l], b[n+l:], true
}
