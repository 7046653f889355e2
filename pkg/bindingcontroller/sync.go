package bindingcontroller

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// sync reconciles one KafkaConnection: gather from the listers, binding.Build, apply the Secret
// when its data differs, then write the status when it differs. User errors end in the Ready
// condition and a Warning event and return nil; API errors return for a retry with backoff.
func (r *reconciler) sync(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx)
	conn, err := r.connections.KafkaConnections(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		// Garbage collection deletes the Secret through its owner reference; the finalizer saw
		// to the copies in member clusters.
		r.targets.drop(key)
		r.ownWrites.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if r.ownWrites.pending(key, conn.ResourceVersion) {
		// The cache has not seen our last status patch yet; its event enqueues the connection.
		logger.V(4).Info("Waiting for the cache to show the status written")
		return nil
	}
	if conn.DeletionTimestamp != nil {
		// Garbage collection deletes the Secret; copies in member clusters are ours to remove.
		return r.finalize(ctx, conn)
	}
	if f := r.readDenied(conn); f != nil {
		// Nothing read can be trusted: the Secret keeps its last good binding, status says why.
		r.recheck(key, ReadDeniedRecheck)
		bound := ""
		if conn.Status.Binding != nil {
			bound = conn.Status.Binding.Name
		}
		return r.finish(ctx, conn, binding.Result{}, f, bound)
	}
	var res binding.Result
	var failure *binding.Failure
	switch conn.Spec.Kafka.Kind {
	case kafkav1beta2.KindKafkaRoute:
		// Through a gateway: see route.go and route_gather.go.
		in, f, wait := r.gatherRoute(conn)
		if wait {
			logger.V(4).Info("Waiting for the Strimzi informers")
			return nil
		}
		failure = f
		if failure == nil {
			res, failure = binding.BuildRoute(in)
			failure = explainUserSecret(failure)
		}
	case "", kafkav1beta2.KindKafka:
		state := r.strimzi.state()
		if state == strimziStarting {
			// The Strimzi informers are syncing; every connection is enqueued once they have.
			logger.V(4).Info("Waiting for the Strimzi informers")
			return nil
		}
		if res, failure, err = r.buildKafka(ctx, conn, state); err != nil {
			return err
		}
	default:
		// The CRD allows no other kind; an old object is left alone.
		logger.V(4).Info("Not a kind kafkalink binds", "kind", conn.Spec.Kafka.Kind)
		return nil
	}

	meta, metaFailure := binding.SecretMetadata(conn, r.allowedMetadataPrefixes)
	if failure == nil {
		failure = metaFailure
	}
	existing, err := r.bindings.Secrets(conn.Namespace).Get(meta.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if apierrors.IsNotFound(err) {
		existing = nil
	}
	bound := ""
	if existing != nil && controlledBy(existing, conn) {
		bound = meta.Name
	}

	switch {
	case failure == nil:
		f, err := r.applySecret(ctx, conn, existing, meta, res.Data)
		if err != nil {
			return err
		}
		failure = f
		if f == nil {
			bound = meta.Name
			// Renamed (spec.secretName changed): the new Secret is written, so the old goes.
			if err := r.deleteBindings(ctx, conn, meta.Name, "renamed to "+meta.Name); err != nil {
				return err
			}
		}
	case failure.Reason == binding.ReasonRefNotPermitted:
		// The grant that let credentials cross namespaces is gone: so are the credentials.
		if err := r.deleteBindings(ctx, conn, "", failure.Message); err != nil {
			return err
		}
		bound = ""
	}
	if bound == "" && failure != nil && failure.Reason != binding.ReasonRefNotPermitted {
		// Not bound under the new name yet: status keeps naming the old Secret while it holds
		// the last good binding.
		bound = r.previousBinding(conn)
	}
	return r.finish(ctx, conn, res, failure, bound)
}

// ownBindings lists the binding Secrets in the connection's namespace that this connection
// controls: the one named like the connection, read by key, and those of other names, through
// the binding informer's index by controller UID (which holds only those; see
// indexSecretByController).
func (r *reconciler) ownBindings(conn *kafkav1beta2.KafkaConnection) []*corev1.Secret {
	objs, err := r.bindingIndex.ByIndex(indexBindingController, string(conn.UID))
	if err != nil {
		return nil
	}
	if same, ok, _ := r.bindingIndex.GetByKey(cache.NewObjectName(conn.Namespace, conn.Name).String()); ok {
		objs = append(objs, same)
	}
	var out []*corev1.Secret
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok && s.Namespace == conn.Namespace && controlledBy(s, conn) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// previousBinding is status.binding.name when that Secret still exists and is this
// connection's, else "".
func (r *reconciler) previousBinding(conn *kafkav1beta2.KafkaConnection) string {
	if conn.Status.Binding == nil {
		return ""
	}
	for _, s := range r.ownBindings(conn) {
		if s.Name == conn.Status.Binding.Name {
			return s.Name
		}
	}
	return ""
}

// deleteBindings deletes the connection's binding Secrets other than keep ("" deletes all),
// each only if its UID is still the one cached, so nothing recreated meanwhile is removed.
func (r *reconciler) deleteBindings(ctx context.Context, conn *kafkav1beta2.KafkaConnection, keep, why string) error {
	for _, s := range r.ownBindings(conn) {
		if s.Name == keep {
			continue
		}
		uid := s.UID
		err := r.kube.CoreV1().Secrets(conn.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // gone already, or another Secret of that name since: not ours to delete
		}
		if err != nil {
			return err
		}
		r.recorder.Eventf(conn, corev1.EventTypeNormal, EventSecretDeleted, "Deleted Secret %s: %s", s.Name, why)
		klog.FromContext(ctx).V(2).Info("Deleted binding Secret", "secret", klog.KObj(s), "why", why)
	}
	return nil
}

// finish brings the member clusters' copies along (spec.targets; see targets.go) and writes the
// status. The copies get the current binding when it is bound, are removed when its credentials
// may no longer be shared, and otherwise keep their last good data, as the Secret does.
func (r *reconciler) finish(ctx context.Context, conn *kafkav1beta2.KafkaConnection, res binding.Result, failure *binding.Failure, bound string) error {
	var data map[string][]byte
	if failure == nil {
		data = res.Data
	}
	withdrawn := failure != nil && failure.Reason == binding.ReasonRefNotPermitted
	allGone := r.targets.want(conn, data, withdrawn)
	conn, err := r.setFinalizer(ctx, conn, !allGone)
	if err != nil {
		return err
	}
	want := desiredStatus(conn, res, failure, bound)
	want.Targets, want.TargetsSynced = r.targets.statuses(conn)
	return r.writeStatus(ctx, conn, want, failure)
}

// buildKafka gathers and builds the binding of a connection to a Kafka; err is an API error
// worth a retry.
func (r *reconciler) buildKafka(ctx context.Context, conn *kafkav1beta2.KafkaConnection, state strimziState) (binding.Result, *binding.Failure, error) {
	in, failure := r.gather(conn, state)
	if failure == nil && conn.Spec.OAuth != nil {
		var err error
		if in.OAuth, failure, err = r.gatherOAuth(ctx, conn); err != nil {
			return binding.Result{}, nil, err
		}
	}
	if failure != nil {
		return binding.Result{}, failure, nil
	}
	res, failure := binding.Build(in)
	return res, r.explain(failure, in, conn), nil
}

// gather reads the connection's inputs from the listers. A Failure here is one the pure core
// cannot see: Strimzi missing, invalid objects, a missing user, a reference not permitted.
func (r *reconciler) gather(conn *kafkav1beta2.KafkaConnection, state strimziState) (binding.Input, *binding.Failure) {
	in := binding.Input{
		CurrentListener:       conn.Status.Listener,
		AllowExternalListener: conn.Spec.AllowExternalListener,
		StoreFormats:          conn.Spec.StoreFormats,
		Cache:                 r.cache,
	}
	if conn.Spec.Kafka.Listener != nil {
		in.RequestedListener = conn.Spec.Kafka.Listener.Name
	}
	if state == strimziMissing {
		return in, &binding.Failure{Reason: binding.ReasonStrimziNotInstalled,
			Message: "the cluster serves no Strimzi Kafka and KafkaUser API (kafka.strimzi.io/v1 or v1beta2): install Strimzi's CRDs"}
	}
	kk := kafkaKey(conn)
	obj := r.strimzi.kafka(kk)
	if obj == nil {
		return in, &binding.Failure{Reason: binding.ReasonKafkaNotFound, Message: fmt.Sprintf("Kafka %s does not exist", kk)}
	}
	k, err := strimzi.ParseKafka(obj)
	if err != nil {
		return in, &binding.Failure{Reason: binding.ReasonKafkaInvalid, Message: fmt.Sprintf("Kafka %s cannot be read: %v", kk, err)}
	}
	in.Kafka = k
	if k.Stretch {
		in.Stretch = r.stretch.input(k)
	}
	if s, err := r.sources.Secrets(kk.Namespace).Get(strimzi.ClusterCASecretName(kk.Name)); err == nil {
		in.CASecret = &binding.SecretData{Name: s.Name, Data: s.Data}
	}
	in.GatewayTrust = r.gatewayTrust(k)

	if _, ok := userKey(conn); !ok {
		return in, nil
	}
	user, userSecret, f := r.gatherUser(conn)
	if f != nil {
		return in, f
	}
	in.User, in.UserSecret = user, userSecret
	return in, nil
}

// gatherUser reads the KafkaUser a connection names and its credentials Secret (nil when it does
// not exist), after checking a cross-namespace reference is permitted. Strimzi must be served.
func (r *reconciler) gatherUser(conn *kafkav1beta2.KafkaConnection) (*strimzi.KafkaUser, *binding.SecretData, *binding.Failure) {
	uk, _ := userKey(conn)
	user, userErr := r.strimzi.user(uk)
	if uk.Namespace != conn.Namespace && !r.permitted(conn, uk, user) {
		// Checked before anything about the user is reported, so a connection learns nothing
		// about another namespace it may not read.
		return nil, nil, &binding.Failure{Reason: binding.ReasonRefNotPermitted, Message: fmt.Sprintf(
			"KafkaUser %s is in another namespace and no ReferenceGrant in namespace %s allows KafkaConnections (group %s) from namespace %s to it",
			uk, uk.Namespace, kafkav1beta2.SchemeGroupVersion.Group, conn.Namespace) + r.grantAPIMissing()}
	}
	switch {
	case user == nil && userErr == nil:
		return nil, nil, &binding.Failure{Reason: binding.ReasonUserNotFound, Message: fmt.Sprintf("KafkaUser %s does not exist", uk)}
	case userErr != nil:
		return nil, nil, &binding.Failure{Reason: binding.ReasonUserInvalid, Message: fmt.Sprintf("KafkaUser %s cannot be read: %v", uk, userErr)}
	}
	var userSecret *binding.SecretData
	if s, err := r.sources.Secrets(uk.Namespace).Get(user.SecretName()); err == nil {
		userSecret = &binding.SecretData{Name: s.Name, Data: s.Data}
	}
	return user, userSecret, nil
}

// explain adds to the pure core's messages what only the controller knows: which Secret it
// looked for, and that it only sees Secrets carrying Strimzi's cluster label.
func (r *reconciler) explain(f *binding.Failure, in binding.Input, conn *kafkav1beta2.KafkaConnection) *binding.Failure {
	if f == nil {
		return nil
	}
	hint := fmt.Sprintf(" (kafkalink reads Secrets labelled %s)", strimzi.LabelCluster)
	switch {
	case f.Reason == binding.ReasonCACertificateMissing && in.CASecret == nil:
		kk := kafkaKey(conn)
		return &binding.Failure{Reason: f.Reason, Message: fmt.Sprintf("Secret %s/%s does not exist%s",
			kk.Namespace, strimzi.ClusterCASecretName(kk.Name), hint)}
	}
	return explainUserSecret(f)
}

// explainUserSecret adds to a missing user Secret that kafkalink only sees Secrets carrying
// Strimzi's cluster label.
func explainUserSecret(f *binding.Failure) *binding.Failure {
	if f == nil || f.Reason != binding.ReasonUserSecretMissing {
		return f
	}
	return &binding.Failure{Reason: f.Reason, Message: f.Message + fmt.Sprintf(" (kafkalink reads Secrets labelled %s)", strimzi.LabelCluster)}
}

// permitted reports whether a ReferenceGrant in the user's namespace lets KafkaConnections of the
// connection's namespace refer to the KafkaUser, or to its credentials Secret.
func (r *reconciler) permitted(conn *kafkav1beta2.KafkaConnection, uk cache.ObjectName, user *strimzi.KafkaUser) bool {
	grants := r.grantsIn(uk.Namespace)
	secretName := ""
	if user != nil {
		secretName = user.SecretName()
	}
	for _, g := range grants {
		if grantAllows(g, conn.Namespace, uk.Name, secretName) {
			return true
		}
	}
	return false
}

func grantAllows(g *gatewayv1beta1.ReferenceGrant, fromNamespace, userName, secretName string) bool {
	grants, from := []*gatewayv1beta1.ReferenceGrant{g}, connectionFrom(fromNamespace)
	return gatewaymodel.Granted(grants, from, gatewaymodel.To{Group: strimzi.Group, Kind: strimzi.KindKafkaUser, Namespace: g.Namespace, Name: userName}) ||
		secretName != "" && gatewaymodel.Granted(grants, from, gatewaymodel.To{Group: gatewaymodel.CoreGroup, Kind: gatewaymodel.KindSecret, Namespace: g.Namespace, Name: secretName})
}

// controlledBy reports whether this very KafkaConnection (same UID) controls the Secret.
func controlledBy(s *corev1.Secret, conn *kafkav1beta2.KafkaConnection) bool {
	ref := metav1.GetControllerOfNoCopy(s)
	return ref != nil && ref.UID == conn.UID
}

// applySecret makes the binding Secret hold data and meta's labels and annotations, writing
// only when it does not already. A Secret of that name that this connection does not control is
// left alone (SecretNotOwned).
//
// It creates a missing Secret and updates an existing one at the resourceVersion it was read at,
// rather than applying it server-side: the API server spends about half the CPU on a create and a
// quarter less on an update (BenchmarkWriteForms, docs/scale.md). The update replaces the data
// whole, so entries added by hand go in the same write; a stale read fails with a conflict and the
// connection is requeued.
func (r *reconciler) applySecret(ctx context.Context, conn *kafkav1beta2.KafkaConnection, existing *corev1.Secret, meta binding.SecretMeta, data map[string][]byte) (*binding.Failure, error) {
	digest := dataDigest(data)
	if existing == nil {
		return r.createSecret(ctx, conn, meta, data)
	}
	if !controlledBy(existing, conn) {
		return notOwned(conn, existing), nil
	}
	if upToDate(existing, meta, digest) {
		return nil, nil
	}
	klog.FromContext(ctx).V(4).Info("Binding Secret differs", "type", existing.Type, "labels", existing.Labels,
		"cachedDigest", existing.Annotations[wellknown.AnnotationCachedDataSHA256], "wantDigest", digest)
	if existing.Annotations[wellknown.AnnotationAppliedHash] != meta.Annotations[wellknown.AnnotationAppliedHash] {
		// The template changed: what the old one put there is told by the managedFields the
		// cache drops, so read the live Secret (only this rare write pays the read).
		live, f, err := r.liveSecret(ctx, conn, meta.Name)
		if f != nil || err != nil {
			return f, err
		}
		existing = live
	}
	return nil, r.updateSecret(ctx, conn, existing, meta, data)
}

// createSecret creates the binding Secret. The create fails when a Secret of that name exists
// (someone else's, or ours without its binding label, which the cache does not hold); only then is
// it read, and updated only when this connection controls it. So nothing is ever adopted, and a
// first bind costs one request, not a read and a write.
func (r *reconciler) createSecret(ctx context.Context, conn *kafkav1beta2.KafkaConnection, meta binding.SecretMeta, data map[string][]byte) (*binding.Failure, error) {
	_, err := r.kube.CoreV1().Secrets(conn.Namespace).Create(ctx, bindingSecret(conn, nil, meta, data), metav1.CreateOptions{FieldManager: controller.FieldManager})
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Created binding Secret", "secret", klog.KRef(conn.Namespace, meta.Name))
		if conn.Status.Binding != nil && conn.Status.Binding.Name == meta.Name {
			// Creation is visible in status; a restoration is worth telling whoever deleted it.
			r.recorder.Eventf(conn, corev1.EventTypeNormal, EventSecretRestored, "Restored Secret %s", meta.Name)
		}
		return nil, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	live, f, err := r.liveSecret(ctx, conn, meta.Name)
	if f != nil || err != nil {
		return f, err
	}
	return nil, r.updateSecret(ctx, conn, live, meta, data)
}

// liveSecret reads the binding Secret from the API server, with its managedFields; a Secret this
// connection does not control is a SecretNotOwned failure.
func (r *reconciler) liveSecret(ctx context.Context, conn *kafkav1beta2.KafkaConnection, name string) (*corev1.Secret, *binding.Failure, error) {
	live, err := r.kube.CoreV1().Secrets(conn.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case controller.IsReadDenied(err):
		return nil, deniedFailure(fmt.Sprintf("get Secret %s/%s", conn.Namespace, name), err), nil
	case err != nil:
		return nil, nil, err // gone meanwhile (NotFound): the requeue creates it
	case !controlledBy(live, conn):
		return nil, notOwned(conn, live), nil
	}
	return live, nil, nil
}

// updateSecret writes the binding Secret over existing, at existing's resourceVersion.
func (r *reconciler) updateSecret(ctx context.Context, conn *kafkav1beta2.KafkaConnection, existing *corev1.Secret, meta binding.SecretMeta, data map[string][]byte) error {
	s := bindingSecret(conn, existing, meta, data)
	if _, err := r.kube.CoreV1().Secrets(conn.Namespace).Update(ctx, s, metav1.UpdateOptions{FieldManager: controller.FieldManager}); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Updated binding Secret", "secret", klog.KObj(s))
	return nil
}

// bindingSecret is the binding Secret to write: a new one when existing is nil, else existing (as
// read, at its resourceVersion) with kafkalink's type, owner, data, labels and annotations.
// Labels and annotations others added are kept; those an earlier template put there and the
// current one does not have are removed (when existing was read live, its managedFields say
// which: see staleTemplateKeys); data entries others added are not kept. The digest the cache
// adds is not written back.
func bindingSecret(conn *kafkav1beta2.KafkaConnection, existing *corev1.Secret, meta binding.SecretMeta, data map[string][]byte) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: meta.Name, Namespace: conn.Namespace}}
	if existing != nil {
		s = existing.DeepCopy()
		s.ManagedFields = nil // omitted: the API server keeps the ones it has
	}
	staleLabels, staleAnnotations := staleTemplateKeys(existing, meta)
	s.Labels = withEntries(s.Labels, meta.Labels, staleLabels)
	s.Annotations = withEntries(s.Annotations, meta.Annotations, append(staleAnnotations, wellknown.AnnotationCachedDataSHA256))
	if !controlledBy(s, conn) {
		yes := true
		s.OwnerReferences = append(s.OwnerReferences, metav1.OwnerReference{APIVersion: kafkav1beta2.SchemeGroupVersion.String(),
			Kind: kafkaConnectionKind, Name: conn.Name, UID: conn.UID, Controller: &yes, BlockOwnerDeletion: &yes})
	}
	s.Type = corev1.SecretType(binding.SecretType)
	s.Data, s.StringData = data, nil
	return s
}

