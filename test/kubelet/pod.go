package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Crash-loop backoff: the kubelet waits 10s doubling to 5m; tests want a shorter leash.
const (
	initialBackoff = time.Second
	maxBackoff     = 30 * time.Second
	// stableRun resets the backoff, as the kubelet forgets old crashes after a while.
	stableRun = 30 * time.Second
)

// volumeState is one laid-out volume of a pod.
type volumeState struct {
	kind        volumeKind
	dir         string
	fingerprint [32]byte
	written     bool
}

// process is one run of the container's binary.
type process struct {
	cmd     *exec.Cmd
	pid     int
	started time.Time
	done    chan struct{}
	err     error
	exited  time.Time
	cancel  context.CancelFunc // stops the prober
	// stopping is set when the runner itself stops the process, so its exit is no news.
	stopping bool
}

// pod is the local stand-in for the one replica of a Deployment's current template. Its
// fields are changed by the worker that syncs its key (one at a time, by the queue's
// guarantee), its prober and its exit watcher, so they are guarded by mu.
type pod struct {
	key     cache.ObjectName
	name    string
	hash    string
	binary  string
	dir     string
	logPath string
	grace   time.Duration
	info    podInfo

	mu       sync.Mutex
	volumes  map[string]*volumeState
	proc     *process
	ready    bool
	restarts int
	backoff  time.Duration
	waiting  string
	args     []string
	env      []string
	mounts   []Mount
}

func (r *Runner) newPod(d *appsv1.Deployment, hash, binary string) *pod {
	name := d.Name + "-" + hash + "-local"
	grace := r.opts.StopTimeout
	if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil && time.Duration(*g)*time.Second < grace {
		grace = time.Duration(*g) * time.Second
	}
	sa := d.Spec.Template.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	return &pod{
		key:     cache.MetaObjectToName(d),
		name:    name,
		hash:    hash,
		binary:  binary,
		dir:     filepath.Join(r.opts.WorkDir, d.Namespace, name),
		logPath: filepath.Join(r.opts.WorkDir, "logs", d.Namespace+"_"+name+".log"),
		grace:   grace,
		info: podInfo{
			name: name, namespace: d.Namespace, uid: string(d.UID) + "-" + hash, serviceAccount: sa,
			labels: d.Spec.Template.Labels, annotations: d.Spec.Template.Annotations,
		},
		volumes: map[string]*volumeState{},
	}
}

// layoutVolumes writes every volume whose content changed since the last call. The first
// error is returned after the other volumes were tried, so one missing Secret does not keep
// an unrelated volume stale.
func (p *pod) layoutVolumes(logger klog.Logger, o objects, spec *corev1.PodSpec) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var firstErr error
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		st := p.volumes[v.Name]
		if st == nil {
			st = &volumeState{kind: kindOf(v), dir: filepath.Join(p.dir, "volumes", v.Name)}
			switch st.kind {
			case kindHostPath:
				st.dir = v.HostPath.Path
			case kindUnsupported:
				logger.Info("Volume type not supported, providing an empty folder", "pod", p.name, "volume", v.Name)
			}
			p.volumes[v.Name] = st
		}
		switch st.kind {
		case kindAtomic:
			payload, skipped, err := volumePayload(o, v)
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("volume %q: %w", v.Name, err)
				}
				continue
			}
			fp := payload.fingerprint()
			if st.written && fp == st.fingerprint {
				continue
			}
			if !st.written {
				for _, s := range skipped {
					logger.Info("Projected volume source not supported, skipped", "pod", p.name, "volume", v.Name, "source", s)
				}
			}
			if err := WriteAtomic(st.dir, payload); err != nil {
				return fmt.Errorf("volume %q: %w", v.Name, err)
			}
			if st.written {
				logger.V(2).Info("Updated volume", "pod", p.name, "volume", v.Name, "files", len(payload))
			}
			st.fingerprint, st.written = fp, true
		case kindEmptyDir, kindUnsupported:
			if !st.written {
				if err := os.MkdirAll(st.dir, 0o755); err != nil {
					return err
				}
				st.written = true
			}
		case kindHostPath:
			st.written = true
		}
	}
	if firstErr != nil {
		return wrapWaiting(firstErr)
	}
	return nil
}

