// Package kubelet is a small local stand-in for a kubelet, for control-plane tests and the
// demo, where there are no nodes. A Runner watches Deployments and, for each one whose first
// container's image maps to a local binary, runs one replica as a local process:
//
//   - it lays out the pod template's Secret, ConfigMap and projected volumes in a work folder
//     with the kubelet's atomic `..data` symlink swap, keeps them up to date while the process
//     runs (no restart, as a kubelet does), and provides emptyDir and hostPath volumes;
//   - it starts the binary with the container's command[1:] and args ($(VAR) expanded, mount
//     paths rewritten), its environment, and one `--remap-path <mountPath>=<local>` per
//     volume mount, so paths in configuration files resolve to the local layout;
//   - it gives the process the /etc/hosts a kubelet would (loopback, the pod's name, the
//     template's spec.hostAliases and Options.HostAliases) in a private mount namespace, so a
//     process that dials a Service as <service>.<namespace> reaches a loopback server; with no
//     aliases at all the process runs as is;
//   - it restarts the process when the pod template changes (a rollout) or when it exits
//     (restartPolicy Always, with backoff), and stops it when the Deployment is deleted or
//     scaled to zero;
//   - it probes readiness (httpGet, tcpSocket) and writes the Deployment status as the
//     deployment controller would, so kube-controller-manager must not run its deployment
//     controller against the same objects (--controllers=*,-deployment,-replicaset).
//
// It is generic: nothing here knows the gateway's layout.
package kubelet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/pkg/controller"
)

// DefaultRemapFlag is the flag the runner passes once per volume mount, as FROM=TO; it is
// kafkalink-proxy's.
const DefaultRemapFlag = "--remap-path"

// FieldManager names the runner's Deployment status writes.
const FieldManager = "kafkalink-test-kubelet"

// Options configure a Runner.
type Options struct {
	// Client reads Deployments, Secrets and ConfigMaps and writes Deployment status.
	Client kubernetes.Interface
	// Namespace limits the runner to one namespace; "" watches all.
	Namespace string
	// Images maps a container image to a local binary. A key ending in "*" matches every image
	// that starts with the rest of the key (the longest such key wins); other keys match exactly.
	Images map[string]string
	// ImageMatcher is asked when no Images key matches.
	ImageMatcher func(image string) (binary string, ok bool)
	// WorkDir holds volumes, sub-path snapshots and process logs. Required.
	WorkDir string
	// RemapFlag is passed once per volume mount as `RemapFlag <mountPath>=<local path>`;
	// DefaultRemapFlag when empty. "-" passes none.
	RemapFlag string
	// KeepArgs passes command and args verbatim. By default an argument that is a path inside
	// a volume mount (or a --flag=value whose value is) is rewritten to the local path, because
	// a flag such as --config names a file the binary opens before any remapping.
	KeepArgs bool
	// ExtraArgs go before the container's own arguments of every process, for what a test
	// changes in every pod, such as `--bind-address=127.0.0.1` so nothing listens beyond loopback.
	ExtraArgs []string
	// ProbeInterval is the longest time between two readiness probes (250ms when zero); a
	// probe's shorter periodSeconds wins.
	ProbeInterval time.Duration
	// StopTimeout caps the pod's terminationGracePeriodSeconds between SIGTERM and SIGKILL
	// (10s when zero).
	StopTimeout time.Duration
	// Logger receives the runner's logs; klog.FromContext(ctx) of Run when unset.
	Logger *klog.Logger
	// HostAliases are /etc/hosts entries every process gets after its pod template's own
	// spec.hostAliases (which the runner honours too). They stand in for cluster DNS: map
	// <service>.<namespace> to 127.0.0.1 and give the Service the real server's port, and a
	// process that dials the Service reaches the server. A process with any alias runs in a
	// private mount namespace with its own /etc/hosts (PrivateHostsCommand), which needs root;
	// New fails when these are set and the machine does not allow it.
	HostAliases []corev1.HostAlias
	// PodIP is where readiness probes reach the pods (127.0.0.1 when empty): a runner whose
	// processes bind another loopback address (ExtraArgs), so that two runners on one machine
	// can run the same Deployment as two clusters would, probes them there.
	PodIP string
	// ProcessOutput, when set, also receives every process's output, each line prefixed with
	// "<namespace>/<pod>: " (for the demo); the log files under WorkDir/logs get it anyway.
	ProcessOutput io.Writer
}

