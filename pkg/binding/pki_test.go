package binding

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

var updatePKI = flag.Bool("update-pki", false, "regenerate the test certificates in testdata/pki (then run -update)")

// TestCA is a certificate authority for tests: it issues server and client certificates.
type TestCA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
}

// NewTestCA makes a self-signed ECDSA CA valid from notBefore for a century.
func NewTestCA(t testing.TB, cn string, notBefore time.Time) *TestCA {
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
	return &TestCA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Issue signs a leaf certificate for the given names (IP addresses become IP SANs) with a fresh
// key: RSA 2048 when rsaKey is set, like Strimzi's user certificates, else ECDSA P-256. It returns
// the PEM certificate, the PKCS#8 PEM key and the pair for crypto/tls.
func (ca *TestCA) Issue(t testing.TB, cn string, names []string, client bool, rsaKey bool) (certPEM, keyPEM []byte, pair tls.Certificate) {
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

// pki holds the fixed certificates of the golden tests, committed under testdata/pki so the
// golden files stay byte-identical between runs.
type pki struct {
	clusterCA, clusterCAOld []byte // PEM
	clusterCAP12            []byte // Strimzi-style ca.p12 holding clusterCA only
	clusterCAPassword       []byte
	userCert, userKey       []byte // PEM, signed by the clients CA
	userP12                 []byte // Strimzi-style user.p12
	userPassword            []byte
	otherKey                []byte // a key that does not match userCert
}

var pkiFiles = []string{
	"cluster-ca.crt", "cluster-ca-old.crt", "cluster-ca.p12", "cluster-ca.password",
	"user.crt", "user.key", "user.p12", "user.password", "other.key",
}

func loadPKI(t testing.TB) *pki {
	t.Helper()
	dir := filepath.Join("testdata", "pki")
	if *updatePKI {
		generatePKI(t, dir)
	}
	files := map[string][]byte{}
	for _, f := range pkiFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("reading test PKI (regenerate with -update-pki): %v", err)
		}
		files[f] = b
	}
	return &pki{
		clusterCA: files["cluster-ca.crt"], clusterCAOld: files["cluster-ca-old.crt"],
		clusterCAP12: files["cluster-ca.p12"], clusterCAPassword: files["cluster-ca.password"],
		userCert: files["user.crt"], userKey: files["user.key"],
		userP12: files["user.p12"], userPassword: files["user.password"],
		otherKey: files["other.key"],
	}
}

func generatePKI(t testing.TB, dir string) {
	t.Helper()
	day := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	oldCA := NewTestCA(t, "cluster-ca v0", day)
	newCA := NewTestCA(t, "cluster-ca v1", day.AddDate(0, 6, 0))
	clientsCA := NewTestCA(t, "clients-ca v0", day)
	userCert, userKey, pair := clientsCA.Issue(t, "my-mtls-user", nil, true, true)
	_, otherKey, _ := clientsCA.Issue(t, "other", nil, true, false)

	caPassword := "Zq1nX0pL2aVb"
	caP12, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{newCA.Cert}, caPassword)
	if err != nil {
		t.Fatal(err)
	}
	userPassword := "uS3rPassw0rd"
	userP12, err := pkcs12.Modern.Encode(pair.PrivateKey, pair.Leaf, nil, userPassword)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{
		"cluster-ca.crt": newCA.CertPEM, "cluster-ca-old.crt": oldCA.CertPEM,
		"cluster-ca.p12": caP12, "cluster-ca.password": []byte(caPassword),
		"user.crt": userCert, "user.key": userKey, "user.p12": userP12, "user.password": []byte(userPassword),
		"other.key": otherKey,
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range out {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
