package binding

import (
	"crypto/x509"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	pkcs12 "software.sslmate.com/src/go-pkcs12"

	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
)

var updatePKI = flag.Bool("update-pki", false, "regenerate the test certificates in testdata/pki (then run -update)")

// TestCA is bindingtest.CA, under the name the binding tests (and realclient_test) use.
type TestCA = bindingtest.CA

// NewTestCA makes a self-signed ECDSA CA valid from notBefore for a century.
func NewTestCA(t testing.TB, cn string, notBefore time.Time) *TestCA {
	return bindingtest.NewCA(t, cn, notBefore)
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