// Runner runs one local process per matching Deployment. Make it with New, then call Run.
type Runner struct {
	opts        Options
	remapFlag   string
	ctrl        *controller.Controller
	factory     informers.SharedInformerFactory
	deployments appslisters.DeploymentLister
	deployIndex cache.Indexer
	secrets     corelisters.SecretLister
	configMaps  corelisters.ConfigMapLister

	mu      sync.Mutex
	pods    map[cache.ObjectName]*pod
	baseCtx context.Context
	ran     bool
}

const refsIndex = "kubelet-refs"

// New checks the options and wires the informers; nothing runs before Run.
func New(opts Options) (*Runner, error) {
	if opts.Client == nil {
		return nil, errors.New("kubelet: Options.Client is required")
	}
	if opts.WorkDir == "" {
		return nil, errors.New("kubelet: Options.WorkDir is required")
	}
	if len(opts.Images) == 0 && opts.ImageMatcher == nil {
		return nil, errors.New("kubelet: Options.Images or Options.ImageMatcher is required")
	}
	for image, binary := range opts.Images {
		if fi, err := os.Stat(binary); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return nil, fmt.Errorf("kubelet: image %q maps to %q, which is not an executable file", image, binary)
		}
	}
	if len(opts.HostAliases) > 0 {
		if err := CheckPrivateHosts(); err != nil {
			return nil, fmt.Errorf("kubelet: Options.HostAliases: %w", err)
		}
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = 250 * time.Millisecond
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 10 * time.Second
	}
	abs, err := filepath.Abs(opts.WorkDir)
	if err != nil {
		return nil, err
	}
	opts.WorkDir = abs
	r := &Runner{opts: opts, remapFlag: opts.RemapFlag, pods: map[cache.ObjectName]*pod{}}
	switch r.remapFlag {
	case "":
		r.remapFlag = DefaultRemapFlag
	case "-":
		r.remapFlag = ""
	}
	r.ctrl = controller.New("kubelet", r.sync)
	r.factory = informers.NewSharedInformerFactoryWithOptions(opts.Client, 0, informers.WithNamespace(opts.Namespace))
	deployInformer := r.factory.Apps().V1().Deployments()
	if err := deployInformer.Informer().AddIndexers(cache.Indexers{refsIndex: func(obj any) ([]string, error) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			return nil, nil
		}
		return referencedObjects(d.Namespace, &d.Spec.Template.Spec), nil
	}}); err != nil {
		return nil, err
	}
	r.deployments = deployInformer.Lister()
	r.deployIndex = deployInformer.Informer().GetIndexer()
	secretInformer := r.factory.Core().V1().Secrets()
	configMapInformer := r.factory.Core().V1().ConfigMaps()
	r.secrets = secretInformer.Lister()
	r.configMaps = configMapInformer.Lister()
	if _, err := deployInformer.Informer().AddEventHandler(r.ctrl.Handler()); err != nil {
		return nil, err
	}
	if _, err := secretInformer.Informer().AddEventHandler(controller.MapHandler(r.dependents("secret"), r.ctrl)); err != nil {
		return nil, err
	}
	if _, err := configMapInformer.Informer().AddEventHandler(controller.MapHandler(r.dependents("configmap"), r.ctrl)); err != nil {
		return nil, err
	}
	r.ctrl.WaitFor(deployInformer.Informer().HasSynced, secretInformer.Informer().HasSynced, configMapInformer.Informer().HasSynced)
	return r, nil
}

