package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/kafkalink/kafkalink/proxy/config"
)

// loadKeyPair reads one key pair and parses its leaf certificate.
func loadKeyPair(kp config.KeyPair) (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(kp.CertificateFile, kp.PrivateKeyFile)
	if err != nil {
		return nil, err
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// pairKey identifies a key pair by its files.
func pairKey(kp config.KeyPair) string { return kp.CertificateFile + "\x00" + kp.PrivateKeyFile }

// loadPool reads PEM CA bundles into one pool.
func loadPool(files []string) (*x509.CertPool, error) {
	if len(files) == 0 {
		return nil, nil
	}
	pool := x509.NewCertPool()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%s: no PEM certificate found", f)
		}
	}
	return pool, nil
}

// covers reports whether the certificate is valid for host: by DNS SAN (a wildcard covers
// exactly one leftmost label), or by common name when the certificate has no DNS SAN.
func covers(leaf *x509.Certificate, host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	names := leaf.DNSNames
	if len(names) == 0 && leaf.Subject.CommonName != "" {
		names = []string{leaf.Subject.CommonName}
	}
	for _, n := range names {
		if matchHost(strings.TrimSuffix(strings.ToLower(n), "."), host) {
			return true
		}
	}
	return false
}

func matchHost(pattern, host string) bool {
	if pattern == host {
		return true
	}
	rest, ok := strings.CutPrefix(pattern, "*.")
	if !ok {
		return false
	}
	_, hostRest, ok := strings.Cut(host, ".")
	return ok && hostRest == rest && !strings.Contains(rest, "*")
}

// SelectCertificate picks the certificate for an SNI host among a listener's key pairs:
// among those whose SAN (or, without DNS SANs, common name) covers host, the one that
// expires last. It returns nil when none covers the host.
func SelectCertificate(certs []*tls.Certificate, host string) *tls.Certificate {
	var best *tls.Certificate
	for _, c := range certs {
		if c.Leaf == nil || !covers(c.Leaf, host) {
			continue
		}
		if best == nil || c.Leaf.NotAfter.After(best.Leaf.NotAfter) {
			best = c
		}
	}
	return best
}
