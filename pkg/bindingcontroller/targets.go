package bindingcontroller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kafkav1beta2ac "github.com/kafkalink/kafkalink/generated/applyconfiguration/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/member"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// Copies of binding Secrets in member clusters (spec.targets). Each target is one item of its
// member's queue (package member), so a member that does not answer delays only its own copies.
// The binding sync says what each copy must hold (targets.want); the member's worker writes it
// (targets.deliver) and records the outcome, and a changed outcome enqueues the connection,
// whose sync puts it in status.targets. Only the sync writes the connection.
const (
	// FinalizerMemberBindings keeps a connection with targets until its copies are removed.
	FinalizerMemberBindings = "kafkalink.io/member-bindings"
)

// copySpec is what one target's copy must be: data nil means the copy must go.
type copySpec struct {
	source    string // the connection: namespace/name
	target    kafkav1beta2.BindingTarget
	ref       member.Ref
	namespace string // in the member
	name      string
	uid       types.UID
	data      map[string][]byte
	digest    string
}

// copyResult is the last outcome of a target's work.
type copyResult struct {
	reachable bool
	synced    bool        // the copy holds spec's digest, or is gone when spec.data is nil
	removed   bool        // synced, and the copy is gone
	at        metav1.Time // when the copy was last written; zero when this process has not
	message   string
}

type targets struct {
	registry *member.Registry
	enqueue  func(cache.ObjectName)
	clock    clock.PassiveClock
	mu       sync.Mutex
	specs    map[string]copySpec
	results  map[string]copyResult
	removed  map[string]bool // copies removed since their target was last wanted
}

func newTargets(ctx context.Context, r *reconciler, c *controller.Controller, allowedServers []string) *targets {
	t := &targets{enqueue: c.Enqueue, clock: r.clock, specs: map[string]copySpec{}, results: map[string]copyResult{}, removed: map[string]bool{}}
	t.registry = member.NewRegistry(ctx, member.Config{
		Central:        r.kube,
		Handle:         t.deliver,
		AllowedServers: allowedServers,
		Watched:        wellknown.LabelBindingCopy + "=true",
		ItemsOf: func(s *corev1.Secret) []string {
			return []string{s.Annotations[wellknown.AnnotationCopySource] + "/" + s.Annotations[wellknown.AnnotationCopyTarget]}
		},
	})
	return t
}

// itemKey names a target's work: <namespace>/<connection>/<target>.
func itemKey(conn *kafkav1beta2.KafkaConnection, target string) string {
	return conn.Namespace + "/" + conn.Name + "/" + target
}

func memberRef(namespace string, c kafkav1beta2.ClusterTarget) member.Ref {
	return member.Ref{Namespace: namespace, Secret: c.Secret, ClusterURL: c.ClusterURL}
}

// want records what each of a connection's copies must hold and queues the ones that changed.
// data nil leaves the copies as they are (the binding failed: they keep their last good data,
// like the binding Secret); deleting removes them all. Targets that left spec (still in status)
// are removed. It returns whether every copy is gone, which is when the finalizer may go.
func (t *targets) want(conn *kafkav1beta2.KafkaConnection, data map[string][]byte, deleting bool) (allGone bool) {
	abandoned := strings.Split(conn.Annotations[wellknown.AnnotationAbandonTargets], ",")
	allGone = true
	for _, target := range t.known(conn) {
		key := itemKey(conn, target.Name)
		spec := copySpec{source: conn.Namespace + "/" + conn.Name, target: target, ref: memberRef(conn.Namespace, target.Cluster),
			namespace: target.Namespace, name: conn.Name, uid: conn.UID}
		switch {
		case inSpec(conn, target.Name) && !deleting:
			allGone = false
			t.unmarkRemoved(key)
			if data != nil {
				spec.data, spec.digest = data, dataDigest(data)
				t.set(key, spec)
			}
		case t.isRemoved(key):
		case deleting && slices.Contains(abandoned, target.Name):
			t.release(key, true)
		default:
			allGone = false
			t.set(key, spec)
		}
	}
	return allGone
}

func inSpec(conn *kafkav1beta2.KafkaConnection, target string) bool {
	return slices.ContainsFunc(conn.Spec.Targets, func(s kafkav1beta2.BindingTarget) bool { return s.Name == target })
}

// known lists the connection's targets: those of spec, then those that left spec but are still
// in status (their copies are still to remove), with the namespace defaulted.
func (t *targets) known(conn *kafkav1beta2.KafkaConnection) []kafkav1beta2.BindingTarget {
	var out []kafkav1beta2.BindingTarget
	for _, target := range conn.Spec.Targets {
		if target.Namespace == "" {
			target.Namespace = conn.Namespace
		}
		out = append(out, target)
	}
	for _, st := range conn.Status.Targets {
		if !slices.ContainsFunc(out, func(o kafkav1beta2.BindingTarget) bool { return o.Name == st.Name }) {
			out = append(out, kafkav1beta2.BindingTarget{Name: st.Name, Cluster: st.Cluster, Namespace: st.Namespace})
		}
	}
	return out
}