// dependents maps a Secret or ConfigMap to the Deployments that read it.
func (r *Runner) dependents(kind string) controller.MapFunc {
	return func(obj any) []cache.ObjectName {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		m, err := metaOf(obj)
		if err != nil {
			return nil
		}
		deps, err := r.deployIndex.ByIndex(refsIndex, kind+"/"+m.GetNamespace()+"/"+m.GetName())
		if err != nil {
			return nil
		}
		keys := make([]cache.ObjectName, 0, len(deps))
		for _, d := range deps {
			keys = append(keys, cache.MetaObjectToName(d.(*appsv1.Deployment)))
		}
		return keys
	}
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}

// HasSynced reports whether the runner's informers have synced.
func (r *Runner) HasSynced() bool { return r.ctrl.HasSynced() }

// Run runs processes until ctx ends, then stops every one of them (SIGTERM to its process
// group, SIGKILL after the grace period) before it returns. Call it once.
func (r *Runner) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if r.opts.Logger != nil {
		logger = *r.opts.Logger
	}
	ctx = klog.NewContext(ctx, logger)
	r.mu.Lock()
	if r.ran {
		r.mu.Unlock()
		return errors.New("kubelet: Run called twice")
	}
	r.ran, r.baseCtx = true, ctx
	r.mu.Unlock()
	if err := os.MkdirAll(filepath.Join(r.opts.WorkDir, "logs"), 0o755); err != nil {
		return err
	}
	logger.Info("Local kubelet starting", "namespace", r.opts.Namespace, "workDir", r.opts.WorkDir)
	r.factory.Start(ctx.Done())
	r.ctrl.Run(ctx, 4)
	r.factory.Shutdown()
	r.stopAll(logger)
	logger.Info("Local kubelet stopped")
	return nil
}

// stopAll stops every pod at once, so shutdown takes one grace period, not one per pod.
func (r *Runner) stopAll(logger klog.Logger) {
	r.mu.Lock()
	pods := r.pods
	r.pods = map[cache.ObjectName]*pod{}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Go(func() { p.stop(logger, "runner stopping") })
	}
	wg.Wait()
}

// resolveImage maps an image to a binary: exact key, then the longest "prefix*" key, then
// the matcher.
func (r *Runner) resolveImage(image string) (string, bool) {
	if b, ok := r.opts.Images[image]; ok && !strings.HasSuffix(image, "*") {
		return b, true
	}
	best, bestLen := "", -1
	for k, b := range r.opts.Images {
		if prefix, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(image, prefix) && len(prefix) > bestLen {
			best, bestLen = b, len(prefix)
		}
	}
	if bestLen >= 0 {
		return best, true
	}
	if r.opts.ImageMatcher != nil {
		return r.opts.ImageMatcher(image)
	}
	return "", false
}

// TemplateHash is the short hash of a pod template that names the runner's "ReplicaSet" and
// pod, and whose change is a rollout.
func TemplateHash(t *corev1.PodTemplateSpec) string {
	b, _ := json.Marshal(t) // a PodTemplateSpec always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:10]
}

func (r *Runner) getPod(key cache.ObjectName) *pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pods[key]
}

// removePod stops and forgets the pod of key, if any.
func (r *Runner) removePod(logger klog.Logger, key cache.ObjectName, reason string) {
	r.mu.Lock()
	p := r.pods[key]
	delete(r.pods, key)
	r.mu.Unlock()
	if p != nil {
		p.stop(logger, reason)
	}
}

