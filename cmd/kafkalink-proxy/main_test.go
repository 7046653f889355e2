package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkalink/kafkalink/internal/freeport"
	"github.com/kafkalink/kafkalink/pkg/version"
)

// TestMain lets the test binary run as the proxy itself, so the flags and signal handling
// are tested without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("KAFKALINK_PROXY_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestRemapFlag(t *testing.T) {
	tests := map[string]struct {
		in      string
		wantErr bool
	}{
		"a from and to prefix are accepted": {in: "/opt/kroxylicious=/tmp/x"},
		"an empty to prefix is accepted":    {in: "/opt/kroxylicious/="},
		"a missing equals sign is refused":  {in: "/opt/kroxylicious", wantErr: true},
		"an empty from prefix is refused":   {in: "=/tmp", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var r remapFlag
			if err := r.Set(tc.in); (err != nil) != tc.wantErr {
				t.Fatalf("Set(%q) error = %v", tc.in, err)
			}
		})
	}
}

// TestBinaryRemapsPathsAndDrainsOnSIGTERM runs the proxy binary with a configuration whose
// key material lives under a path that exists only after --remap-path, waits for /readyz,
// then sends SIGTERM and expects a clean exit.
func TestBinaryRemapsPathsAndDrainsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	ports := freeport.Ports(2)
	// The key material exists only under dir; the configuration names it under /opt/kroxylicious.
	writeSelfSigned(t, filepath.Join(dir, "secrets", "tls.crt"), filepath.Join(dir, "secrets", "tls.key"))
	cfg := fmt.Sprintf(`version: kafkalink.io/proxy-config/v1
listeners:
- name: tls
  port: %d
  keyPairs: [{certificateFile: /opt/kroxylicious/secrets/tls.crt, privateKeyFile: /opt/kroxylicious/secrets/tls.key}]
virtualClusters:
- {name: p, listener: tls, bootstrapHost: p-bootstrap.test, brokerPattern: p-broker-$(nodeId).test, targetBootstrap: "127.0.0.1:1"}
management: {port: %d}
`, ports[0], ports[1])
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The configuration binds all interfaces, as in a pod; --bind-address keeps the test on loopback.
	cmd := exec.Command(os.Args[0], "--config", path, "--remap-path", "/opt/kroxylicious="+dir, "--bind-address", "127.0.0.1", "-v", "2")
	cmd.Env = append(os.Environ(), "KAFKALINK_PROXY_RUN_MAIN=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1])
	for i := 0; ; i++ {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("proxy exited: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if i > 1000 {
			_ = cmd.Process.Kill()
			t.Fatal("proxy never became ready")
		}
	}
	for _, port := range ports {
		if addrs := listeningAddresses(t, port); len(addrs) != 1 || addrs[0] != "0100007F" {
			t.Errorf("port %d listens on %v (hex, /proc/net/tcp), want loopback only (0100007F)", port, addrs)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("proxy did not exit cleanly on SIGTERM: %v", err)
	}
}

// listeningAddresses returns the local IPv4 addresses (hex, as /proc/net/tcp writes them) of the
// sockets listening on port; IPv6 sockets count as "::" when they listen on any address.
func listeningAddresses(t *testing.T, port int) []string {
	t.Helper()
	var addrs []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != "0A" { // 0A is LISTEN
				continue
			}
			host, p, ok := strings.Cut(f[1], ":")
			if !ok || p != fmt.Sprintf("%04X", port) {
				continue
			}
			if file == "/proc/net/tcp6" {
				host = "::"
			}
			addrs = append(addrs, host)
		}
	}
	return addrs
}

func writeSelfSigned(t *testing.T, certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"*.test"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalPKCS8PrivateKey(key)
	if err := os.MkdirAll(filepath.Dir(certFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestBinaryFailsOnBadConfig checks that a configuration error at start (no last good
// configuration to keep serving) stops the binary with a non-zero status and the reason; for a
// version outside the skew policy, what this proxy reads.
func TestBinaryFailsOnBadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("version: kafkalink.io/proxy-config/v0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "--config", path)
	cmd.Env = append(os.Environ(), "KAFKALINK_PROXY_RUN_MAIN=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a bad config was accepted:\n%s", out)
	}
	if want := "unsupported configuration version kafkalink.io/proxy-config/v0: this proxy reads kafkalink.io/proxy-config/v1"; !strings.Contains(string(out), want) {
		t.Errorf("output does not say %q:\n%s", want, out)
	}
}

// TestVersionFlag: --version prints the release version and exits without reading a config.
func TestVersionFlag(t *testing.T) {
	cmd := exec.Command(os.Args[0], "--version", "--config", "/nonexistent")
	cmd.Env = append(os.Environ(), "KAFKALINK_PROXY_RUN_MAIN=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	if want := version.String("kafkalink-proxy") + "\n"; string(out) != want {
		t.Errorf("--version printed %q, want %q", out, want)
	}
}
