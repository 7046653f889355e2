// Command demo runs kafkalink on a local control plane: it builds (or reuses) kube-apiserver,
// etcd, kube-controller-manager and kubectl, starts them, installs the CRDs and the seeds'
// examples, runs the operator under the RBAC it ships with, and prints the kubectl line to use.
// Everything stops on Ctrl-C.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kafkalink/kafkalink/test/framework"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	say := func(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

	dir, err := os.MkdirTemp("", "kafkalink-demo-")
	if err != nil {
		return err
	}
	say("starting a local control plane in %s", dir)
	cp, err := framework.Start(ctx, framework.Options{Dir: dir, Log: say})
	if err != nil {
		return err
	}
	defer cp.Stop()

	say("installing the operator's RBAC and building the operator")
	kubeconfig, _, err := cp.InstallOperatorRBAC(ctx)
	if err != nil {
		return err
	}
	binary, err := framework.BuildBinary("./cmd/kafkalink-operator", dir)
	if err != nil {
		return err
	}
	health := framework.FreeAddress()
	operator, err := framework.StartProcess(dir, "kafkalink-operator", binary,
		"--kubeconfig="+kubeconfig, "--health-address="+health, "--metrics-address="+framework.FreeAddress(),
		"--leader-election-namespace="+framework.OperatorNamespace, "--v=2")
	if err != nil {
		return err
	}
	defer func() { _ = operator.Stop(15 * time.Second) }()
	if err := framework.WaitHTTP200(ctx, "http://"+health+"/readyz", time.Minute); err != nil {
		return fmt.Errorf("%w\n%s", err, operator.Log())
	}
	say("operator ready (log: %s)", operator.LogPath)

	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	if _, err := cp.Kubectl("create", "namespace", "my-namespace"); err != nil {
		return err
	}
	// One scenario at a time would be clearer in a cluster; the demo shows the in-cluster one and
	// the other kinds, because the scenarios reuse object names.
	for _, name := range []string{"scenario-1-in-cluster.yaml", "kafkagatewayparameters.yaml", "kafkabackendtlspolicy.yaml", "kafkafilter.yaml", "kafkaconnection.yaml"} {
		file := filepath.Join(root, "manifests", "examples", "seeds", name)
		if name == "kafkafilter.yaml" {
			if _, err := cp.Kubectl("create", "namespace", "my-proxy"); err != nil {
				return err
			}
		}
		out, err := cp.Kubectl("apply", "-f", file)
		if err != nil {
			return err
		}
		fmt.Print(out)
	}
	out, err := cp.Kubectl("get", "kafkalink", "--all-namespaces")
	if err != nil {
		return err
	}
	fmt.Print(out)

	kubectl := filepath.Join(cp.BinDir, "kubectl")
	fmt.Printf(`
kafkalink is running. In another terminal:

  export KUBECONFIG=%s
  %s get kafkalink --all-namespaces

Press Ctrl-C to stop everything.
`, cp.Kubeconfig, kubectl)
	<-ctx.Done()
	say("stopping")
	return nil
}