// set stores a copy's spec and queues it when it changed (or was never queued).
func (t *targets) set(key string, spec copySpec) {
	t.mu.Lock()
	old, had := t.specs[key]
	t.specs[key] = spec
	t.mu.Unlock()
	if had && old.ref == spec.ref && old.namespace == spec.namespace && old.digest == spec.digest && (old.data == nil) == (spec.data == nil) {
		return
	}
	if had && old.ref != spec.ref {
		t.registry.Release(old.ref, key)
	}
	t.registry.Enqueue(spec.ref, key)
}

// isRemoved reports whether a copy was removed (or abandoned) since its target was last wanted.
func (t *targets) isRemoved(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.removed[key]
}

func (t *targets) unmarkRemoved(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.removed, key)
}

// release forgets a copy's spec and outcome and lets its member go (closed when no other copy
// needs it); removed marks the copy as gone, so the connection's later syncs skip it.
func (t *targets) release(key string, removed bool) {
	t.mu.Lock()
	spec, ok := t.specs[key]
	delete(t.specs, key)
	delete(t.results, key)
	if removed {
		t.removed[key] = true
	}
	t.mu.Unlock()
	if ok {
		t.registry.Release(spec.ref, key)
	}
}

// drop forgets everything about a connection that no longer exists.
func (t *targets) drop(conn cache.ObjectName) {
	prefix := conn.Namespace + "/" + conn.Name + "/"
	t.mu.Lock()
	var keys []string
	for key := range t.specs {
		if strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
	}
	for key := range t.removed {
		if strings.HasPrefix(key, prefix) {
			delete(t.removed, key)
		}
	}
	t.mu.Unlock()
	for _, key := range keys {
		t.release(key, false)
	}
}

// statuses are the connection's status.targets, from the recorded outcomes, and how many of them
// are synced (status.targetsSynced).
func (t *targets) statuses(conn *kafkav1beta2.KafkaConnection) (out []kafkav1beta2.TargetStatus, synced string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer func() { synced = countSynced(out) }()
	for _, target := range t.known(conn) {
		key := itemKey(conn, target.Name)
		if t.removed[key] {
			continue
		}
		if _, ok := t.specs[key]; !ok {
			// Not delivered by this process yet (the binding fails since a restart): the
			// copy is as status last said. A target that left spec and was removed is gone.
			if i := slices.IndexFunc(conn.Status.Targets, func(s kafkav1beta2.TargetStatus) bool { return s.Name == target.Name }); i >= 0 && inSpec(conn, target.Name) {
				out = append(out, conn.Status.Targets[i])
			}
			continue
		}
		st := kafkav1beta2.TargetStatus{Name: target.Name, Cluster: target.Cluster, Namespace: target.Namespace, Message: "not contacted yet"}
		if res, ok := t.results[key]; ok {
			st.Reachable, st.Synced, st.Message = res.reachable, res.synced, res.message
		}
		st.LastSyncTime = t.lastSync(conn, key, target.Name)
		out = append(out, st)
	}
	return out, ""
}

