package plugin_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkalink/kafkalink/test/framework"
)

// TestFranzGoOutputCompiles builds the kafkaclient.go of every protocol that
// pkg/clientconfig's golden files pin (TLS, mTLS, SCRAM-SHA-256 and -512, PLAIN, OAUTHBEARER)
// against the franz-go this repository requires, in a module of its own, as a user would;
// test/e2e runs the SCRAM one through the proxy.
func TestFranzGoOutputCompiles(t *testing.T) {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	goldens, err := filepath.Glob(filepath.Join(root, "pkg", "clientconfig", "testdata", "franz-go", "*.golden"))
	if err != nil || len(goldens) < 6 {
		t.Fatalf("found %d franz-go golden files (%v)", len(goldens), err)
	}
	mod := t.TempDir()
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	version := ""
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/twmb/franz-go" {
			version = f[1]
		}
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(mod, "go.mod"), "module kafkalink.test/compile\n\ngo 1.26.0\n\nrequire github.com/twmb/franz-go "+version+"\n")
	write(t, filepath.Join(mod, "go.sum"), string(sum))
	for _, g := range goldens {
		data, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		src, ok := section(string(data), "kafkaclient.go")
		if !ok {
			t.Fatalf("%s has no kafkaclient.go", g)
		}
		write(t, filepath.Join(mod, strings.TrimSuffix(filepath.Base(g), ".golden"), "kafkaclient.go"), src)
	}
	cmd := exec.Command("go", "build", "-mod=mod", "./...")
	cmd.Dir = mod
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the franz-go files do not build: %v\n%s", err, out)
	}
}

// section is the content of one file of a pkg/clientconfig golden file ("==> name (mode) <==").
func section(golden, name string) (string, bool) {
	_, rest, ok := strings.Cut(golden, "==> "+name+" (")
	if !ok {
		return "", false
	}
	_, rest, _ = strings.Cut(rest, "<==\n")
	body, _, _ := strings.Cut(rest, "\n==> ")
	return body + "\n", true
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
