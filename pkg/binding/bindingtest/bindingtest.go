// Package bindingtest holds test support shared by the binding package's tests and the
// control-plane tests of the binding controller: a small certificate authority and readers for the
// stores a binding Secret carries.
package bindingtest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// CA is a certificate authority for tests: it issues server and client certificates.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
}

// NewCA makes a self-signed ECDSA CA valid from notBefore for a century.
func NewCA(t testing.TB, cn string, notBefore time.Time) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(notBefore.UnixNano()),
		Subject:               pkix.Name{Organization: []string{"io.strimzi"}, CommonName: cn},
		NotBefore:             notBefore,
		NotAfter:              notBefore.AddDate(100, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Issue signs a leaf certificate for the given names (IP addresses become IP SANs) with a fresh
// key: RSA 2048 when rsaKey is set, like Strimzi's user certificates, else ECDSA P-256. It returns
// the PEM certificate, the PKCS#8 PEM key and the pair for crypto/tls.
func (ca *CA) Issue(t testing.TB, cn string, names []string, client bool, rsaKey bool) (certPEM, keyPEM []byte, pair tls.Certificate) {
	t.Helper()
	var key crypto.Signer
	var err error
	if rsaKey {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.Cert.NotBefore.UnixNano() + int64(len(cn))*7919 + 1),
		Subject:      pkix.Name{Organization: []string{"io.strimzi"}, CommonName: cn},
		NotBefore:    ca.Cert.NotBefore,
		NotAfter:     ca.Cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM, pair
}

// PEMCertificates returns the DER of every CERTIFICATE block in b, in order.
func PEMCertificates(b []byte) [][]byte {
	var out [][]byte
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return out
		}
		if block.Type == "CERTIFICATE" {
			out = append(out, block.Bytes)
		}
	}
}

// PKCS12Trusted returns the DER of the trusted certificates of a PKCS12 truststore.
func PKCS12Trusted(b []byte, password string) ([][]byte, error) {
	certs, err := pkcs12.DecodeTrustStore(b, password)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(certs))
	for i, c := range certs {
		out[i] = c.Raw
	}
	return out, nil
}

// JKSTrusted returns the DER of the trusted certificate entries of a JKS truststore, in alias order.
func JKSTrusted(b []byte, password string) ([][]byte, error) {
	ks := keystore.New(keystore.WithOrderedAliases())
	if err := ks.Load(bytes.NewReader(b), []byte(password)); err != nil {
		return nil, err
	}
	var out [][]byte
	for _, a := range ks.Aliases() {
		e, err := ks.GetTrustedCertificateEntry(a)
		if err != nil {
			return nil, err
		}
		out = append(out, e.Certificate.Content)
	}
	return out, nil
}
