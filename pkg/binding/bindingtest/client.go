package bindingtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// Project writes every entry of a binding Secret as a file, as a Service Binding runtime projects
// it into a workload, and returns the folder.
func Project(t testing.TB, data map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for k, v := range data {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Files reads a projected binding the way an application would.
type Files struct {
	T   testing.TB
	Dir string
}

// Get returns an entry and whether it exists.
func (b Files) Get(key string) (string, bool) {
	v, err := os.ReadFile(filepath.Join(b.Dir, key))
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		b.T.Fatal(err)
	}
	return string(v), true
}

// Must returns an entry and fails the test when it is missing.
func (b Files) Must(key string) string {
	v, ok := b.Get(key)
	if !ok {
		b.T.Fatalf("the binding has no %s", key)
	}
	return v
}

// KeystoreFormat says where a client takes its trust and key material from.
type KeystoreFormat int

// The formats a test client reads.
const (
	FromPEM KeystoreFormat = iota
	FromPKCS12
)

// ClientOpts configures franz-go from the projected binding files only: bootstrap.servers,
// security.protocol, the truststore, and SCRAM credentials or the mTLS keystore.
func ClientOpts(t testing.TB, dir string, format KeystoreFormat) []kgo.Opt {
	t.Helper()
	b := Files{t, dir}
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(b.Must("bootstrap.servers"), ",")...)}
	protocol := b.Must("security.protocol")
	if strings.HasSuffix(protocol, "SSL") {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}
		switch format {
		case FromPEM:
			if !cfg.RootCAs.AppendCertsFromPEM([]byte(b.Must("ssl.truststore.crt"))) {
				t.Fatal("ssl.truststore.crt holds no certificate")
			}
			if crt, ok := b.Get("ssl.keystore.crt"); ok {
				pair, err := tls.X509KeyPair([]byte(crt), []byte(b.Must("ssl.keystore.key")))
				if err != nil {
					t.Fatalf("ssl.keystore.crt and .key: %v", err)
				}
				cfg.Certificates = []tls.Certificate{pair}
			}
		case FromPKCS12:
			certs, err := pkcs12.DecodeTrustStore([]byte(b.Must("ssl.truststore.p12")), b.Must("ssl.truststore.password"))
			if err != nil {
				t.Fatalf("ssl.truststore.p12: %v", err)
			}
			for _, c := range certs {
				cfg.RootCAs.AddCert(c)
			}
			if p12, ok := b.Get("ssl.keystore.p12"); ok {
				key, leaf, chain, err := pkcs12.DecodeChain([]byte(p12), b.Must("ssl.keystore.password"))
				if err != nil {
					t.Fatalf("ssl.keystore.p12: %v", err)
				}
				pair := tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf}
				for _, c := range chain {
					pair.Certificate = append(pair.Certificate, c.Raw)
				}
				cfg.Certificates = []tls.Certificate{pair}
			}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if strings.HasPrefix(protocol, "SASL_") {
		if mech := b.Must("sasl.mechanism"); mech != "SCRAM-SHA-512" {
			t.Fatalf("sasl.mechanism = %s", mech)
		}
		opts = append(opts, kgo.SASL(scram.Auth{User: b.Must("username"), Pass: b.Must("password")}.AsSha512Mechanism()))
	}
	return opts
}

// ProduceConsume writes one record to partition 0 of topic and reads it back, within a deadline
// so a broken setup fails instead of hanging.
func ProduceConsume(t testing.TB, opts []kgo.Opt, topic, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts = append(opts, kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value), Partition: 0}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume: %v (%v)", err, fs.Errors())
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("consume: %v", fe.Err)
		}
		found := false
		fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == value })
		if found {
			return
		}
	}
}
