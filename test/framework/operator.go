package framework

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kafkalink/kafkalink/internal/freeport"
)

// Kubectl runs the control plane's kubectl against it as admin and returns its combined output.
func (cp *ControlPlane) Kubectl(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(cp.BinDir, "kubectl"), append([]string{"--kubeconfig", cp.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %v: %w\n%s", args, err, out)
	}
	return string(out), nil
}

// OperatorNamespace and OperatorServiceAccount are where manifests/rbac puts the operator.
const (
	OperatorNamespace      = "kafkalink-system"
	OperatorServiceAccount = "kafkalink-operator"
)

// OperatorUser is the user name the operator's requests carry, for counting its writes.
var OperatorUser = ServiceAccountUser(OperatorNamespace, OperatorServiceAccount)

// InstallOperatorRBAC applies manifests/rbac and returns a kubeconfig that authenticates as the
// operator's ServiceAccount, so the operator runs with exactly the permissions we ship.
func (cp *ControlPlane) InstallOperatorRBAC(ctx context.Context) (kubeconfig string, cfg *rest.Config, err error) {
	root, err := RepoRoot()
	if err != nil {
		return "", nil, err
	}
	if _, err := cp.Kubectl("apply", "-f", filepath.Join(root, "manifests", "rbac")); err != nil {
		return "", nil, err
	}
	cfg, err = cp.ServiceAccountConfig(ctx, OperatorNamespace, OperatorServiceAccount)
	if err != nil {
		return "", nil, err
	}
	kubeconfig = filepath.Join(cp.Dir, "operator.kubeconfig")
	return kubeconfig, cfg, writeKubeconfig(kubeconfig, cfg.Host, cfg.CAData, "kafkalink-operator", cfg.BearerToken)
}

var buildMu sync.Mutex

// BuildBinary builds a main package of this module (such as ./cmd/kafkalink-operator) into dir.
func BuildBinary(pkg, dir string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, output)
	}
	return out, nil
}

// Process is a program a test started, with its output in a log file.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// StartProcess starts a program in its own process group with output to dir/name.log. The
// process is killed if the test binary dies.
func StartProcess(dir, name, binary string, args ...string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process id, which is also its process group's.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit error, once Done is closed.
func (p *Process) Err() error { return p.err }

// Log returns the process output so far.
func (p *Process) Log() string {
	data, _ := os.ReadFile(p.LogPath)
	return string(data)
}

// Stop sends SIGTERM and waits up to timeout, then kills. It returns the exit error of a
// process that stopped by itself in time, and an error when it had to be killed.
func (p *Process) Stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not stop within %s of SIGTERM", p.Name, timeout)
	}
}

// WaitHTTP200 polls url until it answers 200 or the timeout passes.
func WaitHTTP200(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not 200 within %s (last: %s)", url, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// FreeAddress returns a free loopback host:port.
func FreeAddress() string { return fmt.Sprintf("127.0.0.1:%d", freeport.Port()) }

// FreePort returns a free loopback port.
func FreePort() int { return freeport.Port() }
