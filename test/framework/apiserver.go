package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// StopAPIServer kills this control plane's kube-apiserver, as a lost cluster would be lost:
// etcd keeps running, so StartAPIServer brings the same cluster back.
func (cp *ControlPlane) StopAPIServer() {
	cp.StopAPIServerWith(syscall.SIGKILL)
}

// StopAPIServerWith stops kube-apiserver with sig and waits until it has exited: SIGKILL as a
// crash, SIGTERM as a rolling upgrade does (it ends its watches and shuts down gracefully). A
// process still running 20 s after SIGTERM is killed, as the kubelet would after a grace period:
// kube-apiserver waits up to its --shutdown-timeout (60 s) for requests in flight.
func (cp *ControlPlane) StopAPIServerWith(sig syscall.Signal) {
	i := slices.IndexFunc(cp.procs, func(p *process) bool { return p.name == "kube-apiserver" })
	if i < 0 {
		return
	}
	p := cp.procs[i]
	cp.stoppedAPIServer = p.cmd.Args[1:]
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	cp.procs = slices.Delete(cp.procs, i, i+1)
	cp.log("stopped kube-apiserver (%s)", sig)
}

// StartAPIServer starts the kube-apiserver StopAPIServer stopped, with the same flags (so the
// same port, certificates, tokens and etcd), and waits until it is ready. Clients built before
// keep working.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	if cp.stoppedAPIServer == nil {
		return fmt.Errorf("kube-apiserver is not stopped")
	}
	// Keep the first run's log beside the new one.
	log := filepath.Join(cp.Dir, "kube-apiserver.log")
	_ = os.Rename(log, log+".before-stop")
	if err := cp.start("kube-apiserver", cp.stoppedAPIServer...); err != nil {
		return err
	}
	cp.stoppedAPIServer = nil
	return cp.waitReady(ctx)
}

// PID is the process id of the control plane's process called name (etcd, kube-apiserver,
// kube-controller-manager), or 0 when it does not run.
func (cp *ControlPlane) PID(name string) int {
	for _, p := range cp.procs {
		if p.name == name && p.cmd.Process != nil {
			return p.cmd.Process.Pid
		}
	}
	return 0
}
