package main

import (
	"archive/tar"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestImagesReadBack builds the real binaries statically, packs each into an image, writes the
// OCI layout, reads it back and checks what a cluster relies on: entrypoint, non-root user, the
// binary's mode, and that it is static (an empty base has no dynamic loader).
func TestImagesReadBack(t *testing.T) {
	for _, cmd := range []string{"kafkalink-operator", "kafkalink-proxy"} {
		t.Run(cmd, func(t *testing.T) {
			dir := t.TempDir()
			binary := filepath.Join(dir, cmd)
			build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", binary, "./cmd/"+cmd)
			build.Dir = "../.."
			build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			img, err := Build(binary)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "layout")
			if err := Write(img, "ghcr.io/kafkalink/"+cmd+":test", out, filepath.Join(dir, "image.tar")); err != nil {
				t.Fatal(err)
			}

			p, err := layout.FromPath(out)
			if err != nil {
				t.Fatal(err)
			}
			index, err := p.ImageIndex()
			if err != nil {
				t.Fatal(err)
			}
			manifest, err := index.IndexManifest()
			if err != nil || len(manifest.Manifests) != 1 {
				t.Fatalf("want one image in the layout, got %v (%v)", manifest, err)
			}
			if ref := manifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; ref != "ghcr.io/kafkalink/"+cmd+":test" {
				t.Errorf("ref.name annotation %q", ref)
			}
			read, err := p.Image(manifest.Manifests[0].Digest)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := read.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Config.User != NonRootUser {
				t.Errorf("user %q, want %q", cfg.Config.User, NonRootUser)
			}
			if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/"+cmd {
				t.Errorf("entrypoint %v", cfg.Config.Entrypoint)
			}
			if cfg.OS != "linux" || cfg.Architecture != "amd64" {
				t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
			}
			layers, err := read.Layers()
			if err != nil || len(layers) != 1 {
				t.Fatalf("want one layer, got %d (%v)", len(layers), err)
			}
			rc, err := layers[0].Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			tr := tar.NewReader(rc)
			hdr, err := tr.Next()
			if err != nil {
				t.Fatal(err)
			}
			if hdr.Name != cmd || hdr.Mode != 0o755 {
				t.Errorf("layer entry %q mode %o", hdr.Name, hdr.Mode)
			}
			extracted := filepath.Join(dir, "extracted")
			f, err := os.Create(extracted)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if _, err := tr.Next(); !errors.Is(err, io.EOF) {
				t.Errorf("more than the binary in the layer: %v", err)
			}
			exe, err := elf.Open(extracted)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Close()
			for _, prog := range exe.Progs {
				if prog.Type == elf.PT_INTERP {
					t.Errorf("%s is dynamically linked; an empty base has no loader", cmd)
				}
			}
			// The same binary must give the same digest: images are reproducible.
			again, err := Build(binary)
			if err != nil {
				t.Fatal(err)
			}
			d1, _ := img.Digest()
			d2, _ := again.Digest()
			if d1 != d2 {
				t.Errorf("digest changed between two builds: %s vs %s", d1, d2)
			}
		})
	}
}
