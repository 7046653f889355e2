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

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var platforms = map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}

// TestImagesReadBack builds the real proxy binary statically for linux/amd64 and linux/arm64, packs
// it into an image index, writes the OCI layout and oci-archive, reads them back and
// checks what a cluster and a registry rely on: both platforms, the OCI labels and annotations,
// entrypoint, non-root user, the binary's mode and architecture, and that it is static (an empty
// base has no dynamic loader). The operator's image goes through the same code; building its
// binary (all of client-go) twice more with -trimpath would cost a cold CI machine many minutes.
func TestImagesReadBack(t *testing.T) {
	md := Metadata{Source: "https://github.com/kafkalink/kafkalink", Version: "1.2.3-test", Revision: "0123abcd", Licenses: "Apache-2.0"}
	for _, cmd := range []string{"kafkalink-proxy"} {
		t.Run(cmd, func(t *testing.T) {
			dir := t.TempDir()
			bins := map[string]string{}
			for platform := range platforms {
				p, _ := v1.ParsePlatform(platform)
				binary := filepath.Join(dir, p.Architecture, cmd)
				// hack/build-images.sh's flags less the version stamps: the compile cache serves both.
				build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", binary, "./cmd/"+cmd)
				build.Dir = "../.."
				build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
				if out, err := build.CombinedOutput(); err != nil {
					t.Fatalf("go build %s: %v\n%s", platform, err, out)
				}
				bins[platform] = binary
			}
			idx, err := BuildIndex(bins, md)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "layout")
			ref := "ghcr.io/kafkalink/" + cmd + ":1.2.3-test"
			if err := Write(idx, ref, out, filepath.Join(dir, "image.oci.tar")); err != nil {
				t.Fatal(err)
			}

			p, err := layout.FromPath(out)
			if err != nil {
				t.Fatal(err)
			}
			top, err := p.ImageIndex()
			if err != nil {
				t.Fatal(err)
			}
			topManifest, err := top.IndexManifest()
			if err != nil || len(topManifest.Manifests) != 1 {
				t.Fatalf("want one index in the layout, got %v (%v)", topManifest, err)
			}
			entry := topManifest.Manifests[0]
			if entry.MediaType != types.OCIImageIndex {
				t.Errorf("layout entry is a %s, want an OCI image index", entry.MediaType)
			}
			if got := entry.Annotations["org.opencontainers.image.ref.name"]; got != ref {
				t.Errorf("ref.name annotation %q", got)
			}
			index, err := top.ImageIndex(entry.Digest)
			if err != nil {
				t.Fatal(err)
			}
			im, err := index.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			checkMetadata(t, "index", im.Annotations, md)
			if len(im.Manifests) != len(platforms) {
				t.Fatalf("index has %d manifests, want %d", len(im.Manifests), len(platforms))
			}
			seen := map[string]bool{}
			for _, desc := range im.Manifests {
				if desc.Platform == nil {
					t.Fatalf("manifest %s has no platform", desc.Digest)
				}
				platform := desc.Platform.String()
				machine, ok := platforms[platform]
				if !ok || seen[platform] {
					t.Fatalf("unexpected or repeated platform %s", platform)
				}
				seen[platform] = true
				checkMetadata(t, platform+" descriptor", desc.Annotations, md)
				img, err := index.Image(desc.Digest)
				if err != nil {
					t.Fatal(err)
				}
				checkImage(t, img, cmd, *desc.Platform, machine, md)
			}

			// The same binaries must give the same digest: images are reproducible.
			again, err := BuildIndex(bins, md)
			if err != nil {
				t.Fatal(err)
			}
			d1, _ := idx.Digest()
			d2, _ := again.Digest()
			if d1 != d2 || entry.Digest != d1 {
				t.Errorf("digests differ: built %s, again %s, in layout %s", d1, d2, entry.Digest)
			}
			checkArchive(t, filepath.Join(dir, "image.oci.tar"))
		})
	}
}

func checkMetadata(t *testing.T, what string, got map[string]string, md Metadata) {
	t.Helper()
	for k, v := range map[string]string{
		"org.opencontainers.image.source":   md.Source,
		"org.opencontainers.image.version":  md.Version,
		"org.opencontainers.image.revision": md.Revision,
		"org.opencontainers.image.licenses": md.Licenses,
	} {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
		}
	}
}

func checkImage(t *testing.T, img v1.Image, cmd string, platform v1.Platform, machine elf.Machine, md Metadata) {
	t.Helper()
	manifest, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if manifest.MediaType != types.OCIManifestSchema1 {
		t.Errorf("%s manifest media type %s", platform, manifest.MediaType)
	}
	checkMetadata(t, platform.String()+" manifest", manifest.Annotations, md)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	checkMetadata(t, platform.String()+" labels", cfg.Config.Labels, md)
	if cfg.Config.User != NonRootUser {
		t.Errorf("user %q, want %q", cfg.Config.User, NonRootUser)
	}
	if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/"+cmd {
		t.Errorf("entrypoint %v", cfg.Config.Entrypoint)
	}
	if cfg.OS != platform.OS || cfg.Architecture != platform.Architecture {
		t.Errorf("config platform %s/%s, descriptor %s", cfg.OS, cfg.Architecture, platform)
	}
	layers, err := img.Layers()
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
	extracted := filepath.Join(t.TempDir(), cmd)
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
	if exe.Machine != machine {
		t.Errorf("%s image holds a %s binary", platform, exe.Machine)
	}
	for _, prog := range exe.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked; an empty base has no loader", cmd)
		}
	}
}

// checkArchive: the oci-archive is the layout, tarred, with index.json and oci-layout at its root.
func checkArchive(t *testing.T, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names[hdr.Name] = true
	}
	for _, want := range []string{"index.json", "oci-layout", "blobs/", "blobs/sha256/"} {
		if !names[want] {
			t.Errorf("oci-archive lacks %s (has %v)", want, names)
		}
	}
}
