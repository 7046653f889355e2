package framework

import (
	"fmt"
	"path/filepath"
)

// ServiceBindingRuntimeVersion is the github.com/servicebinding/runtime release whose CRDs, RBAC
// and reconciler the tests use; test/servicebinding/go.mod pins the same one. v0.7.0 is the
// newest release that builds from the Go module proxy: v0.8.0 and later (v1.0.0, which serves
// servicebinding.io/v1, among them) need reconciler.io/runtime, which the proxy does not serve.
const ServiceBindingRuntimeVersion = "v0.7.0"

// ServiceBindingRuntimeDir is the module folder of the Service Binding runtime release, downloaded
// from the module proxy on first use.
func ServiceBindingRuntimeDir() (string, error) {
	return DownloadModule("github.com/servicebinding/runtime", ServiceBindingRuntimeVersion)
}

// ServiceBindingCRDFiles lists the runtime release's CRDs (servicebinding.io ServiceBinding and
// ClusterWorkloadResourceMapping).
func ServiceBindingCRDFiles() ([]string, error) {
	dir, err := ServiceBindingRuntimeDir()
	if err != nil {
		return nil, err
	}
	crds, err := filepath.Glob(filepath.Join(dir, "config", "crd", "bases", "*.yaml"))
	if err == nil && len(crds) == 0 {
		err = fmt.Errorf("no CRDs in %s/config/crd/bases", dir)
	}
	return crds, err
}
