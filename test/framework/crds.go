package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ErrNoSharedDir says the shared folder is not there, as in a plain clone: callers fall back to
// what the repository itself holds.
var ErrNoSharedDir = errors.New("no shared folder")

// SharedDir is the project's shared folder (seeds and fixtures): $KAFKALINK_SHARED_DIR, or
// ../shared beside the repository, where CI and developers have it. When that folder does not
// exist the error wraps ErrNoSharedDir, so KAFKALINK_SHARED_DIR=/nonexistent means "no shared".
func SharedDir() (string, error) {
	dir := os.Getenv("KAFKALINK_SHARED_DIR")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(filepath.Dir(root), "shared")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w at %s", ErrNoSharedDir, dir)
	}
	return dir, nil
}

// ModuleDir returns where the Go module cache holds a dependency of this module.
func ModuleDir(module string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", module, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// defaultCRDFiles lists our CRDs, the chosen Strimzi release's (see StrimziCRDFiles) and, when
// gatewayAPI is set, Gateway API's standard channel.
func defaultCRDFiles(strimziVersion string, gatewayAPI bool, logf func(string, ...any)) ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(root, "manifests", "crds", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if strimziVersion == "" {
		strimziVersion = "1.2.0"
	}
	if strimziVersion != "none" {
		strimzi, source, err := StrimziCRDFiles(strimziVersion)
		if err != nil {
			return nil, err
		}
		logf("Strimzi CRDs: %s", source)
		files = append(files, strimzi...)
	}
	if !gatewayAPI {
		return files, nil
	}
	gw, err := GatewayAPICRDFiles()
	if err != nil {
		return nil, err
	}
	return append(files, gw...), nil
}

// GatewayAPICRDFiles lists Gateway API's standard-channel CRDs from the gateway-api module.
func GatewayAPICRDFiles() ([]string, error) {
	dir, err := ModuleDir("sigs.k8s.io/gateway-api")
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "config", "crd", "standard", "gateway.networking.k8s.io_*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no Gateway API CRDs in %s: %w", dir, err)
	}
	return files, nil
}

// InstallCRDFiles creates (or updates) the CRDs in the files and waits until each is served.
func (cp *ControlPlane) InstallCRDFiles(ctx context.Context, files ...string) error {
	client, err := apiextensionsclient.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	var names []string
	for _, file := range files {
		crds, err := readCRDs(file)
		if err != nil {
			return err
		}
		for _, crd := range crds {
			if err := createOrUpdateCRD(ctx, client, crd); err != nil {
				return fmt.Errorf("installing %s from %s: %w", crd.Name, file, err)
			}
			names = append(names, crd.Name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if err := waitEstablished(ctx, client, name); err != nil {
			return err
		}
	}
	cp.log("installed %d CRDs", len(names))
	return nil
}

func createOrUpdateCRD(ctx context.Context, client apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	_, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	crd.ResourceVersion = existing.ResourceVersion
	_, err = client.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{})
	return err
}

// DeleteCRD deletes a CRD and waits until it is gone, for tests of CRDs installed late.
func (cp *ControlPlane) DeleteCRD(ctx context.Context, name string) error {
	client, err := apiextensionsclient.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	if err := client.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

func readCRDs(file string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := decoder.Decode(crd); err != nil {
			if errors.Is(err, io.EOF) {
				return crds, nil
			}
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if crd.Kind == "CustomResourceDefinition" {
			crds = append(crds, crd)
		}
	}
}

func waitEstablished(ctx context.Context, client apiextensionsclient.Interface, name string) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// openshiftAPIVersion pins the github.com/openshift/api pseudo-version whose Route CRD tests use
// (its @latest resolves to an ancient v3.9.0). It is downloaded on demand, not required by go.mod.
const openshiftAPIVersion = "v0.0.0-20260420151639-34e60874783e"

// OpenShiftRouteCRDFile downloads (once) github.com/openshift/api from the module proxy and
// returns the path of its route.openshift.io/v1 Route CRD.
func OpenShiftRouteCRDFile() (string, error) {
	dir, err := DownloadModule("github.com/openshift/api", openshiftAPIVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "route", "v1", "zz_generated.crd-manifests", "routes.crd.yaml"), nil
}

// DownloadModule fetches a module version into the module cache without touching go.mod and
// returns its folder. Tests use it for CRDs shipped in modules the product does not import.
func DownloadModule(module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", err
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, info.Error)
	}
	return info.Dir, nil
}

// mcsAPIVersion pins sigs.k8s.io/mcs-api, the Kubernetes Multi-Cluster Services API whose
// ServiceExport a stretch Kafka's bootstrap Service may have. Downloaded on demand.
const mcsAPIVersion = "v0.5.2"

// ServiceExportCRDFile downloads (once) sigs.k8s.io/mcs-api from the module proxy and returns the
// path of its ServiceExport CRD (multicluster.x-k8s.io).
func ServiceExportCRDFile() (string, error) {
	dir, err := DownloadModule("sigs.k8s.io/mcs-api", mcsAPIVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "config", "crd", "multicluster.x-k8s.io_serviceexports.yaml"), nil
}