// wrapWaiting keeps a waitingError recognisable through fmt.Errorf wrapping with %w.
func wrapWaiting(err error) error {
	var w *waitingError
	if errors.As(err, &w) {
		return &waitingError{msg: err.Error()}
	}
	return err
}

// containerMounts maps each volume mount to a local path. A subPath of a Secret, ConfigMap or
// projected volume is a copy made now, because the kubelet bind-mounts the resolved file at
// container start and such a mount never sees later updates; a subPath of an emptyDir or
// hostPath is the live folder, created when missing.
func (p *pod) containerMounts(c *corev1.Container, env []corev1.EnvVar) ([]Mount, error) {
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	var mounts []Mount
	for i, m := range c.VolumeMounts {
		st := p.volumes[m.Name]
		if st == nil {
			return nil, fmt.Errorf("volume mount %q names no volume", m.Name)
		}
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = expand(m.SubPathExpr, vars)
		}
		local := st.dir
		if sub != "" {
			if err := validatePath(strings.TrimSuffix(sub, "/")); err != nil {
				return nil, waiting("volume mount %q: bad subPath %q", m.Name, sub)
			}
			src := filepath.Join(st.dir, filepath.FromSlash(sub))
			switch st.kind {
			case kindAtomic:
				resolved, err := filepath.EvalSymlinks(src)
				if err != nil {
					return nil, waiting("volume mount %q: subPath %q does not exist in volume %q", m.Name, sub, m.Name)
				}
				local = filepath.Join(p.dir, "subpaths", c.Name, fmt.Sprint(i), path.Base(sub))
				if err := os.RemoveAll(filepath.Dir(local)); err != nil {
					return nil, err
				}
				if err := copyPath(resolved, local); err != nil {
					return nil, err
				}
			default:
				if err := os.MkdirAll(src, 0o755); err != nil {
					return nil, err
				}
				local = src
			}
		}
		mounts = append(mounts, Mount{MountPath: m.MountPath, Local: local})
	}
	sortMounts(mounts)
	return mounts, nil
}

// copyPath copies a file or a folder tree.
func copyPath(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if fi.IsDir() {
		return os.CopyFS(dst, os.DirFS(src))
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, fi.Mode().Perm()); err != nil {
		return err
	}
	return os.Chmod(dst, fi.Mode().Perm())
}

