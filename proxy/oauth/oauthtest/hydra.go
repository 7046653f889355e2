package oauthtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkalink/kafkalink/internal/freeport"
)

// Hydra is a running Ory Hydra (v2.3.0, from hack/tools/hydra) on loopback, in memory (SQLite),
// issuing JWT access tokens.
type Hydra struct {
	// Issuer is its issuer URL (the tokens' iss).
	Issuer string
	// JWKSURL is its JWKS endpoint.
	JWKSURL  string
	tokenURL string
	adminURL string
}

// hydraBuildTags give Hydra its SQLite driver (DSN=memory), as Ory's own builds do.
const hydraBuildTags = "sqlite,sqlite_omit_load_extension"

var hydraBuild struct {
	sync.Mutex
	path string
}

// HydraBinary builds Hydra from hack/tools/hydra (the Go module proxy serves it) into
// _output/hydra/<key>/hydra, where key hashes the module's go.mod and go.sum, and returns its
// path; an earlier build is reused. $KAFKALINK_HYDRA names a binary to use instead. The test is
// skipped only when this machine cannot build it at all (no go command, or cgo without a C
// compiler: SQLite needs it); any other build failure fails the test.
func HydraBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("KAFKALINK_HYDRA"); p != "" {
		return p
	}
	hydraBuild.Lock()
	defer hydraBuild.Unlock()
	if hydraBuild.path != "" {
		return hydraBuild.path
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "hack", "tools", "hydra")
	key, err := moduleKey(src)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "_output", "hydra", key, "hydra")
	if _, err := os.Stat(out); err == nil {
		hydraBuild.path = out
		return out
	}
	if reason := cannotBuild(); reason != "" {
		t.Skipf("Ory Hydra cannot be built on this machine (%s): the OAUTHBEARER tests against a real OAuth server are skipped", reason)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockBuild(out + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := os.Stat(out); err != nil { // another test binary may have built it meanwhile
		buildHydra(t, src, out)
	}
	hydraBuild.path = out
	return out
}

func buildHydra(t testing.TB, src, out string) {
	t.Helper()
	t.Logf("building Ory Hydra from hack/tools/hydra (about 2 minutes on two cold cores; reused afterwards)")
	start := time.Now()
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	cmd := exec.Command("go", "build", "-tags", hydraBuildTags, "-trimpath", "-o", tmp, "github.com/ory/hydra/v2")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building Ory Hydra in %s: %v\n%s", src, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	t.Logf("built Ory Hydra in %s", time.Since(start).Round(time.Second))
}

// lockBuild makes the test binaries of several packages (go test ./... runs them at once) build
// Hydra one at a time: the lock is a file created exclusively. One left by a killed run is taken
// over once older than the longest build.
func lockBuild(path string) (unlock func(), err error) {
	const stale = 15 * time.Minute
	deadline := time.Now().Add(stale + time.Minute)
	for time.Now().Before(deadline) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			_ = f.Close()
			return func() { _ = os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if fi, err := os.Stat(path); err == nil && time.Since(fi.ModTime()) > stale {
			_ = os.Remove(path)
			continue
		}
		time.Sleep(time.Second)
	}
	return nil, fmt.Errorf("%s: still locked after %s", path, stale+time.Minute)
}

// cannotBuild says why Hydra cannot be built here, or "".
func cannotBuild() string {
	if _, err := exec.LookPath("go"); err != nil {
		return "no go command"
	}
	b, err := exec.Command("go", "env", "CC").Output()
	if err != nil {
		return "go env CC: " + err.Error()
	}
	cc := strings.Fields(string(b))
	if len(cc) == 0 {
		return "no C compiler configured"
	}
	if _, err := exec.LookPath(cc[0]); err != nil {
		return "no C compiler (" + cc[0] + ") for cgo"
	}
	return ""
}

func moduleKey(dir string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	h.Write([]byte(hydraBuildTags))
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// repoRoot is the folder of the kafkalink module's go.mod above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/kafkalink/kafkalink\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the kafkalink repository")
		}
		dir = parent
	}
}

// StartHydra starts Hydra on two free loopback ports (public and admin), stopped when the test
// ends. It serves plain HTTP (--dev), which the validator accepts only for loopback addresses.
func StartHydra(t testing.TB) *Hydra {
	t.Helper()
	bin := HydraBinary(t)
	public, admin := freeport.Port(), freeport.Port()
	issuer := fmt.Sprintf("http://127.0.0.1:%d/", public)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "hydra.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "all", "--dev", "--sqa-opt-out")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(),
		"DSN=memory",
		"URLS_SELF_ISSUER="+issuer,
		fmt.Sprint("SERVE_PUBLIC_PORT=", public), "SERVE_PUBLIC_HOST=127.0.0.1",
		fmt.Sprint("SERVE_ADMIN_PORT=", admin), "SERVE_ADMIN_HOST=127.0.0.1",
		"STRATEGIES_ACCESS_TOKEN=jwt", // Hydra issues opaque tokens by default
		"SECRETS_SYSTEM=kafkalink-test-system-secret-0123456789",
		"LOG_LEVEL=warn")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = logFile.Close()
	})
	h := &Hydra{Issuer: issuer, JWKSURL: issuer + ".well-known/jwks.json", tokenURL: issuer + "oauth2/token",
		adminURL: fmt.Sprintf("http://127.0.0.1:%d", admin)}
	if err := h.waitReady(exited); err != nil {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("Ory Hydra: %v; its log:\n%s", err, b)
	}
	return h
}

// waitReady polls the admin health endpoint, at most for a minute.
func (h *Hydra) waitReady(exited chan struct{}) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(h.adminURL + "/health/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("exited")
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("not ready within a minute")
}

// Client registers an OAuth client allowed the client-credentials grant for audiences and
// scopes (space-separated), through Hydra's admin API, and returns its id and secret.
func (h *Hydra) Client(t testing.TB, audiences []string, scope string) (id, secret string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"grant_types": []string{"client_credentials"}, "audience": audiences,
		"scope": scope, "token_endpoint_auth_method": "client_secret_basic"})
	resp, err := http.Post(h.adminURL+"/admin/clients", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var c struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &c) != nil || c.ID == "" {
		t.Fatalf("creating a Hydra client: %s: %s", resp.Status, b)
	}
	return c.ID, c.Secret
}

// Token gets an access token with the client-credentials grant (RFC 6749 4.4).
func (h *Hydra) Token(ctx context.Context, id, secret, audience, scope string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "audience": {audience}, "scope": {scope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &tok) != nil || tok.AccessToken == "" {
		return "", fmt.Errorf("token request: %s: %s", resp.Status, b)
	}
	return tok.AccessToken, nil
}
