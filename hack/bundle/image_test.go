package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestBundleImage writes the bundle image twice and reads it back as an OCI layout: the same
// bytes both times, one image per platform, each with the bundle annotations as labels and one
// layer holding exactly the bundle's manifests/ and metadata/ files.
func TestBundleImage(t *testing.T) {
	dir, _ := generate(t)
	a, b := filepath.Join(t.TempDir(), "a.oci.tar"), filepath.Join(t.TempDir(), "b.oci.tar")
	for _, f := range []string{a, b} {
		if err := WriteImage(dir, "registry.example.com/kafkalink/kafkalink-bundle:1.2.3", f); err != nil {
			t.Fatal(err)
		}
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	if !bytes.Equal(da, db) {
		t.Error("two writes of the same bundle differ")
	}

	lp := untar(t, da)
	idx, err := layout.ImageIndexFromPath(lp)
	if err != nil {
		t.Fatal(err)
	}
	top, err := idx.IndexManifest()
	if err != nil || len(top.Manifests) != 1 || top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "registry.example.com/kafkalink/kafkalink-bundle:1.2.3" {
		t.Fatalf("layout index %+v (%v)", top, err)
	}
	inner, err := idx.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	want := bundleFiles(t, dir)
	for _, m := range im.Manifests {
		platforms = append(platforms, m.Platform.String())
		img, err := inner.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range bundleAnnotations() {
			if cfg.Config.Labels[kv[0]] != kv[1] {
				t.Errorf("%s: label %s = %q, want %q", m.Platform, kv[0], cfg.Config.Labels[kv[0]], kv[1])
			}
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%s: %d layers (%v), want 1", m.Platform, len(layers), err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		got := tarFiles(t, rc)
		rc.Close()
		if strings.Join(sortedKeys(got), " ") != strings.Join(sortedKeys(want), " ") {
			t.Errorf("%s: layer files %v, want %v", m.Platform, sortedKeys(got), sortedKeys(want))
		}
		for name, data := range want {
			if !bytes.Equal(got[name], data) {
				t.Errorf("%s: %s differs from the bundle's", m.Platform, name)
			}
		}
	}
	if strings.Join(platforms, " ") != "linux/amd64 linux/arm64" {
		t.Errorf("platforms %v", platforms)
	}
}

// bundleFiles are the bundle's manifests/ and metadata/ files by path.
func bundleFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, root := range []string{"manifests", "metadata"} {
		paths, _ := filepath.Glob(filepath.Join(dir, root, "*"))
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out[root+"/"+filepath.Base(p)] = data
		}
	}
	return out
}

// tarFiles are a tar's regular files by name.
func tarFiles(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[h.Name] = data
		}
	}
}

// untar unpacks an oci-archive into a folder and returns it.
func untar(t *testing.T, archive []byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range tarFiles(t, bytes.NewReader(archive)) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
