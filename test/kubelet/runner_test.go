package kubelet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/kafkalink/kafkalink/test/framework"
	"github.com/kafkalink/kafkalink/test/kubelet"
)

const ns = "apps"

// env is one test's control plane, runner and the fake container's address.
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	runner *kubelet.Runner
}

func TestRunnerPlaysTheKubeletForADeployment(t *testing.T) {
	if testing.Short() {
		t.Skip("control-plane test")
	}
	logger, ctx := ktesting.NewTestContext(t)
	cp, err := framework.Start(ctx, framework.Options{WithoutControllerManager: true, StrimziVersion: "none", Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	binary, err := framework.BuildBinary("./test/kubelet/testdata/fakeserver", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var output syncBuffer
	runner, err := kubelet.New(kubelet.Options{
		Client:        cp.Client,
		Namespace:     ns,
		Images:        map[string]string{"example.com/fakeserver:*": binary},
		WorkDir:       t.TempDir(),
		Logger:        &logger,
		ProcessOutput: &output,
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx, client: cp.Client, runner: runner}
	runCtx, stopRunner := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- runner.Run(runCtx) }()
	t.Cleanup(func() {
		stopRunner()
		select {
		case <-runDone:
		case <-time.After(30 * time.Second):
			t.Error("the runner did not stop within 30s")
		}
	})

	e.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	e.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-config"},
		Data: map[string]string{"config.txt": "v1", "ready": "yes"}})
	e.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "extra"},
		Data: map[string]string{"extra.txt": "extra"}})
	e.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-secret"},
		Data: map[string][]byte{"password": []byte("s3cret"), "token": []byte("t1")}})
	port := freePort(t)
	e.create(webDeployment(port))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	// Available once the readiness probe (by port name) passes.
	d := e.waitAvailable("web", corev1.ConditionTrue)
	if d.Status.ReadyReplicas != 1 || d.Status.AvailableReplicas != 1 || d.Status.ObservedGeneration != d.Generation {
		t.Errorf("status %+v, want one ready replica of generation %d", d.Status, d.Generation)
	}
	if c := condition(d, appsv1.DeploymentProgressing); c == nil || c.Reason != kubelet.ReasonNewReplicaSetAvailable {
		t.Errorf("Progressing %+v, want reason %s", c, kubelet.ReasonNewReplicaSetAvailable)
	}
	pod := e.pod("web")
	firstPID := pod.PID
	if got := get(t, base+"/pid"); got != strconv.Itoa(firstPID) {
		t.Fatalf("the server on the port is pid %s, the runner says %d", got, firstPID)
	}

	e.eventually("the process output, prefixed", func() (bool, string) {
		return strings.Contains(output.String(), ns+"/"+pod.Name+": serving on"), output.String()
	})

	t.Run("volumes are laid out as the kubelet does", func(t *testing.T) {
		config := pod.Volumes["config"]
		if target, err := os.Readlink(filepath.Join(config, "..data")); err != nil || !strings.HasPrefix(target, "..") {
			t.Errorf("config/..data -> %q, %v", target, err)
		}
		if target, err := os.Readlink(filepath.Join(config, "config.txt")); err != nil || target != "..data/config.txt" {
			t.Errorf("config/config.txt -> %q, %v", target, err)
		}
		fi, err := os.Stat(filepath.Join(pod.Volumes["creds"], "sasl", "password"))
		if err != nil || fi.Mode().Perm() != 0o400 {
			t.Errorf("creds/sasl/password: %v, %v; want mode 0400 from the item", fi, err)
		}
		if _, err := os.Stat(filepath.Join(pod.Volumes["creds"], "token")); !os.IsNotExist(err) {
			t.Errorf("creds holds a key its items leave out: %v", err)
		}
		if fi, err := os.Stat(pod.Volumes["scratch"]); err != nil || !fi.IsDir() {
			t.Errorf("emptyDir scratch: %v, %v", fi, err)
		}
	})

	t.Run("the process sees every mount through the remaps and rewritten args", func(t *testing.T) {
		for path, want := range map[string]string{
			"/etc/app/config.txt":       "v1",
			"/etc/creds/sasl/password":  "s3cret",
			"/etc/bundle/token":         "t1",
			"/etc/bundle/extra.txt":     "extra",
			"/etc/sub/config.txt":       "v1",
			"/etc/bundle/labels/absent": "",
		} {
			if got := read(t, base, path); got != want {
				t.Errorf("%s = %q, want %q", path, got, want)
			}
		}
		if got := get(t, base+"/config"); got != "v1" {
			t.Errorf("--config was not rewritten to the local file: /config = %q", got)
		}
		var args, environ []string
		getJSON(t, base+"/args", &args)
		getJSON(t, base+"/env", &environ)
		for _, m := range []string{"/etc/app=" + pod.Volumes["config"], "/etc/creds=" + pod.Volumes["creds"], "/etc/bundle=" + pod.Volumes["bundle"]} {
			if i := slices.Index(args, m); i < 1 || args[i-1] != "--remap-path" {
				t.Errorf("args lack --remap-path %s: %q", m, args)
			}
		}
		if !slices.Contains(args, "--greeting=hello-"+ns) {
			t.Errorf("$(GREETING) not expanded in args: %q", args)
		}
		for _, want := range []string{"PASSWORD=s3cret", "POD_NS=" + ns, "POD_NAME=" + pod.Name} {
			if !slices.Contains(environ, want) {
				t.Errorf("environment lacks %s: %q", want, environ)
			}
		}
	})

	t.Run("a Secret update reaches the file without a restart", func(t *testing.T) {
		e.update(func(c kubernetes.Interface) error {
			s, err := c.CoreV1().Secrets(ns).Get(ctx, "app-secret", metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Data["password"] = []byte("n3w")
			_, err = c.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
			return err
		})
		e.eventually("the new password in the file", func() (bool, string) {
			got := read(t, base, "/etc/creds/sasl/password")
			return got == "n3w", got
		})
		if got := get(t, base+"/pid"); got != strconv.Itoa(firstPID) {
			t.Errorf("the process restarted: pid %s, was %d", got, firstPID)
		}
	})

	t.Run("a ConfigMap update flips readiness and skips sub-path mounts", func(t *testing.T) {
		e.setConfig(map[string]string{"config.txt": "v2", "ready": "no"})
		e.waitAvailable("web", corev1.ConditionFalse)
		if got := read(t, base, "/etc/app/config.txt"); got != "v2" {
			t.Errorf("config.txt = %q, want v2", got)
		}
		if got := read(t, base, "/etc/sub/config.txt"); got != "v1" {
			t.Errorf("a subPath mount saw an update (%q), which a kubelet never shows", got)
		}
		e.setConfig(map[string]string{"config.txt": "v2", "ready": "yes"})
		e.waitAvailable("web", corev1.ConditionTrue)
		if p := e.pod("web"); p.PID != firstPID {
			t.Errorf("pid %d, want %d: a ConfigMap update restarted the process", p.PID, firstPID)
		}
	})

	var secondPID int
	t.Run("a template change rolls the process", func(t *testing.T) {
		e.update(func(c kubernetes.Interface) error {
			patch := `{"spec":{"template":{"metadata":{"annotations":{"rollout":"2"}}}}}`
			_, err := c.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		})
		e.eventually("a new process", func() (bool, string) {
			p, ok := runner.Pod(ns, "web")
			return ok && p.PID != 0 && p.PID != firstPID, fmt.Sprint(p.PID)
		})
		d := e.waitAvailable("web", corev1.ConditionTrue)
		if d.Status.ObservedGeneration != d.Generation {
			t.Errorf("observedGeneration %d, generation %d", d.Status.ObservedGeneration, d.Generation)
		}
		secondPID = e.pod("web").PID
		if alive(firstPID) {
			t.Errorf("the old process %d still runs", firstPID)
		}
		if got := read(t, base, "/etc/sub/config.txt"); got != "v2" {
			t.Errorf("a new container's subPath mount = %q, want v2", got)
		}
	})

	t.Run("a process that dies is restarted", func(t *testing.T) {
		if err := syscall.Kill(secondPID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		e.eventually("a restarted process", func() (bool, string) {
			p, ok := runner.Pod(ns, "web")
			return ok && p.PID != 0 && p.PID != secondPID && p.Restarts == 1, fmt.Sprintf("%+v", p.PID)
		})
		e.waitAvailable("web", corev1.ConditionTrue)
	})

	t.Run("scaling to zero stops the process, deleting removes the pod", func(t *testing.T) {
		last := e.pod("web")
		e.scale("web", 0)
		e.eventually("no process", func() (bool, string) {
			_, ok := runner.Pod(ns, "web")
			return !ok && !alive(last.PID), ""
		})
		d := e.waitAvailable("web", corev1.ConditionTrue)
		if d.Status.Replicas != 0 {
			t.Errorf("replicas %d after scaling to zero", d.Status.Replicas)
		}
		e.scale("web", 1)
		e.waitAvailable("web", corev1.ConditionTrue)
		last = e.pod("web")
		if err := cp.Client.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The runner forgets the pod, then stops its process, then removes its folder: wait for all three.
		e.eventually("no process and no pod folder after delete", func() (bool, string) {
			_, ok := runner.Pod(ns, "web")
			_, err := os.Stat(last.Dir)
			return !ok && !alive(last.PID) && os.IsNotExist(err), fmt.Sprintf("pod known %v, folder: %v", ok, err)
		})
		if _, err := os.Stat(last.LogPath); err != nil {
			t.Errorf("the log went with the pod: %v", err)
		}
	})

	t.Run("a pod waits for a missing Secret, an unmapped image is left alone", func(t *testing.T) {
		other := webDeployment(freePort(t))
		other.Name = "other"
		other.Spec.Template.Spec.Containers[0].Image = "example.org/something:v1"
		e.create(other)
		late := webDeployment(port)
		late.Name = "late"
		late.Spec.Template.Spec.Volumes[1].Secret.SecretName = "late-secret"
		e.create(late)
		e.eventually("the late pod waiting", func() (bool, string) {
			p, ok := runner.Pod(ns, "late")
			return ok && p.PID == 0 && strings.Contains(p.Waiting, "late-secret"), p.Waiting
		})
		e.waitAvailable("late", corev1.ConditionFalse)
		e.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late-secret"},
			Data: map[string][]byte{"password": []byte("p")}})
		e.waitAvailable("late", corev1.ConditionTrue)
		if got := read(t, base, "/etc/creds/sasl/password"); got != "p" {
			t.Errorf("late password = %q", got)
		}
		if d, err := cp.Client.AppsV1().Deployments(ns).Get(ctx, "other", metav1.GetOptions{}); err != nil || len(d.Status.Conditions) != 0 {
			t.Errorf("the runner touched a Deployment it does not run: %+v, %v", d.Status, err)
		}
		if _, ok := runner.Pod(ns, "other"); ok {
			t.Error("the runner runs an image it has no binary for")
		}
	})

	t.Run("a pod's hostAliases are its own /etc/hosts", func(t *testing.T) {
		if err := kubelet.CheckPrivateHosts(); err != nil {
			t.Skipf("private mount namespaces are not available: %v", err)
		}
		aliasedPort := freePort(t)
		aliased := webDeployment(aliasedPort)
		aliased.Name = "aliased"
		aliased.Spec.Template.Spec.HostAliases = []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db.example", "db"}}}
		e.create(aliased)
		e.waitAvailable("aliased", corev1.ConditionTrue)
		p := e.pod("aliased")
		base := fmt.Sprintf("http://127.0.0.1:%d", aliasedPort)
		hosts := read(t, base, "/etc/hosts")
		for _, want := range []string{"10.1.2.3\tdb.example\tdb\n", "127.0.0.1\t" + p.Name + "\n"} {
			if !strings.Contains(hosts, want) {
				t.Errorf("the process's /etc/hosts lacks %q:\n%s", want, hosts)
			}
		}
		if own, err := os.ReadFile("/etc/hosts"); err != nil || strings.Contains(string(own), "db.example") {
			t.Errorf("the alias leaked into the machine's /etc/hosts (%v):\n%s", err, own)
		}
		// unshare and the shell exec in turn, so the pid the runner reports is the server's.
		if got := get(t, base+"/pid"); got != strconv.Itoa(p.PID) {
			t.Errorf("the server is pid %s, the runner says %d", got, p.PID)
		}
	})

	t.Run("stopping the runner stops every process", func(t *testing.T) {
		pid := e.pod("late").PID
		stopRunner()
		select {
		case err := <-runDone:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return within 30s of cancel")
		}
		if alive(pid) {
			t.Errorf("process %d outlived the runner", pid)
		}
		runDone <- nil // for the cleanup
	})
}

