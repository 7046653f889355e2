// Package clone_test checks that a plain `git clone` of the repository, with nothing beside it,
// runs `make demo` to its end: no ../shared, no KAFKALINK_SHARED_DIR, no KAFKALINK_STRIMZI_CRDS.
package clone_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkalink/kafkalink/test/framework"
	"github.com/kafkalink/kafkalink/test/kubelet"
)

// demoLimit bounds the whole demo in the clone: compiling the module's own packages at a new path
// (dependencies come from the build cache), starting everything and producing one record. It
// guards against hangs on a busy two-core machine; it is not a performance assertion.
const demoLimit = 15 * time.Minute

// The lines the demo prints (test/e2e/demo_test.go) that show it got to the end with the
// stand-in Strimzi CRDs.
var wantLines = []string{
	"Strimzi CRDs: stand-in",
	"==> produced and consumed a record through the proxy",
	"==> stopping (-demo-once)",
}

// TestDemoInACleanClone clones HEAD (committed work only: uncommitted changes are not in a clone)
// into a fresh temporary folder and runs `make demo DEMO_ONCE=1` there, as a user's first command.
// It reuses, as a user's second run would, the Go build and module caches and the control plane
// binaries already built (passed through KAFKALINK_CONTROLPLANE_BIN), which take many minutes
// to build and do not depend on the clone.
func TestDemoInACleanClone(t *testing.T) {
	if testing.Short() {
		t.Skip("control-plane test")
	}
	if err := kubelet.CheckPrivateHosts(); err != nil {
		t.Skipf("the demo's proxy needs the backend Service name to resolve, which the runner emulates with a private /etc/hosts: %v", err)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := framework.BinDir(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(git(t, root, "rev-parse", "HEAD"))
	// The clone's parent is a new folder, so there is no ../shared beside the clone.
	clone := filepath.Join(t.TempDir(), "kafkalink")
	git(t, root, "clone", "--quiet", root, clone)
	git(t, clone, "checkout", "--quiet", "--detach", head)

	ctx, cancel := context.WithTimeout(context.Background(), demoLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "demo", "DEMO_ONCE=1")
	cmd.Dir = clone
	cmd.Env = userEnv(bin)
	// A process group, so a timeout stops make, the demo and everything the demo started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 30 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("make demo DEMO_ONCE=1 in %s took %s", clone, time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("make demo DEMO_ONCE=1: %v (limit %s)\n%s", err, demoLimit, tail(string(out)))
	}
	for _, want := range wantLines {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(tail(string(out)))
	}
}

// userEnv is this process's environment as a user's shell would have it: without the variables
// that point at files beside the repository or that make passes to sub-makes, and with the
// control plane binaries already built.
func userEnv(bin string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "KAFKALINK_SHARED_DIR", "KAFKALINK_STRIMZI_CRDS", "KAFKALINK_CONTROLPLANE_BIN",
			"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "KAFKALINK_CONTROLPLANE_BIN="+bin)
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// tail keeps the end of a long output, where a failure shows.
func tail(s string) string {
	const keep = 8000
	if len(s) > keep {
		return "..." + s[len(s)-keep:]
	}
	return s
}
