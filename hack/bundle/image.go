package main

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// imagePlatforms are the platforms the bundle image is listed for: OLM unpacks a bundle by
// running its image on a node, so the index needs an entry for each node platform kafkalink
// supports (the content is the same files).
var imagePlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// WriteImage writes the bundle in dir as the image bundle.Dockerfile describes (its manifests/
// and metadata/ on an empty base, the bundle annotations as labels), without a container
// engine: an OCI image index tagged ref, as an oci-archive (push it with
// `skopeo copy --all oci-archive:FILE docker://REF`). The same bundle gives the same bytes.
func WriteImage(dir, ref, archive string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	layerBytes, err := tarTree(dir, "manifests", "metadata")
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	labels := map[string]string{}
	for _, kv := range bundleAnnotations() {
		labels[kv[0]] = kv[1]
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range imagePlatforms {
		img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return err
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = p.OS, p.Architecture
		cfg.Created = v1.Time{Time: time.Unix(0, 0)}
		cfg.Config.Labels = labels
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	out, err := os.MkdirTemp("", "kafkalink-bundle-image")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	lp, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag.String(),
		"io.containerd.image.name":          tag.String(),
	})); err != nil {
		return err
	}
	data, err := tarTree(out, ".")
	if err != nil {
		return err
	}
	return os.WriteFile(archive, data, 0o644)
}

// tarTree is a tar of the named folders below dir (their paths kept), with sorted names, fixed
// times and no owners, so the same files give the same bytes.
func tarTree(dir string, roots ...string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, root := range roots {
		err := filepath.WalkDir(filepath.Join(dir, root), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil || rel == "." {
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
		if err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