// webDeployment runs the fake server with every kind of volume the runner supports.
func webDeployment(port int) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					Containers: []corev1.Container{{
						Name:  "web",
						Image: "example.com/fakeserver:v1",
						Args: []string{"--listen=127.0.0.1:" + strconv.Itoa(port), "--config=/etc/app/config.txt",
							"--ready-file=/etc/app/ready", "--greeting=$(GREETING)"},
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}},
						Env: []corev1.EnvVar{
							{Name: "POD_NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							{Name: "GREETING", Value: "hello-$(POD_NS)"},
							{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("app-secret"), Key: "password"}}},
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}},
							PeriodSeconds: 1, FailureThreshold: 1,
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: "/etc/app", ReadOnly: true},
							{Name: "creds", MountPath: "/etc/creds", ReadOnly: true},
							{Name: "bundle", MountPath: "/etc/bundle", ReadOnly: true},
							{Name: "config", MountPath: "/etc/sub/config.txt", SubPath: "config.txt", ReadOnly: true},
							{Name: "scratch", MountPath: "/scratch"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("app-config")}}},
						{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "app-secret",
							Items: []corev1.KeyToPath{{Key: "password", Path: "sasl/password", Mode: ptr.To[int32](0o400)}}}}},
						{Name: "bundle", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
							{Secret: &corev1.SecretProjection{LocalObjectReference: ref("app-secret"), Items: []corev1.KeyToPath{{Key: "token", Path: "token"}}}},
							{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("extra")}},
							{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
								{Path: "labels/absent", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
						}}}},
						{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
}

