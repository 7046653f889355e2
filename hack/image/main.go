// Command image builds a multi-platform OCI image without a container engine: for each platform one
// static binary on an empty base, run as a non-root user, with OCI labels and annotations; the
// per-platform images go into one OCI image index, written as an OCI image layout folder and
// optionally as an oci-archive tarball (the layout, tarred: `skopeo copy --all oci-archive:F docker://REF`).
//
// Nothing in the image is writable or needs to be: it runs with readOnlyRootFilesystem.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRootUser is the uid:gid images run as (distroless' "nonroot").
const NonRootUser = "65532:65532"

// Metadata are the OCI labels (in each image's config) and annotations (on each manifest and the
// index) an image carries.
type Metadata struct {
	Title, Description, Source, Version, Revision, Licenses string
}

// Labels returns the org.opencontainers.image.* keys of the set fields.
func (m Metadata) Labels() map[string]string {
	out := map[string]string{}
	for k, v := range map[string]string{
		"org.opencontainers.image.title":       m.Title,
		"org.opencontainers.image.description": m.Description,
		"org.opencontainers.image.source":      m.Source,
		"org.opencontainers.image.version":     m.Version,
		"org.opencontainers.image.revision":    m.Revision,
		"org.opencontainers.image.licenses":    m.Licenses,
	} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// binaries collects repeated -binary OS/ARCH=FILE flags.
type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(v string) error {
	platform, file, ok := strings.Cut(v, "=")
	if !ok || file == "" {
		return fmt.Errorf("want OS/ARCH=FILE, got %q", v)
	}
	if _, err := v1.ParsePlatform(platform); err != nil {
		return err
	}
	b[platform] = file
	return nil
}

func main() {
	bins := binaries{}
	flag.Var(bins, "binary", "OS/ARCH=FILE: the static binary for one platform; repeat for each platform.")
	ref := flag.String("name", "", "Image reference, such as ghcr.io/kafkalink/kafkalink-proxy:0.1.0.")
	out := flag.String("out", "", "OCI image layout folder to write.")
	archive := flag.String("oci-archive", "", "Also write the layout as an oci-archive tarball here.")
	var md Metadata
	flag.StringVar(&md.Source, "source", "https://github.com/kafkalink/kafkalink", "org.opencontainers.image.source")
	flag.StringVar(&md.Version, "version", "", "org.opencontainers.image.version")
	flag.StringVar(&md.Revision, "revision", "", "org.opencontainers.image.revision")
	flag.StringVar(&md.Description, "description", "", "org.opencontainers.image.description")
	flag.StringVar(&md.Licenses, "licenses", "Apache-2.0", "org.opencontainers.image.licenses")
	flag.Parse()
	if len(bins) == 0 || *ref == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: image -binary OS/ARCH=FILE [-binary ...] -name REF -out DIR [-oci-archive FILE] [-version V -revision R]")
		os.Exit(2)
	}
	idx, err := BuildIndex(bins, md)
	if err == nil {
		err = Write(idx, *ref, *out, *archive)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	digest, _ := idx.Digest()
	fmt.Printf("%s@%s (%d platforms) -> %s\n", *ref, digest, len(bins), *out)
}

// BuildIndex makes one image per platform (see Build) and an OCI image index of them, annotated
// with md. The binaries' basenames must agree: it is the entrypoint on every platform.
func BuildIndex(bins map[string]string, md Metadata) (v1.ImageIndex, error) {
	platforms := make([]string, 0, len(bins))
	for p := range bins {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, p := range platforms {
		platform, err := v1.ParsePlatform(p)
		if err != nil {
			return nil, err
		}
		if md.Title == "" {
			md.Title = path.Base(bins[p])
		}
		img, err := Build(bins[p], *platform, md)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform:    platform,
			Annotations: md.Labels(),
		}})
	}
	idx = mutate.AppendManifests(idx, adds...)
	return mutate.Annotations(idx, md.Labels()).(v1.ImageIndex), nil
}

// Build makes an image for platform holding binary at /<basename>, as its entrypoint, run as
// NonRootUser, with md as labels and manifest annotations. Timestamps are fixed so the same
// binary always gives the same digest.
func Build(binary string, platform v1.Platform, md Metadata) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	file := path.Base(binary)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	if err := tw.WriteHeader(&tar.Header{Name: file, Mode: 0o755, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = platform.OS, platform.Architecture, platform.Variant
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{"/" + file}
	cfg.Config.User = NonRootUser
	cfg.Config.WorkingDir = "/"
	if labels := md.Labels(); len(labels) > 0 {
		cfg.Config.Labels = labels
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	return mutate.Annotations(img, md.Labels()).(v1.Image), nil
}

// Write stores the index as an OCI layout folder (its one entry annotated with the reference) and,
// when archive is set, that folder as an oci-archive tarball.
func Write(idx v1.ImageIndex, ref, out, archive string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag.String(),
		"io.containerd.image.name":          tag.String(),
	})); err != nil {
		return err
	}
	if archive != "" {
		return tarDir(out, archive)
	}
	return nil
}

// tarDir writes dir's files into a tarball with fixed timestamps and sorted names (reproducible).
func tarDir(dir, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if d.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			return tw.WriteHeader(hdr)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
