package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func readLink(t *testing.T, p string) string {
	t.Helper()
	target, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

func TestWriteAtomicLaysOutLikeTheKubelet(t *testing.T) {
	dir := t.TempDir()
	err := WriteAtomic(dir, Payload{
		"tls.crt":        {Data: []byte("cert"), Mode: 0o644},
		"nested/key.pem": {Data: []byte("key"), Mode: 0o040},
	})
	if err != nil {
		t.Fatal(err)
	}
	data := readLink(t, filepath.Join(dir, "..data"))
	if !strings.HasPrefix(data, "..") || strings.Contains(data, "/") {
		t.Errorf("..data points at %q, want a sibling timestamped folder", data)
	}
	if got := readLink(t, filepath.Join(dir, "tls.crt")); got != "..data/tls.crt" {
		t.Errorf("tls.crt links to %q", got)
	}
	if got := readLink(t, filepath.Join(dir, "nested")); got != "..data/nested" {
		t.Errorf("nested links to %q", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, "nested", "key.pem"))
	if err != nil || string(b) != "key" {
		t.Fatalf("nested/key.pem = %q, %v", b, err)
	}
	fi, err := os.Stat(filepath.Join(dir, "nested", "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o440 {
		t.Errorf("mode 0040 became %o, want 0440 (owner read added)", got)
	}

	if err := WriteAtomic(dir, Payload{"tls.crt": {Data: []byte("cert2"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tls.crt")); string(b) != "cert2" {
		t.Errorf("tls.crt after update = %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nested")); !os.IsNotExist(err) {
		t.Errorf("the link of a removed key stays: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 3 { // ..<ts>, ..data, tls.crt
		t.Errorf("folder holds %v, want the new version, ..data and tls.crt only", names)
	}
}

func TestWriteAtomicRefusesEscapingPaths(t *testing.T) {
	cases := map[string]string{
		"an absolute path":       "/etc/passwd",
		"a parent reference":     "a/../../b",
		"a leading dot-dot name": "..data",
		"an unclean path":        "a//b",
		"an empty path":          "",
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := WriteAtomic(dir, Payload{p: {Data: []byte("x")}}); err == nil {
				t.Fatalf("path %q accepted", p)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("a refused payload left %d entries", len(entries))
			}
		})
	}
}

// A reader that opens the file while updates swap it sees one whole version or another,
// never a partial or empty file.
func TestWriteAtomicReadersNeverSeeHalfAnUpdate(t *testing.T) {
	dir := t.TempDir()
	versions := []string{strings.Repeat("a", 64*1024), strings.Repeat("b", 64*1024)}
	if err := WriteAtomic(dir, Payload{"f": {Data: []byte(versions[0]), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad []string
	var mu sync.Mutex
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := os.ReadFile(filepath.Join(dir, "f"))
			if err == nil && string(b) != versions[0] && string(b) != versions[1] {
				mu.Lock()
				bad = append(bad, string(b[:min(len(b), 10)]))
				mu.Unlock()
			}
		}
	})
	for i := range 200 {
		if err := WriteAtomic(dir, Payload{"f": {Data: []byte(versions[i%2]), Mode: 0o644}}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d reads saw a partial file, first %q", len(bad), bad[0])
	}
}