// sync makes the local process of one Deployment match its spec and writes its status.
func (r *Runner) sync(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx)
	d, err := r.deployments.Deployments(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		r.removePod(logger, key, "Deployment deleted")
		return nil
	}
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		r.removePod(logger, key, "Deployment being deleted")
		return nil
	}
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return nil
	}
	binary, ok := r.resolveImage(d.Spec.Template.Spec.Containers[0].Image)
	if !ok {
		// Not ours: leave its status alone, and stop a process whose image changed away.
		r.removePod(logger, key, "image no longer maps to a binary")
		return nil
	}
	hash := TemplateHash(&d.Spec.Template)
	p := r.getPod(key)
	if p != nil && (wantedReplicas(d) == 0 || p.hash != hash || p.binary != binary) {
		reason := "pod template changed"
		if wantedReplicas(d) == 0 {
			reason = "scaled to zero"
		}
		r.removePod(logger, key, reason)
		p = nil
	}
	if wantedReplicas(d) == 0 {
		return r.writeStatus(ctx, d, podPhase{hash: hash})
	}
	if p == nil {
		p = r.newPod(d, hash, binary)
		r.mu.Lock()
		r.pods[key] = p
		r.mu.Unlock()
		logger.V(2).Info("New local pod", "pod", p.name, "dir", p.dir)
	}
	o := objects{namespace: d.Namespace, secrets: r.secrets, configMaps: r.configMaps}
	if err := p.layoutVolumes(logger, o, &d.Spec.Template.Spec); err != nil {
		var w *waitingError
		if !errors.As(err, &w) {
			return err
		}
		if !p.everStarted() {
			logger.Info("Pod waiting for its volumes", "pod", p.name, "reason", w.msg)
			p.setWaiting(w.msg)
			return r.writeStatus(ctx, d, p.phase())
		}
		// A running container keeps the files it has, as with a real kubelet.
		logger.Info("Volume not updated, keeping its last content", "pod", p.name, "reason", w.msg)
	}
	if !p.running() {
		if wait := p.restartDelay(time.Now()); wait > 0 {
			r.ctrl.EnqueueAfter(key, wait)
		} else if err := p.start(r.baseCtx, r, d, o); err != nil {
			var w *waitingError
			if !errors.As(err, &w) {
				return err
			}
			logger.Info("Pod waiting to start", "pod", p.name, "reason", w.msg)
			p.setWaiting(w.msg)
		}
	}
	return r.writeStatus(ctx, d, p.phase())
}

// writeStatus writes the Deployment status when it differs from what is stored.
func (r *Runner) writeStatus(ctx context.Context, d *appsv1.Deployment, phase podPhase) error {
	st := desiredStatus(d, phase, metav1.Now())
	if equality.Semantic.DeepEqual(st, d.Status) {
		return nil
	}
	d = d.DeepCopy()
	d.Status = st
	_, err := r.opts.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Updated Deployment status", "deployment", klog.KObj(d),
		"readyReplicas", st.ReadyReplicas, "available", st.Conditions[0].Status)
	return nil
}

// Pod is a snapshot of the local pod the runner runs for a Deployment.
type Pod struct {
	// Namespace and Deployment name the Deployment.
	Namespace, Deployment string
	// Name is the pod's name: <deployment>-<template hash>-local.
	Name string
	// TemplateHash is TemplateHash of the pod template the pod runs.
	TemplateHash string
	// PID is the process id, 0 when no process runs.
	PID int
	// Ready is the readiness probe's verdict.
	Ready bool
	// Restarts counts restarts after the process exited by itself.
	Restarts int
	// Waiting says why the process has not started, if it has not.
	Waiting string
	// Dir is the pod's folder, removed when the pod stops.
	Dir string
	// LogPath is the process output, kept after the pod stops.
	LogPath string
	// Binary and Args are the last command line started.
	Binary string
	Args   []string
	// Env is the container environment of the last start, as NAME=value.
	Env []string
	// Volumes maps a volume name to its local folder.
	Volumes map[string]string
	// Mounts are the container's mounts with their local paths, longest container path first.
	Mounts []Mount
}

// Pod returns the local pod of a Deployment.
func (r *Runner) Pod(namespace, name string) (Pod, bool) {
	p := r.getPod(cache.ObjectName{Namespace: namespace, Name: name})
	if p == nil {
		return Pod{}, false
	}
	return p.snapshot(), true
}

// Pods returns every local pod, sorted by namespace and Deployment.
func (r *Runner) Pods() []Pod {
	r.mu.Lock()
	pods := make([]*pod, 0, len(r.pods))
	for _, p := range r.pods {
		pods = append(pods, p)
	}
	r.mu.Unlock()
	out := make([]Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.snapshot())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Deployment < out[j].Deployment
	})
	return out
}

// killGroup signals a process group, ignoring a group that is already gone.
func killGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}