// start starts the container's process; the volumes must be laid out.
func (p *pod) start(ctx context.Context, r *Runner, d *appsv1.Deployment, o objects) error {
	logger := klog.FromContext(ctx)
	c := d.Spec.Template.Spec.Containers[0].DeepCopy()
	if len(d.Spec.Template.Spec.Containers) > 1 {
		logger.Info("Only the first container runs locally", "pod", p.name, "container", c.Name)
	}
	env, err := containerEnv(o, p.info, c)
	if err != nil {
		return wrapWaiting(err)
	}
	p.mu.Lock()
	mounts, err := p.containerMounts(c, env)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	args := append(append([]string(nil), r.opts.ExtraArgs...), containerArgs(c, env, mounts, r.remapFlag, r.opts.KeepArgs)...)
	procEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + p.dir, "HOSTNAME=" + p.name}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		procEnv = append(procEnv, "TMPDIR="+tmp)
	}
	var envList []string
	for _, e := range env {
		envList = append(envList, e.Name+"="+e.Value)
	}
	procEnv = append(procEnv, envList...)

	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.binary, args...)
	if aliases := append(append([]corev1.HostAlias(nil), d.Spec.Template.Spec.HostAliases...), r.opts.HostAliases...); len(aliases) > 0 {
		if err := CheckPrivateHosts(); err != nil {
			logFile.Close()
			return waiting("hostAliases: %v", err)
		}
		hostsPath := filepath.Join(p.dir, "etc-hosts")
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			logFile.Close()
			return err
		}
		if err := os.WriteFile(hostsPath, HostsFile(p.name, aliases), 0o644); err != nil {
			logFile.Close()
			return err
		}
		// unshare and sh exec in turn, so the pid is the binary's once it runs.
		cmd = exec.Command("unshare", privateHostsArgs(hostsPath, p.binary, args)...)
	}
	cmd.Env = procEnv
	cmd.Dir = p.dir
	if c.WorkingDir != "" {
		if local, ok := rewritePath(c.WorkingDir, mounts); ok {
			cmd.Dir = local
		}
	}
	var out io.Writer = logFile
	if r.opts.ProcessOutput != nil {
		out = io.MultiWriter(logFile, &linePrefixer{w: r.opts.ProcessOutput, prefix: p.key.Namespace + "/" + p.name + ": "})
		// A pipe (not the file) now carries output; a grandchild that keeps it open must not
		// hold Wait forever.
		cmd.WaitDelay = 2 * time.Second
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so a stop reaches its children too; Pdeathsig, so nothing
	// outlives a test binary that dies without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", p.binary, err)
	}
	probeCtx, cancel := context.WithCancel(ctx)
	proc := &process{cmd: cmd, pid: cmd.Process.Pid, started: time.Now(), done: make(chan struct{}), cancel: cancel}
	p.mu.Lock()
	if p.proc != nil {
		p.restarts++
	}
	p.proc, p.ready, p.waiting = proc, false, ""
	p.args, p.env, p.mounts = args, envList, mounts
	p.mu.Unlock()
	logger.Info("Started process", "pod", p.name, "pid", proc.pid, "binary", p.binary, "log", p.logPath)
	logger.V(2).Info("Process command line", "pod", p.name, "args", args)

	go func() {
		err := cmd.Wait()
		logFile.Close()
		// Anything the process left in its group goes with it, as with a container.
		killGroup(proc.pid, syscall.SIGKILL)
		p.mu.Lock()
		proc.err, proc.exited = err, time.Now()
		p.ready = false
		p.mu.Unlock()
		close(proc.done)
		cancel()
		p.mu.Lock()
		stopping := proc.stopping
		p.mu.Unlock()
		switch {
		case ctx.Err() != nil:
		case stopping:
			logger.V(2).Info("Process stopped", "pod", p.name, "pid", proc.pid, "err", err)
		default:
			logger.Info("Process exited", "pod", p.name, "pid", proc.pid, "err", err, "log", p.logPath)
			r.ctrl.Enqueue(p.key)
		}
	}()
	go p.probeLoop(probeCtx, r, proc, newProber(c, r.opts.PodIP))
	return nil
}

// probeLoop updates readiness from the probe until the process exits, and enqueues the
// Deployment when readiness flips so its status follows.
func (p *pod) probeLoop(ctx context.Context, r *Runner, proc *process, pr *prober) {
	logger := klog.FromContext(ctx)
	successNeeded, failureNeeded := pr.thresholds()
	successes, failures := 0, 0
	if pr.probe != nil && !pr.supported() {
		logger.Info("Readiness probe kind not supported locally; the pod counts as ready", "pod", p.name)
	}
	ticker := time.NewTicker(pr.interval(r.opts.ProbeInterval))
	defer ticker.Stop()
	for {
		ok, detail := pr.check(ctx)
		if ctx.Err() != nil {
			return
		}
		if ok {
			successes, failures = successes+1, 0
		} else {
			successes, failures = 0, failures+1
		}
		p.mu.Lock()
		changed := false
		if p.proc == proc {
			switch {
			case !p.ready && successes >= successNeeded:
				p.ready, changed = true, true
			case p.ready && failures >= failureNeeded:
				p.ready, changed = false, true
			}
		}
		ready := p.ready
		p.mu.Unlock()
		if changed {
			logger.Info("Readiness changed", "pod", p.name, "ready", ready, "probe", detail)
			r.ctrl.Enqueue(p.key)
		}
		select {
		case <-ctx.Done():
			return
		case <-proc.done:
			return
		case <-ticker.C:
		}
	}
}

