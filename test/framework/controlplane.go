// Package framework starts a real local control plane (etcd, kube-apiserver and
// kube-controller-manager, built from the Go module proxy by hack/build-controlplane.sh) on
// loopback with random ports, TLS and RBAC, installs the CRDs kafkalink works with, and hands out
// clients and a kubeconfig. Tests and `make demo` both use it.
package framework

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kafkalink/kafkalink/internal/freeport"
)

// Options configure a control plane.
type Options struct {
	// Dir holds certificates, etcd data, logs and the kubeconfig; a new temporary folder when empty.
	Dir string
	// StrimziVersion picks the Strimzi CRDs to install (see StrimziCRDFiles for where they come
	// from): "1.2.0" (serves kafka.strimzi.io/v1, the default) or "0.45.0" (serves v1beta2 only).
	// "none" installs no Strimzi CRDs, to test an operator that starts before them.
	StrimziVersion string
	// WithoutGatewayAPI installs no Gateway API CRDs, as on a cluster that has Strimzi only.
	WithoutGatewayAPI bool
	// ExtraCRDFiles are more CRD YAML files to install.
	ExtraCRDFiles []string
	// WithoutControllerManager skips kube-controller-manager, for tests that need no garbage
	// collection and want the CPU.
	WithoutControllerManager bool
	// Controllers is kube-controller-manager's --controllers ("*" when empty). The end-to-end
	// tests use "*,-deployment,-replicaset" so the local kubelet runner owns Deployment status.
	Controllers string
	// Log receives progress lines; none when nil.
	Log func(format string, args ...any)
}

// ControlPlane is a running etcd, kube-apiserver and (unless disabled) kube-controller-manager.
type ControlPlane struct {
	// Dir holds the control plane's files.
	Dir string
	// Kubeconfig is the path of an admin kubeconfig.
	Kubeconfig string
	// Config is an admin client configuration.
	Config *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
	// AuditLog is the path of the API server's audit log of write requests.
	AuditLog string
	// BinDir holds the control plane binaries, kubectl among them.
	BinDir string
	// EtcdURL is etcd's client URL, for tests that act on the store itself (CompactEtcd).
	EtcdURL string

	adminToken string
	procs      []*process
	// stoppedAPIServer holds kube-apiserver's flags while StopAPIServer has it stopped.
	stoppedAPIServer []string
	ownsDir          bool
	log              func(format string, args ...any)
}

