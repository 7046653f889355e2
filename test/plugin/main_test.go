// Package plugin_test runs kubectl kafkalink, built from cmd/kubectl-kafkalink, against a local
// control plane where the real kafkalink-operator reconciles connections and gateways, and pins
// its output (no colour: stdout is not a terminal) in golden files.
package plugin_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	"github.com/kafkalink/kafkalink/test/framework"
)

var update = flag.Bool("update", false, "rewrite the golden files from the plugin's output")

// waitLimit bounds every wait; it guards against hangs and is not a performance assertion.
const waitLimit = 90 * time.Second

var (
	cp      *framework.ControlPlane
	kl      kafkalinkclient.Interface
	dyn     dynamic.Interface
	plugin  string
	workDir string
	op      *framework.Process
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping control-plane tests in -short mode")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	var err error
	fail := func(what string, err error) int { fmt.Fprintln(os.Stderr, what+":", err); return 1 }
	if cp, err = framework.Start(ctx, framework.Options{Log: func(f string, a ...any) { fmt.Printf(f+"\n", a...) }}); err != nil {
		return fail("starting the control plane", err)
	}
	defer cp.Stop()
	kubeconfig, _, err := cp.InstallOperatorRBAC(ctx)
	if err != nil {
		return fail("RBAC", err)
	}
	if kl, err = kafkalinkclient.NewForConfig(cp.Config); err != nil {
		return fail("client", err)
	}
	if dyn, err = dynamic.NewForConfig(cp.Config); err != nil {
		return fail("client", err)
	}
	if workDir, err = os.MkdirTemp("", "kafkalink-plugin-test-"); err != nil {
		return fail("temporary folder", err)
	}
	defer os.RemoveAll(workDir)
	operator, err := framework.BuildBinary("./cmd/kafkalink-operator", workDir)
	if err != nil {
		return fail("building the operator", err)
	}
	if plugin, err = framework.BuildBinary("./cmd/kubectl-kafkalink", workDir); err != nil {
		return fail("building the plugin", err)
	}
	health, metrics := framework.FreeAddress(), framework.FreeAddress()
	if op, err = framework.StartProcess(workDir, "operator", operator, "--kubeconfig="+kubeconfig,
		"--health-address="+health, "--metrics-address="+metrics, "--leader-elect=false", "--v=2"); err != nil {
		return fail("starting the operator", err)
	}
	defer func() { _ = op.Stop(10 * time.Second) }()
	if err := framework.WaitHTTP200(ctx, "http://"+health+"/readyz", waitLimit); err != nil {
		return fail("operator readiness", fmt.Errorf("%w\n%s", err, op.Log()))
	}
	return m.Run()
}

// kafkalink runs the plugin as an admin with the arguments and returns its stdout.
func kafkalink(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, plugin, append([]string{"--kubeconfig", cp.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "NO_COLOR=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl-kafkalink %v: %v\n%s%s", args, err, out.String(), errOut.String())
	}
	return out.String()
}

// poll waits for cond, failing with the operator's log when it does not hold in time.
func poll(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitLimit, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok && err == nil, nil
	})
	if err != nil {
		log := op.Log()
		if len(log) > 6000 {
			log = log[len(log)-6000:]
		}
		t.Fatalf("waiting for %s: %v (last: %v)\noperator log tail:\n%s", what, err, last, log)
	}
}

// apply runs kubectl apply with the YAML, as a user would.
func apply(t *testing.T, yaml string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(f, []byte(framework.WithTestKeyPair(yaml)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cp.Kubectl("apply", "-f", f); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// golden compares the plugin's output with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
