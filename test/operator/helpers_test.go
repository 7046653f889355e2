package operator_test

import (
	"context"
	"testing"

	"github.com/kafkalink/kafkalink/test/framework"
)

// startWithOperatorBinary starts a control plane (no kube-controller-manager) with opts, and
// builds the operator binary; the tests run that binary as a user would.
func startWithOperatorBinary(t *testing.T, opts framework.Options) (cp *framework.ControlPlane, binary string) {
	t.Helper()
	if testing.Short() {
		t.Skip("control-plane test")
	}
	opts.WithoutControllerManager, opts.Log = true, t.Logf
	cp, err := framework.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if binary, err = framework.BuildBinary("./cmd/kafkalink-operator", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	return cp, binary
}

// operatorKubeconfig installs the operator's RBAC from manifests/ and returns a kubeconfig of
// its ServiceAccount.
func operatorKubeconfig(t *testing.T, cp *framework.ControlPlane) string {
	t.Helper()
	kubeconfig, _, err := cp.InstallOperatorRBAC(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}