// countSynced is synced/all, empty for no targets.
func countSynced(targets []kafkav1beta2.TargetStatus) string {
	if len(targets) == 0 {
		return ""
	}
	n := 0
	for _, t := range targets {
		if t.Synced {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, len(targets))
}

// lastSync is when a copy was last written: by this process, else as status last said (an
// operator restart finds the copies current and does not rewrite them).
func (t *targets) lastSync(conn *kafkav1beta2.KafkaConnection, key, target string) *metav1.Time {
	if res := t.results[key]; !res.at.IsZero() {
		return res.at.DeepCopy()
	}
	for _, st := range conn.Status.Targets {
		if st.Name == target {
			return st.LastSyncTime
		}
	}
	return nil
}

// record stores a target's outcome and enqueues its connection when the outcome changed.
func (t *targets) record(key string, res copyResult) {
	t.mu.Lock()
	old, had := t.results[key]
	if res.at.IsZero() {
		res.at = old.at
	}
	t.results[key] = res
	// Removed, and no one wants the copy back since (spec.data is still nil).
	removed := res.removed && t.specs[key].data == nil
	t.mu.Unlock()
	if removed {
		t.release(key, true)
	}
	if !had || old.reachable != res.reachable || old.synced != res.synced || old.message != res.message {
		ns, rest, _ := strings.Cut(key, "/")
		name, _, _ := strings.Cut(rest, "/")
		t.enqueue(cache.ObjectName{Namespace: ns, Name: name})
	}
}

func (t *targets) spec(key string) (copySpec, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.specs[key]
	return s, ok
}

// deliver is a member's handler: it makes the target's copy match its spec.
func (t *targets) deliver(ctx context.Context, c *member.Cluster, key string) error {
	spec, ok := t.spec(key)
	if !ok || spec.ref != c.Ref() {
		return nil
	}
	synced, wrote, err := t.apply(ctx, c, spec)
	res := copyResult{reachable: !member.Unreachable(err), synced: synced, removed: synced && spec.data == nil}
	switch {
	case err != nil:
		res.message = fmt.Sprintf("member %s: %s", spec.target.Name, member.Describe(err))
	case !synced:
		res.message = fmt.Sprintf("Secret %s/%s exists in member %s and is not this connection's copy; kafkalink does not adopt it", spec.namespace, spec.name, spec.target.Name)
	case spec.data != nil:
		res.message = "copy is current"
	default:
		res.message = "copy removed"
	}
	if wrote {
		res.at = metav1.NewTime(t.clock.Now())
	}
	t.record(key, res)
	return err
}

// apply writes or removes one copy, when it differs from its spec; synced is false when a Secret
// of that name is someone else's.
func (t *targets) apply(ctx context.Context, c *member.Cluster, spec copySpec) (synced, wrote bool, err error) {
	client, err := c.Client(ctx)
	if err != nil {
		return false, false, err
	}
	existing, err := c.Secret(ctx, client, spec.namespace, spec.name)
	if err != nil {
		return false, false, err
	}
	ours := existing == nil || existing.Annotations[wellknown.AnnotationCopySourceUID] == string(spec.uid)
	switch {
	case !ours:
		// Someone else's Secret: never written, and nothing of ours to remove.
		return spec.data == nil, false, nil
	case spec.data == nil && existing == nil:
		return true, false, nil
	case spec.data == nil:
		uid := existing.UID
		err := client.CoreV1().Secrets(spec.namespace).Delete(ctx, spec.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) {
			err = nil
		}
		return err == nil, err == nil, err
	case existing != nil && dataDigest(existing.Data) == spec.digest && string(existing.Type) == binding.SecretType:
		// The data itself is compared, so a copy edited by hand in the member is put back.
		return true, false, nil
	}
	ac := corev1ac.Secret(spec.name, spec.namespace).
		WithType(corev1.SecretType(binding.SecretType)).
		WithLabels(map[string]string{wellknown.LabelBindingCopy: "true", wellknown.LabelManagedBy: wellknown.LabelManagedByValue}).
		WithAnnotations(map[string]string{
			wellknown.AnnotationCopySource:       spec.source,
			wellknown.AnnotationCopySourceUID:    string(spec.uid),
			wellknown.AnnotationCopyTarget:       spec.target.Name,
			wellknown.AnnotationCachedDataSHA256: spec.digest,
		}).
		WithData(spec.data)
	_, err = client.CoreV1().Secrets(spec.namespace).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: controller.FieldManager, Force: true})
	return err == nil, err == nil, err
}

// finalize removes a deleted connection's copies, reporting them in status, and then its
// finalizer; a member that does not answer holds only its own copy (and can be abandoned with
// wellknown.AnnotationAbandonTargets).
func (r *reconciler) finalize(ctx context.Context, conn *kafkav1beta2.KafkaConnection) error {
	if !slices.Contains(conn.Finalizers, FinalizerMemberBindings) {
		return nil
	}
	allGone := r.targets.want(conn, nil, true)
	if readyCondition(&conn.Status) != nil {
		want := *conn.Status.DeepCopy()
		want.Targets, want.TargetsSynced = r.targets.statuses(conn)
		if err := r.writeStatus(ctx, conn, want, nil); err != nil {
			return err
		}
	}
	if !allGone {
		return nil
	}
	return r.setFinalizer(ctx, conn, false)
}

// setFinalizer adds or removes FinalizerMemberBindings when it is not already so.
func (r *reconciler) setFinalizer(ctx context.Context, conn *kafkav1beta2.KafkaConnection, want bool) error {
	patch := controller.FinalizerPatch(conn, FinalizerMemberBindings, want)
	if patch == nil {
		return nil
	}
	_, err := r.kafkalink.KafkaV1beta2().KafkaConnections(conn.Namespace).Patch(ctx, conn.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: controller.FieldManager})
	return err
}

// targetStatusApply is status.targets as an apply configuration.
func targetStatusApply(targets []kafkav1beta2.TargetStatus) []*kafkav1beta2ac.TargetStatusApplyConfiguration {
	var out []*kafkav1beta2ac.TargetStatusApplyConfiguration
	for _, t := range targets {
		cluster := kafkav1beta2ac.ClusterTarget().WithSecret(t.Cluster.Secret)
		if t.Cluster.ClusterURL != "" {
			cluster.WithClusterURL(t.Cluster.ClusterURL)
		}
		ac := kafkav1beta2ac.TargetStatus().WithName(t.Name).WithCluster(cluster).WithNamespace(t.Namespace).
			WithReachable(t.Reachable).WithSynced(t.Synced)
		if t.LastSyncTime != nil {
			ac.WithLastSyncTime(*t.LastSyncTime)
		}
		if t.Message != "" {
			ac.WithMessage(t.Message)
		}
		out = append(out, ac)
	}
	return out
}
