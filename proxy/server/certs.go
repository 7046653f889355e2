package server

import (
	"crypto/fips140"
	"crypto/tls"
	"crypto/x509"
	"errors"
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

// resolveTLSOptions is config.ResolveTLSOptions, refusing options that need FIPS 140-3 mode when
// the process does not run in it: serving TLS_CHACHA20_POLY1305_SHA256 to a listener that
// disabled it would be a silent downgrade of what its owner asked for.
func resolveTLSOptions(opts map[string]string) (config.TLSParams, error) {
	p, err := config.ResolveTLSOptions(opts)
	if err == nil && p.FIPS && !fips140.Enabled() {
		err = errors.New("the options exclude TLS_CHACHA20_POLY1305_SHA256 from TLS 1.3, which needs FIPS 140-3 mode (GODEBUG=fips140=on), and the proxy does not run in it; the operator sets it on proxy pods that need it")
	}
	return p, err
}