// withEntries is m with the keys in drop removed and want's entries set (nil when empty).
func withEntries(m, want map[string]string, drop []string) map[string]string {
	out := make(map[string]string, len(m)+len(want))
	maps.Copy(out, m)
	for _, k := range drop {
		delete(out, k)
	}
	maps.Copy(out, want)
	if len(out) == 0 {
		return nil
	}
	return out
}

func notOwned(conn *kafkav1beta2.KafkaConnection, s *corev1.Secret) *binding.Failure {
	return &binding.Failure{Reason: ReasonSecretNotOwned, Message: fmt.Sprintf(
		"Secret %s exists and is not controlled by this KafkaConnection; kafkalink does not adopt it: delete it, or set spec.secretName to another name", s.Name)}
}

// upToDate compares a cached binding Secret (whose data the cache holds as a digest) with what
// the connection wants.
func upToDate(s *corev1.Secret, meta binding.SecretMeta, digest string) bool {
	return string(s.Type) == binding.SecretType &&
		binding.MetadataCurrent(meta, s.Labels, s.Annotations) &&
		s.Annotations[wellknown.AnnotationCachedDataSHA256] == digest
}

// dataDigest is a SHA-256 over the sorted entries, with lengths, so distinct data never collide
// by concatenation.
func dataDigest(data map[string][]byte) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	var n [8]byte
	for _, k := range keys {
		binary.BigEndian.PutUint64(n[:], uint64(len(k)))
		h.Write(n[:])
		h.Write([]byte(k))
		binary.BigEndian.PutUint64(n[:], uint64(len(data[k])))
		h.Write(n[:])
		h.Write(data[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// desiredStatus computes the connection's status. On failure the Secret, if it exists, keeps its
// last good data (applications keep working through a rotation or an outage), so binding,
// listener and bootstrapServers keep describing it.
func desiredStatus(conn *kafkav1beta2.KafkaConnection, res binding.Result, failure *binding.Failure, bound string) kafkav1beta2.KafkaConnectionStatus {
	st := kafkav1beta2.KafkaConnectionStatus{
		ObservedGeneration: conn.Generation,
		Listener:           conn.Status.Listener,
		BootstrapServers:   conn.Status.BootstrapServers,
	}
	cond := metav1.Condition{Type: ConditionReady, ObservedGeneration: conn.Generation}
	if failure == nil {
		st.Listener = res.Choice.Listener.Name
		st.BootstrapServers = res.Choice.BootstrapServers
		cond.Status = metav1.ConditionTrue
		cond.Reason = ReasonBound
		cond.Message = fmt.Sprintf("Secret %s binds listener %q (%s)", bound, res.Choice.Listener.Name, res.Choice.SecurityProtocol)
	} else {
		cond.Status = metav1.ConditionFalse
		cond.Reason = failure.Reason
		cond.Message = failure.Message
		if bound == "" {
			st.BootstrapServers = ""
			if res.Choice.Listener.Name != "" {
				st.Listener = res.Choice.Listener.Name
				st.BootstrapServers = res.Choice.BootstrapServers
			}
		}
	}
	if bound != "" {
		st.Binding = &kafkav1beta2.BindingReference{Name: bound}
	}
	if res.Stretch != nil {
		st.Stretch = &kafkav1beta2.StretchStatus{Addressing: res.Stretch.Addressing, Clusters: res.Stretch.Clusters}
	} else if failure != nil && bound != "" {
		st.Stretch = conn.Status.Stretch
	}
	st.Conditions = []metav1.Condition{cond}
	return st
}

// readyCondition is the status's Ready condition, nil when it has none.
func readyCondition(st *kafkav1beta2.KafkaConnectionStatus) *metav1.Condition {
	return meta.FindStatusCondition(st.Conditions, ConditionReady)
}

// sameStatus compares what kafkalink writes, ignoring lastTransitionTime.
func sameStatus(a, b *kafkav1beta2.KafkaConnectionStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.Listener != b.Listener || a.BootstrapServers != b.BootstrapServers {
		return false
	}
	if (a.Binding == nil) != (b.Binding == nil) || (a.Binding != nil && a.Binding.Name != b.Binding.Name) {
		return false
	}
	if !equality.Semantic.DeepEqual(a.Stretch, b.Stretch) || !equality.Semantic.DeepEqual(a.Targets, b.Targets) || a.TargetsSynced != b.TargetsSynced {
		return false
	}
	ca, cb := readyCondition(a), readyCondition(b)
	if ca == nil || cb == nil {
		return ca == cb
	}
	return ca.Status == cb.Status && ca.Reason == cb.Reason && ca.Message == cb.Message && ca.ObservedGeneration == cb.ObservedGeneration
}

// writeStatus writes the status when it differs from the cached one, and records an event when
// the Ready condition changes.
func (r *reconciler) writeStatus(ctx context.Context, conn *kafkav1beta2.KafkaConnection, want kafkav1beta2.KafkaConnectionStatus, failure *binding.Failure) error {
	if sameStatus(&conn.Status, &want) {
		return nil
	}
	logger := klog.FromContext(ctx)
	want.Conditions = controller.MergeConditions(conn.Status.Conditions, want.Conditions, metav1.NewTime(r.clock.Now()))
	cond := &want.Conditions[0]
	old := readyCondition(&conn.Status)
	if err := r.updateStatus(ctx, conn, want); err != nil {
		return err
	}
	changed := old == nil || old.Status != cond.Status || old.Reason != cond.Reason || old.Message != cond.Message
	if changed {
		logger.V(2).Info("Ready changed", "status", cond.Status, "reason", cond.Reason, "message", cond.Message)
		// Events for failures and for recoveries from them; a first successful bind says so in
		// status only, so creating thousands of connections does not flood the event stream.
		switch {
		case failure != nil:
			r.recorder.Event(conn, corev1.EventTypeWarning, failure.Reason, failure.Message)
		case old != nil && old.Status == metav1.ConditionFalse:
			r.recorder.Event(conn, corev1.EventTypeNormal, ReasonBound, cond.Message)
		}
	}
	return nil
}

// updateStatus writes want as the connection's status: a JSON merge patch of the status alone,
// with the cached resourceVersion as its precondition (a stale cache fails with a conflict and
// the connection is retried). Not a server-side apply: the API server spends less CPU on the patch
// (docs/scale.md). An update at the same resourceVersion costs about the same, but sends the whole
// cached object; the patch holds only what changed and does not depend on what the cache keeps
// of the object. Conditions of other types are kept, as the apply kept them.
func (r *reconciler) updateStatus(ctx context.Context, conn *kafkav1beta2.KafkaConnection, want kafkav1beta2.KafkaConnectionStatus) error {
	for _, c := range conn.Status.Conditions {
		if c.Type != ConditionReady {
			want.Conditions = append(want.Conditions, c)
		}
	}
	patch, err := statusPatch(&conn.Status, &want, conn.ResourceVersion)
	if err != nil {
		return err
	}
	patched, err := r.kafkalink.KafkaV1beta2().KafkaConnections(conn.Namespace).Patch(ctx, conn.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: controller.FieldManager}, "status")
	if err != nil {
		return err
	}
	r.ownWrites.wrote(cache.ObjectName{Namespace: conn.Namespace, Name: conn.Name}, conn.ResourceVersion, patched.ResourceVersion)
	return nil
}

// gatherOAuth reads the connection's OAuth client credentials Secret. It is read from the API
// server, not cached: kafkalink caches no client secrets; a change to it is seen through the
// certificate Secret informer's events (route.go), which keep no values.
func (r *reconciler) gatherOAuth(ctx context.Context, conn *kafkav1beta2.KafkaConnection) (*binding.OAuthCredentials, *binding.Failure, error) {
	o := conn.Spec.OAuth
	name := o.ClientSecretRef.Name
	s, err := r.kube.CoreV1().Secrets(conn.Namespace).Get(ctx, name, metav1.GetOptions{})
	if controller.IsReadDenied(err) {
		return nil, deniedFailure(fmt.Sprintf("get Secret %s/%s (spec.oauth.clientSecretRef)", conn.Namespace, name), err), nil
	}
	if apierrors.IsNotFound(err) {
		return nil, &binding.Failure{Reason: binding.ReasonOAuthCredentialsMissing, Message: fmt.Sprintf("Secret %s/%s (spec.oauth.clientSecretRef) does not exist", conn.Namespace, name)}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return &binding.OAuthCredentials{SecretName: conn.Namespace + "/" + name,
		ClientID: string(s.Data[binding.OAuthClientIDKey]), ClientSecret: string(s.Data[binding.OAuthClientSecretKey]),
		TokenEndpointURI: o.TokenEndpointURI, Scope: o.Scope}, nil, nil
}