func (e *env) create(obj any) {
	e.t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.Namespace:
		_, err = e.client.CoreV1().Namespaces().Create(e.ctx, o, metav1.CreateOptions{})
	case *corev1.ConfigMap:
		_, err = e.client.CoreV1().ConfigMaps(o.Namespace).Create(e.ctx, o, metav1.CreateOptions{})
	case *corev1.Secret:
		_, err = e.client.CoreV1().Secrets(o.Namespace).Create(e.ctx, o, metav1.CreateOptions{})
	case *appsv1.Deployment:
		_, err = e.client.AppsV1().Deployments(o.Namespace).Create(e.ctx, o, metav1.CreateOptions{})
	default:
		err = fmt.Errorf("cannot create %T", obj)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// update retries a read-modify-write on conflict; the runner writes Deployment status
// concurrently.
func (e *env) update(f func(kubernetes.Interface) error) {
	e.t.Helper()
	for range 10 {
		err := f(e.client)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			e.t.Fatal(err)
		}
	}
	e.t.Fatal("10 conflicts in a row")
}

func (e *env) setConfig(data map[string]string) {
	e.t.Helper()
	e.update(func(c kubernetes.Interface) error {
		cm, err := c.CoreV1().ConfigMaps(ns).Get(e.ctx, "app-config", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data = data
		_, err = c.CoreV1().ConfigMaps(ns).Update(e.ctx, cm, metav1.UpdateOptions{})
		return err
	})
}

func (e *env) scale(name string, replicas int32) {
	e.t.Helper()
	e.update(func(c kubernetes.Interface) error {
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
		_, err := c.AppsV1().Deployments(ns).Patch(e.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	})
}

// eventually polls cond for up to 30 seconds.
func (e *env) eventually(what string, cond func() (bool, string)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var ok bool
		ok, last = cond()
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}

// waitAvailable waits until the Deployment's Available condition has the status, for its
// current generation.
func (e *env) waitAvailable(name string, status corev1.ConditionStatus) *appsv1.Deployment {
	e.t.Helper()
	var d *appsv1.Deployment
	e.eventually(fmt.Sprintf("Deployment %s Available=%s", name, status), func() (bool, string) {
		var err error
		d, err = e.client.AppsV1().Deployments(ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := condition(d, appsv1.DeploymentAvailable)
		return c != nil && c.Status == status && d.Status.ObservedGeneration == d.Generation, fmt.Sprintf("%+v", d.Status)
	})
	return d
}

func (e *env) pod(name string) kubelet.Pod {
	e.t.Helper()
	p, ok := e.runner.Pod(ns, name)
	if !ok || p.PID == 0 {
		e.t.Fatalf("no running pod for %s: %+v", name, p)
	}
	return p
}

func condition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return ""
	}
	return string(b)
}

func read(t *testing.T, base, path string) string {
	t.Helper()
	return get(t, base+"/read?path="+path)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(get(t, url)), v); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// alive reports whether a process exists; the runner reaps its children, so a stopped one
// is gone, not a zombie.
func alive(pid int) bool {
	return pid > 0 && !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// syncBuffer is a strings.Builder safe for the runner's writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
