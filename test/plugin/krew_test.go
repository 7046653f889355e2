package plugin_test

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kafkalink/kafkalink/test/framework"
)

// krewPlugin mirrors krew's index.Plugin (krew.googlecontainertools.github.com/v1alpha2), the
// fields krew reads; strict decoding refuses any other.
type krewPlugin struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Version          string `json:"version"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Homepage         string `json:"homepage"`
		Platforms        []struct {
			Selector *metav1.LabelSelector `json:"selector"`
			URI      string                `json:"uri"`
			Sha256   string                `json:"sha256"`
			Files    []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
			Bin string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

var (
	// krewVersion is krew's check of spec.version: semantic versioning with a leading v.
	krewVersion = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	krewSHA256  = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// TestKrewManifest runs hack/release-plugin.sh for this machine's platform and checks the krew
// manifest as krew's validation does (names, version, platforms with selector, uri, sha256,
// files and bin), that each sha256 is the archive's, and that the archive's binary runs.
func TestKrewManifest(t *testing.T) {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "hack", "release-plugin.sh"))
	cmd.Env = append(os.Environ(), "OUT="+out, "VERSION=1.2.3-rc.1", "PLUGIN_PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH,
		"RELEASE_URL=https://github.com/kafkalink/kafkalink/releases/download/v1.2.3-rc.1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release-plugin.sh: %v\n%s", err, b)
	}
	data, err := os.ReadFile(filepath.Join(out, "kafkalink.krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("the manifest has fields krew does not know or the wrong shape: %v\n%s", err, data)
	}
	checkKrewPlugin(t, &p)
	if len(p.Spec.Platforms) != 1 {
		t.Fatalf("%d platforms, want this machine's alone", len(p.Spec.Platforms))
	}
	pl := p.Spec.Platforms[0]
	if pl.Selector.MatchLabels["os"] != runtime.GOOS || pl.Selector.MatchLabels["arch"] != runtime.GOARCH {
		t.Errorf("selector %v, want os %s arch %s", pl.Selector.MatchLabels, runtime.GOOS, runtime.GOARCH)
	}
	archive := filepath.Join(out, path.Base(pl.URI))
	raw, err := os.ReadFile(archive)
	if err != nil {
		t.Fatalf("the uri's archive is not among the assets: %v", err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != pl.Sha256 {
		t.Fatalf("sha256 %s is not the archive's %x", pl.Sha256, sum)
	}
	bin := extract(t, archive, []string{"LICENSE", pl.Bin})
	version, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(version), "1.2.3-rc.1") {
		t.Fatalf("the packaged binary says %q (%v), want its version", version, err)
	}
}

// checkKrewPlugin applies krew's validation rules (sigs.k8s.io/krew pkg/index/validation).
func checkKrewPlugin(t *testing.T, p *krewPlugin) {
	t.Helper()
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" {
		t.Errorf("apiVersion %q kind %q", p.APIVersion, p.Kind)
	}
	if p.Metadata.Name != "kafkalink" {
		t.Errorf("metadata.name %q: krew installs it as kubectl-<name>, so it must be kafkalink", p.Metadata.Name)
	}
	if !krewVersion.MatchString(p.Spec.Version) {
		t.Errorf("spec.version %q is not v-prefixed semantic versioning", p.Spec.Version)
	}
	if p.Spec.ShortDescription == "" || len(p.Spec.ShortDescription) > 50 {
		t.Errorf("spec.shortDescription %q: krew's index wants one of at most 50 characters", p.Spec.ShortDescription)
	}
	if len(p.Spec.Platforms) == 0 {
		t.Fatal("no platforms")
	}
	for i, pl := range p.Spec.Platforms {
		if pl.Selector == nil {
			t.Errorf("platform %d has no selector", i)
		} else if _, err := metav1.LabelSelectorAsSelector(pl.Selector); err != nil {
			t.Errorf("platform %d selector: %v", i, err)
		}
		if !strings.HasPrefix(pl.URI, "https://") {
			t.Errorf("platform %d uri %q", i, pl.URI)
		}
		if !krewSHA256.MatchString(pl.Sha256) {
			t.Errorf("platform %d sha256 %q is not 64 lower-case hex digits", i, pl.Sha256)
		}
		if pl.Bin == "" || filepath.IsAbs(pl.Bin) || strings.Contains(pl.Bin, "..") {
			t.Errorf("platform %d bin %q", i, pl.Bin)
		}
		for _, f := range pl.Files {
			if f.From == "" || f.To == "" {
				t.Errorf("platform %d has a file with an empty from or to", i)
			}
		}
	}
}

// extract unpacks a tar.gz, checks it holds exactly want, and returns the path of want[1].
func extract(t *testing.T, archive string, want []string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		dst, err := os.OpenFile(filepath.Join(dir, filepath.Base(h.Name)), os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, tr); err != nil {
			t.Fatal(err)
		}
		dst.Close()
	}
	sort.Strings(names)
	sorted := append([]string(nil), want...)
	sort.Strings(sorted)
	if strings.Join(names, ",") != strings.Join(sorted, ",") {
		t.Fatalf("the archive holds %v, want %v", names, sorted)
	}
	return filepath.Join(dir, want[1])
}
