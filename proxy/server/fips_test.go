package server

import (
	"crypto/fips140"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// seedTLSOptions are the seed's listener options: TLSv1.3 only, TLS_AES_256_GCM_SHA384 enabled,
// TLS_CHACHA20_POLY1305_SHA256 disabled.
const seedTLSOptions = `  options:
    kroxylicious.io/enabled-protocols: TLSv1.3
    kroxylicious.io/disabled-protocols: TLSv1.2
    kroxylicious.io/enabled-cipher-suites: TLS_AES_256_GCM_SHA384
    kroxylicious.io/disabled-cipher-suites: TLS_CHACHA20_POLY1305_SHA256
`

// fipsChildEnv marks the copy of the test binary that runs in FIPS 140-3 mode.
const fipsChildEnv = "KAFKALINK_TEST_FIPS_CHILD"

// TestSeedTLSOptionsRefuseChaCha20: a listener with the seed's options, in a proxy running in
// FIPS 140-3 mode as the operator starts it, refuses OpenSSL offering only the disabled
// TLS_CHACHA20_POLY1305_SHA256 and serves it offering TLS_AES_256_GCM_SHA384; a proxy not in
// that mode does not serve the listener at all (fail closed) and says why. FIPS 140-3 mode is
// fixed at process start, so that half runs in a copy of the test binary with GODEBUG=fips140=on.
func TestSeedTLSOptionsRefuseChaCha20(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is needed for a client that offers one TLS 1.3 suite (hack/install-deps.sh installs it)")
	}
	if !fips140.Enabled() {
		if os.Getenv(fipsChildEnv) != "" {
			t.Fatal("the child runs without FIPS 140-3 mode")
		}
		p, pc := startSeedOptionsProxy(t)
		if err := opensslHandshake(pc.Port, "TLS_AES_256_GCM_SHA384"); err == nil {
			t.Error("a proxy outside FIPS 140-3 mode served the listener whose options need it")
		}
		if !p.logs.waitFor("FIPS 140-3 mode") {
			t.Errorf("the proxy did not say why the listener is not served:\n%s", p.logs)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestSeedTLSOptionsRefuseChaCha20$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "GODEBUG=fips140=on", fipsChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestSeedTLSOptionsRefuseChaCha20") {
			t.Fatalf("the FIPS 140-3 mode half failed (%v):\n%s", err, out)
		}
		return
	}
	_, pc := startSeedOptionsProxy(t)
	if err := opensslHandshake(pc.Port, "TLS_CHACHA20_POLY1305_SHA256"); err == nil {
		t.Error("a client offering only TLS_CHACHA20_POLY1305_SHA256 completed a handshake")
	}
	if err := opensslHandshake(pc.Port, "TLS_AES_256_GCM_SHA384"); err != nil {
		t.Errorf("a client offering TLS_AES_256_GCM_SHA384: %v", err)
	}
}

func startSeedOptionsProxy(t *testing.T) (*runningProxy, proxyConfig) {
	t.Helper()
	dir := t.TempDir()
	pki := newPKI(t)
	kc := fakeKafka(t, nil, "")
	cf, kf := writePair(t, dir, "server", pki.issue(t, "proxy", []string{"*.kafka.test"}, nil, time.Now().Add(time.Hour)))
	pc := proxyConfig{Port: freePort(t), MgmtPort: freePort(t), CertFile: cf, KeyFile: kf, ExtraListenerConfig: seedTLSOptions,
		Clusters: []testCluster{{Name: "a", Prefix: "a", Target: kc.ListenAddrs()[0]}}}
	return startProxy(t, writeConfig(t, dir, pc)), pc
}

// opensslHandshake runs OpenSSL's client offering TLS 1.3 with one cipher suite, and returns an
// error unless the handshake completed with that suite.
func opensslHandshake(port int, suite string) error {
	cmd := exec.Command("openssl", "s_client", "-connect", fmt.Sprintf("127.0.0.1:%d", port), "-servername", "a-bootstrap.kafka.test",
		"-tls1_3", "-ciphersuites", suite, "-brief")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	if !strings.Contains(string(out), suite) {
		return fmt.Errorf("no %s in: %s", suite, out)
	}
	return nil
}
