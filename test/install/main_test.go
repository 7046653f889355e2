// Package install_test checks what a cluster admin installs against the local control plane: the
// Helm chart's rendered output is accepted by the API server, and its RBAC is enough for the
// operator (run in-process as the chart's ServiceAccount) with and without watchNamespaces; the
// kustomize example overlay builds with the control plane's kubectl and is accepted too.
package install_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/kafkalink/kafkalink/test/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping control-plane tests in -short mode")
		os.Exit(0)
	}
	var err error
	cp, err = framework.Start(context.Background(), framework.Options{
		WithoutControllerManager: true, // no pods run anyway: there is no kubelet
		Log:                      func(f string, a ...any) { fmt.Printf(f+"\n", a...) },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		os.Exit(1)
	}
	code := m.Run()
	cp.Stop()
	os.Exit(code)
}