type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start builds (or reuses) the control plane binaries and starts them. Call Stop when done.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	binDir, err := BinDir(logf)
	if err != nil {
		return nil, err
	}
	cp = &ControlPlane{Dir: opts.Dir, BinDir: binDir, log: logf}
	if cp.Dir == "" {
		if cp.Dir, err = os.MkdirTemp("", "kafkalink-controlplane-"); err != nil {
			return nil, err
		}
		cp.ownsDir = true
	}
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()
	caPEM, err := writeServingPKI(cp.Dir)
	if err != nil {
		return nil, fmt.Errorf("writing certificates: %w", err)
	}
	cp.adminToken = randomToken()
	if err := os.WriteFile(filepath.Join(cp.Dir, "tokens.csv"),
		[]byte(cp.adminToken+",kafkalink-admin,kafkalink-admin,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cp.Dir, "audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	cp.AuditLog = filepath.Join(cp.Dir, "audit.log")

	etcdPort, etcdPeerPort, apiPort := freeport.Port(), freeport.Port(), freeport.Port()
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	cp.EtcdURL = etcdURL
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeerPort)
	if err := cp.start("etcd",
		"--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync", "--log-level=warn",
	); err != nil {
		return nil, err
	}
	if err := cp.start("kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir="+filepath.Join(cp.Dir, "apiserver"),
		"--tls-cert-file="+filepath.Join(cp.Dir, "serving.crt"),
		"--tls-private-key-file="+filepath.Join(cp.Dir, "serving.key"),
		"--token-auth-file="+filepath.Join(cp.Dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+filepath.Join(cp.Dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(cp.Dir, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--endpoint-reconciler-type=none",
		"--audit-policy-file="+filepath.Join(cp.Dir, "audit-policy.yaml"),
		"--audit-log-path="+cp.AuditLog, "--audit-log-format=json",
		"--audit-log-mode=blocking",
		// Never rotated (the default rotates at 100 MB): Writes reads one file, and 20,000
		// connections write more than that.
		"--audit-log-maxsize=1000000",
		// On SIGTERM, end the watches at once and give them 2 s to drain, as a rolling upgrade
		// of a production API server does, instead of holding them until --shutdown-timeout.
		"--shutdown-watch-termination-grace-period=2s",
		"--v=0",
	); err != nil {
		return nil, err
	}
	host := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	cp.Config = &rest.Config{
		Host:            host,
		BearerToken:     cp.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		QPS:             200,
		Burst:           400,
	}
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return nil, err
	}
	if err := cp.waitReady(ctx); err != nil {
		return nil, err
	}
	cp.Kubeconfig = filepath.Join(cp.Dir, "kubeconfig")
	if err := writeKubeconfig(cp.Kubeconfig, host, caPEM, "kafkalink-admin", cp.adminToken); err != nil {
		return nil, err
	}
	// CRDs first: kube-controller-manager's garbage collector discovers resources at start and
	// then only every 30 s, so CRDs installed after it would delay collecting their objects.
	crds, err := defaultCRDFiles(opts.StrimziVersion, !opts.WithoutGatewayAPI, logf)
	if err != nil {
		return nil, err
	}
	if err := cp.InstallCRDFiles(ctx, append(crds, opts.ExtraCRDFiles...)...); err != nil {
		return nil, err
	}
	if !opts.WithoutControllerManager {
		controllers := opts.Controllers
		if controllers == "" {
			controllers = "*"
		}
		if err := cp.start("kube-controller-manager",
			"--kubeconfig="+cp.Kubeconfig,
			"--controllers="+controllers,
			"--use-service-account-credentials=false",
			"--service-account-private-key-file="+filepath.Join(cp.Dir, "sa.key"),
			"--root-ca-file="+filepath.Join(cp.Dir, "ca.crt"),
			"--leader-elect=false",
			"--secure-port=0",
			"--concurrent-gc-syncs=5",
			"--v=0",
		); err != nil {
			return nil, err
		}
	}
	logf("control plane ready at %s (kubeconfig %s)", host, cp.Kubeconfig)
	return cp, nil
}

// auditPolicy records every write at Metadata level, so tests can count the operator's writes,
// and the operator's reads (its user only: a handful of LISTs and watches, unless it reads per
// object), so benchmarks can say what it asks of the API server (ControlPlane.Reads).
var auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: Metadata
  users: ["` + OperatorUser + `"]
  verbs: ["get", "list", "watch"]
- level: None
`

func (cp *ControlPlane) start(name string, args ...string) error {
	logPath := filepath.Join(cp.Dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(cp.BinDir, name), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A process group of its own, so Stop reaches it and nothing outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	cp.procs = append(cp.procs, p)
	cp.log("started %s (pid %d, log %s)", name, cmd.Process.Pid, logPath)
	return nil
}

func (cp *ControlPlane) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	transport, err := rest.TransportFor(cp.Config)
	if err != nil {
		return err
	}
	httpClient := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	for {
		for _, p := range cp.procs {
			select {
			case <-p.done:
				return fmt.Errorf("%s exited early (%w); its log: %s", p.name, p.err, cp.tail(p.name))
			default:
			}
		}
		resp, err := httpClient.Get(cp.Config.Host + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready: %w; its log: %s", ctx.Err(), cp.tail("kube-apiserver"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// tail returns the last lines of a component's log, for error messages.
func (cp *ControlPlane) tail(name string) string {
	f, err := os.Open(filepath.Join(cp.Dir, name+".log"))
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > 15 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// Stop stops every process this control plane started, newest first, and removes its folder
// if Start made it.
func (cp *ControlPlane) Stop() {
	if cp == nil {
		return
	}
	for i := len(cp.procs) - 1; i >= 0; i-- {
		p := cp.procs[i]
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	cp.procs = nil
	if cp.ownsDir {
		_ = os.RemoveAll(cp.Dir)
	}
}

func writeKubeconfig(path, host string, caPEM []byte, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kafkalink"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["kafkalink"] = &clientcmdapi.Context{Cluster: "kafkalink", AuthInfo: user}
	cfg.CurrentContext = "kafkalink"
	return clientcmd.WriteToFile(*cfg, path)
}

// RepoRoot finds the repository root (the folder with this module's go.mod) above the working
// directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/kafkalink/kafkalink\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the kafkalink repository")
		}
		dir = parent
	}
}

// BinDir returns the folder with the control plane binaries: $KAFKALINK_CONTROLPLANE_BIN when
// set (the Makefile builds once and sets it), else the output of hack/build-controlplane.sh,
// which reuses an earlier build.
func BinDir(logf func(string, ...any)) (string, error) {
	if dir := os.Getenv("KAFKALINK_CONTROLPLANE_BIN"); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	logf("building the control plane (cached after the first build)")
	cmd := exec.Command("bash", filepath.Join(root, "hack", "build-controlplane.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/build-controlplane.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}
