package bindingcontroller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/member"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// Copies of binding Secrets in member clusters (spec.targets). Each target is one item of a
// member ledger (package member) and of its member's queue, so a member that does not answer
// delays only its own copies. The binding sync says what each copy must hold (targets.want); the
// member's worker writes it (targets.deliver) and the ledger records the outcome, and a changed
// outcome enqueues the connection, whose sync puts it in status.targets. Only the sync writes
// the connection.
const (
	// FinalizerMemberBindings keeps a connection with targets until its copies are removed.
	FinalizerMemberBindings = "kafkalink.io/member-bindings"
)

// copySpec is what one target's copy must be (the ledger's Spec.Object); a removal's data is nil.
type copySpec struct {
	source    string // the connection: namespace/name
	target    kafkav1beta2.BindingTarget
	namespace string // in the member
	name      string
	uid       types.UID
	data      map[string][]byte
	digest    string
}

// targets are a controller's copies: the member ledger's items, one per target.
type targets struct {
	ledger *member.Ledger[copySpec]
	clock  clock.PassiveClock
}

func newTargets(ctx context.Context, r *reconciler, c *controller.Controller, allowedServers []string) *targets {
	return newTargetsWith(ctx, member.Config{Central: r.kube, AllowedServers: allowedServers}, c.Enqueue, r.clock)
}

// newTargetsWith completes cfg (central client, allowed servers, timeouts) with what the copies'
// members watch, and makes the targets; enqueue takes a connection whose copies' outcome changed.
func newTargetsWith(ctx context.Context, cfg member.Config, enqueue func(cache.ObjectName), clk clock.PassiveClock) *targets {
	t := &targets{clock: clk}
	cfg.Name = QueueName + "-member"
	cfg.Watched = wellknown.LabelBindingCopy + "=true"
	cfg.ItemsOf = func(s *corev1.Secret) []string {
		return []string{s.Annotations[wellknown.AnnotationCopySource] + "/" + s.Annotations[wellknown.AnnotationCopyTarget]}
	}
	t.ledger = member.NewLedger(ctx, cfg, t.deliver, enqueue)
	return t
}

// itemKey names a target's work: <namespace>/<connection>/<target>.
func itemKey(conn *kafkav1beta2.KafkaConnection, target string) string {
	return member.ItemOf(cache.MetaObjectToName(conn), target)
}

func memberRef(namespace string, c kafkav1beta2.ClusterTarget) member.Ref {
	return member.Ref{Namespace: namespace, Secret: c.Secret, ClusterURL: c.ClusterURL}
}

// copyOf is what a target's copy must be: data, or removed when data is nil.
func copyOf(conn *kafkav1beta2.KafkaConnection, target kafkav1beta2.BindingTarget, data map[string][]byte) member.Spec[copySpec] {
	c := copySpec{source: conn.Namespace + "/" + conn.Name, target: target, namespace: target.Namespace, name: conn.Name, uid: conn.UID}
	if data != nil {
		c.data, c.digest = data, dataDigest(data)
	}
	return member.Spec[copySpec]{Member: memberRef(conn.Namespace, target.Cluster), Name: target.Name,
		Remove: data == nil, Version: c.namespace + "/" + c.digest, Object: c}
}

// want records what each of a connection's copies must hold and queues the ones that changed.
// data nil leaves the copies as they are (the binding failed: they keep their last good data,
// like the binding Secret); deleting removes them all. Targets that left spec (still in status)
// are removed. It returns whether every copy is gone, which is when the finalizer may go.
func (t *targets) want(conn *kafkav1beta2.KafkaConnection, data map[string][]byte, deleting bool) (allGone bool) {
	abandoned := strings.Split(conn.Annotations[wellknown.AnnotationAbandonTargets], ",")
	allGone = true
	for _, target := range knownTargets(conn) {
		item := itemKey(conn, target.Name)
		switch {
		case inSpec(conn, target.Name) && !deleting:
			allGone = false
			if data == nil {
				t.ledger.Hold(item)
				continue
			}
			t.ledger.Want(item, copyOf(conn, target, data))
		case deleting && slices.Contains(abandoned, target.Name):
			t.ledger.Abandon(item)
		default:
			allGone = t.ledger.Remove(item, copyOf(conn, target, nil)) && allGone
		}
	}
	return allGone
}