// stop stops the process (SIGTERM to its group, SIGKILL after the grace period) and removes
// the pod's folder; the log stays.
func (p *pod) stop(logger klog.Logger, reason string) {
	p.mu.Lock()
	proc := p.proc
	if proc != nil {
		proc.stopping = true
	}
	p.mu.Unlock()
	if proc != nil {
		select {
		case <-proc.done:
		default:
			logger.Info("Stopping process", "pod", p.name, "pid", proc.pid, "reason", reason)
			killGroup(proc.pid, syscall.SIGTERM)
			select {
			case <-proc.done:
			case <-time.After(p.grace):
				logger.Info("Process ignored SIGTERM, killing it", "pod", p.name, "pid", proc.pid, "grace", p.grace)
				killGroup(proc.pid, syscall.SIGKILL)
				<-proc.done
			}
		}
		proc.cancel()
	}
	if err := os.RemoveAll(p.dir); err != nil {
		logger.Error(err, "Removing pod folder", "pod", p.name)
	}
}

func (p *pod) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return false
	}
	select {
	case <-p.proc.done:
		return false
	default:
		return true
	}
}

func (p *pod) everStarted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc != nil
}

func (p *pod) setWaiting(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting = msg
}

// restartDelay is how long to wait before restarting an exited process; it also advances the
// backoff when the wait is over.
func (p *pod) restartDelay(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return 0
	}
	if p.proc.exited.Sub(p.proc.started) >= stableRun {
		p.backoff = 0
	}
	if wait := p.proc.exited.Add(p.backoff).Sub(now); wait > 0 {
		return wait
	}
	switch {
	case p.backoff == 0:
		p.backoff = initialBackoff
	case p.backoff < maxBackoff:
		p.backoff = min(2*p.backoff, maxBackoff)
	}
	return 0
}

// phase is what status needs: a process is up (or being restarted), and whether it is ready.
func (p *pod) phase() podPhase {
	p.mu.Lock()
	defer p.mu.Unlock()
	return podPhase{exists: p.proc != nil, ready: p.ready, hash: p.hash}
}

func (p *pod) snapshot() Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Pod{
		Namespace: p.key.Namespace, Deployment: p.key.Name, Name: p.name, TemplateHash: p.hash,
		Ready: p.ready, Restarts: p.restarts, Waiting: p.waiting, Dir: p.dir, LogPath: p.logPath,
		Binary: p.binary, Args: append([]string(nil), p.args...), Env: append([]string(nil), p.env...),
		Mounts: append([]Mount(nil), p.mounts...), Volumes: map[string]string{},
	}
	if p.proc != nil {
		select {
		case <-p.proc.done:
		default:
			s.PID = p.proc.pid
		}
	}
	for name, v := range p.volumes {
		s.Volumes[name] = v.dir
	}
	return s
}

// linePrefixer writes whole lines, each with a prefix; a partial line waits for its end.
type linePrefixer struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (l *linePrefixer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		line := append([]byte(l.prefix), l.buf[:i+1]...)
		l.buf = l.buf[i+1:]
		if _, err := l.w.Write(line); err != nil {
			return len(b), nil // the demo's terminal going away must not stop the process
		}
	}
	if len(l.buf) > 64*1024 { // a process that never ends a line still shows up
		_, _ = l.w.Write(append(append([]byte(l.prefix), l.buf...), '\n'))
		l.buf = l.buf[:0]
	}
	return len(b), nil
}
