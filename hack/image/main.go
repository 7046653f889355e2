// Command image builds an OCI image without a container engine: one static binary on an empty
// base, run as a non-root user, written as an OCI image layout folder (and optionally a
// docker-archive tarball for `docker load` or `crane push`).
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
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

func main() {
	binary := flag.String("binary", "", "Static binary to put in the image.")
	ref := flag.String("name", "", "Image reference, such as ghcr.io/kafkalink/kafkalink-proxy:dev.")
	out := flag.String("out", "", "OCI image layout folder to write.")
	archive := flag.String("tarball", "", "Also write a docker-archive tarball here.")
	flag.Parse()
	if *binary == "" || *ref == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: image -binary FILE -name REF -out DIR [-tarball FILE]")
		os.Exit(2)
	}
	img, err := Build(*binary)
	if err == nil {
		err = Write(img, *ref, *out, *archive)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	digest, _ := img.Digest()
	fmt.Printf("%s %s -> %s\n", *ref, digest, *out)
}

// Build makes an image holding binary at /<basename>, as its entrypoint, run as NonRootUser.
// Timestamps are fixed so the same binary always gives the same digest.
func Build(binary string) (v1.Image, error) {
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
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{"/" + file}
	cfg.Config.User = NonRootUser
	cfg.Config.WorkingDir = "/"
	return mutate.ConfigFile(img, cfg)
}

// Write stores the image as an OCI layout folder and, when archive is set, a docker-archive tarball.
func Write(img v1.Image, ref, out, archive string) error {
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
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag.String()})); err != nil {
		return err
	}
	if archive != "" {
		return tarball.WriteToFile(archive, tag, img)
	}
	return nil
}