func inSpec(conn *kafkav1beta2.KafkaConnection, target string) bool {
	return slices.ContainsFunc(conn.Spec.Targets, func(s kafkav1beta2.BindingTarget) bool { return s.Name == target })
}

// knownTargets lists the connection's targets: those of spec, then those that left spec but are
// still in status (their copies are still to remove), with the namespace defaulted.
func knownTargets(conn *kafkav1beta2.KafkaConnection) []kafkav1beta2.BindingTarget {
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

// drop forgets everything about a connection that no longer exists.
func (t *targets) drop(conn cache.ObjectName) { t.ledger.Forget(conn) }

// statuses are the connection's status.targets, from the recorded outcomes, and how many of them
// are synced (status.targetsSynced).
func (t *targets) statuses(conn *kafkav1beta2.KafkaConnection) (out []kafkav1beta2.TargetStatus, synced string) {
	for _, target := range knownTargets(conn) {
		e := t.ledger.Entry(itemKey(conn, target.Name))
		switch {
		case e.Removed:
		case !e.Delivering:
			// Not delivered by this process yet (the binding fails since a restart): the copy
			// is as status last said. A target that left spec and was removed is gone.
			if i := slices.IndexFunc(conn.Status.Targets, func(s kafkav1beta2.TargetStatus) bool { return s.Name == target.Name }); i >= 0 && inSpec(conn, target.Name) {
				out = append(out, conn.Status.Targets[i])
			}
		default:
			st := kafkav1beta2.TargetStatus{Name: target.Name, Cluster: target.Cluster, Namespace: target.Namespace, Message: member.NotContacted}
			if e.Contacted {
				st.Reachable, st.Synced, st.Message = e.Result.Reachable, e.Result.Synced, e.Result.Message
			}
			st.LastSyncTime = lastSync(conn, e.Result.At, target.Name)
			out = append(out, st)
		}
	}
	return out, countSynced(out)
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

// lastSync is when a copy was last written: by this process (at), else as status last said (an
// operator restart finds the copies current and does not rewrite them).
func lastSync(conn *kafkav1beta2.KafkaConnection, at metav1.Time, target string) *metav1.Time {
	if !at.IsZero() {
		return at.DeepCopy()
	}
	for _, st := range conn.Status.Targets {
		if st.Name == target {
			return st.LastSyncTime
		}
	}
	return nil
}

// deliver is the ledger's Deliver: it makes the target's copy match its spec. The ledger says
// what went wrong on an error.
func (t *targets) deliver(ctx context.Context, c *member.Cluster, _ string, spec member.Spec[copySpec], last member.Result) (member.Result, error) {
	synced, wrote, err := t.apply(ctx, c, spec.Object, spec.Remove)
	res := member.Result{Synced: synced, Removed: synced && spec.Remove, At: last.At}
	switch {
	case err != nil:
	case !synced:
		res.Message = fmt.Sprintf("Secret %s/%s exists in member %s and is not this connection's copy; kafkalink does not adopt it", spec.Object.namespace, spec.Object.name, spec.Name)
	case !spec.Remove:
		res.Message = "copy is current"
	default:
		res.Message = "copy removed"
	}
	if wrote {
		res.At = metav1.NewTime(t.clock.Now())
	}
	return res, err
}

// apply writes or removes one copy, when it differs from its spec; synced is false when a Secret
// of that name is someone else's.
func (t *targets) apply(ctx context.Context, c *member.Cluster, spec copySpec, remove bool) (synced, wrote bool, err error) {
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
		return remove, false, nil
	case remove && existing == nil:
		return true, false, nil
	case remove:
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
	_, err := r.setFinalizer(ctx, conn, false)
	return err
}

// setFinalizer adds or removes FinalizerMemberBindings when it is not already so. It returns the
// connection as written (conn when unchanged), whose resourceVersion the status update needs.
func (r *reconciler) setFinalizer(ctx context.Context, conn *kafkav1beta2.KafkaConnection, want bool) (*kafkav1beta2.KafkaConnection, error) {
	patch := controller.FinalizerPatch(conn, FinalizerMemberBindings, want)
	if patch == nil {
		return conn, nil
	}
	return r.kafkalink.KafkaV1beta2().KafkaConnections(conn.Namespace).Patch(ctx, conn.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: controller.FieldManager})
}
