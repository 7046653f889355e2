package framework

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"sync"
	"time"
)

var testKeyPair = sync.OnceValues(func() ([]byte, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kafkalink test listener"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(30 * 24 * time.Hour),
		DNSNames: []string{"*.example.com", "*.svc.cluster.local"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), mustECKeyPEM(key)
})

// TestKeyPair is a valid self-signed PEM certificate and its private key, made once per test
// binary, for listener Secrets: the operator refuses tls.crt and tls.key that do not parse.
func TestKeyPair() (cert, key []byte) { return testKeyPair() }

// WithTestKeyPair replaces the placeholders CERT and KEY of "{tls.crt: CERT, tls.key: KEY}" in
// YAML with TestKeyPair.
func WithTestKeyPair(yaml string) string {
	cert, key := TestKeyPair()
	c, _ := json.Marshal(string(cert))
	k, _ := json.Marshal(string(key))
	return strings.ReplaceAll(yaml, "{tls.crt: CERT, tls.key: KEY}", "{tls.crt: "+string(c)+", tls.key: "+string(k)+"}")
}
