package gatewaycontroller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gateway"
	"github.com/kafkalink/kafkalink/pkg/member"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// Proxies in member clusters (KafkaGatewayParameters spec.members; docs/stretch.md). After the
// central apply, the gateway's Deployment, ConfigMap, Services, PodDisruptionBudget and the
// Secrets its pods mount are applied into each member, in the gateway's namespace, by that
// member's own worker (package member): a member that does not answer delays only itself. Each
// member of a gateway is one item of a member ledger, which records the outcome (reachable,
// Programmed) and enqueues the gateway, whose sync puts it in status.members. OpenShift Routes
// and TLSRoutes stay in the central cluster.
const (
	// FinalizerMemberProxies keeps a gateway with members until their proxies are removed.
	FinalizerMemberProxies = "kafkalink.io/member-proxies"
	// memberPoll is how often a member's Deployment is checked until it is available, and
	// memberRecheck how often afterwards (reads only), so status.members follows a member that
	// is lost or a proxy that stops.
	memberPoll    = 2 * time.Second
	memberRecheck = 30 * time.Second
)

// memberKinds are the generated kinds a member gets, in apply order (what is mounted first).
var memberKinds = []string{gateway.KindSecret, gateway.KindConfigMap, gateway.KindService, gateway.KindPodDisruptionBudget, gateway.KindDeployment}

// memberSpec is what one member must hold for a gateway (the ledger's Spec.Object); a removal's
// objects are nil.
type memberSpec struct {
	gatewayUID string
	namespace  string
	objects    []*unstructured.Unstructured // generated objects, without owner references
	mounted    []string                     // Secrets the pods mount that are not generated
	deployment string
}

// memberProxies are the gateways' proxies in members: the member ledger's items, one per member
// of a gateway.
type memberProxies struct {
	ledger  *member.Ledger[memberSpec]
	central kubernetes.Interface
}

func newMemberProxies(ctx context.Context, central kubernetes.Interface, enqueue func(cache.ObjectName), allowedServers []string) *memberProxies {
	m := &memberProxies{central: central}
	m.ledger = member.NewLedger(ctx, member.Config{Name: QueueName + "-member", Central: central, AllowedServers: allowedServers}, m.deliver, enqueue)
	return m
}

func memberKey(gw *kroxyliciousv1alpha1.KafkaGateway, name string) string {
	return member.ItemOf(cache.MetaObjectToName(gw), name)
}

// knownMembers lists a gateway's members: those of its parameters, then those still in its
// status (whose proxies are to remove).
func knownMembers(gw *kroxyliciousv1alpha1.KafkaGateway, params *kroxyliciousv1alpha1.KafkaGatewayParameters) []kroxyliciousv1alpha1.GatewayMember {
	var out []kroxyliciousv1alpha1.GatewayMember
	if params != nil {
		out = append(out, params.Spec.Members...)
	}
	for _, st := range gw.Status.Members {
		if !slices.ContainsFunc(out, func(m kroxyliciousv1alpha1.GatewayMember) bool { return m.Name == st.Name }) {
			out = append(out, kroxyliciousv1alpha1.GatewayMember{Name: st.Name, Cluster: st.Cluster})
		}
	}
	return out
}

// want records what each member must hold (removed: the gateway is being deleted, or the member
// left the parameters) and queues what changed. It returns whether every member's proxy is gone,
// when the finalizer may go.
func (m *memberProxies) want(gw *kroxyliciousv1alpha1.KafkaGateway, params *kroxyliciousv1alpha1.KafkaGatewayParameters, res *gateway.Result, version func(secret string) string) (allGone bool) {
	allGone = true
	objects, mounted := memberObjects(gw, res)
	for _, mem := range knownMembers(gw, params) {
		item := memberKey(gw, mem.Name)
		spec := member.Spec[memberSpec]{Member: member.Ref{Namespace: gw.Namespace, Secret: mem.Cluster.Secret, ClusterURL: mem.Cluster.ClusterURL},
			Name: mem.Cluster.Secret, Object: memberSpec{gatewayUID: string(gw.UID), namespace: gw.Namespace, deployment: gateway.DeploymentName(gw.Name)}}
		wanted := params != nil && gw.DeletionTimestamp == nil &&
			slices.ContainsFunc(params.Spec.Members, func(p kroxyliciousv1alpha1.GatewayMember) bool { return p.Name == mem.Name })
		switch {
		case !wanted:
			allGone = m.ledger.Remove(item, spec) && allGone
		case res != nil:
			allGone = false
			spec.Object.objects, spec.Object.mounted = objects, mounted
			spec.Version = objectsDigest(objects, mounted, version)
			m.ledger.Want(item, spec)
		default:
			// Held: the members keep what they run, as the central cluster does (and a proxy
			// removed since the member was last wanted stays removed).
			allGone = false
		}
	}
	return allGone
}

// memberObjects are the generated objects a member gets, and the names of the Secrets its pods
// mount that are not generated (the listener certificates): those are copied from the central
// cluster when delivered.
func memberObjects(gw *kroxyliciousv1alpha1.KafkaGateway, res *gateway.Result) (objects []*unstructured.Unstructured, mounted []string) {
	if res == nil {
		return nil, nil
	}
	generatedSecrets := map[string]bool{}
	for _, o := range res.Objects {
		if o.GetKind() == gateway.KindSecret {
			generatedSecrets[o.GetName()] = true
		}
	}
	for _, o := range res.Objects {
		if !slices.Contains(memberKinds, o.GetKind()) {
			continue
		}
		o = o.DeepCopy()
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[wellknown.LabelMemberOf] = string(gw.UID)
		o.SetLabels(labels)
		objects = append(objects, o)
		if o.GetKind() == gateway.KindDeployment {
			mounted = append(mounted, mountedSecrets(o, generatedSecrets)...)
		}
	}
	sort.SliceStable(objects, func(i, j int) bool {
		return slices.Index(memberKinds, objects[i].GetKind()) < slices.Index(memberKinds, objects[j].GetKind())
	})
	sort.Strings(mounted)
	return objects, slices.Compact(mounted)
}

// mountedSecrets are the Secrets a Deployment's pods mount that are not generated.
func mountedSecrets(o *unstructured.Unstructured, generated map[string]bool) []string {
	var d appsv1.Deployment
	if runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d) != nil {
		return nil
	}
	var out []string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil && !generated[v.Secret.SecretName] {
			out = append(out, v.Secret.SecretName)
		}
	}
	return out
}

// objectsDigest digests what a member gets: the objects, and the mounted Secrets' versions.
func objectsDigest(objects []*unstructured.Unstructured, mounted []string, version func(string) string) string {
	h := sha256.New()
	for _, o := range objects {
		b, _ := json.Marshal(o.Object)
		h.Write(b)
	}
	for _, name := range mounted {
		fmt.Fprintf(h, "\x00%s=%s", name, version(name))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// statuses are a gateway's status.members.
func (m *memberProxies) statuses(gw *kroxyliciousv1alpha1.KafkaGateway, params *kroxyliciousv1alpha1.KafkaGatewayParameters) []kroxyliciousv1alpha1.GatewayMemberStatus {
	var out []kroxyliciousv1alpha1.GatewayMemberStatus
	for _, mem := range knownMembers(gw, params) {
		e := m.ledger.Entry(memberKey(gw, mem.Name))
		if e.Removed {
			continue
		}
		st := kroxyliciousv1alpha1.GatewayMemberStatus{Name: mem.Name, Cluster: mem.Cluster, Message: member.NotContacted}
		if e.Contacted {
			st.Reachable, st.Programmed, st.Message = e.Result.Reachable, e.Result.Synced, e.Result.Message
		} else if i := slices.IndexFunc(gw.Status.Members, func(s kroxyliciousv1alpha1.GatewayMemberStatus) bool { return s.Name == mem.Name }); i >= 0 {
			st = gw.Status.Members[i] // not delivered by this process yet: as status last said
		}
		out = append(out, st)
	}
	return out
}

// forget drops what is known of a gateway that no longer exists.
func (m *memberProxies) forget(gw cache.ObjectName) { m.ledger.Forget(gw) }

// deliver is the ledger's Deliver: it makes the member hold what its spec says (Synced: the proxy
// is programmed) and checks on it again while it is wanted. The ledger says what went wrong on an
// error.
func (m *memberProxies) deliver(ctx context.Context, c *member.Cluster, item string, spec member.Spec[memberSpec], last member.Result) (member.Result, error) {
	res := member.Result{Applied: last.Applied}
	dyn, err := c.Dynamic(ctx)
	switch {
	case err != nil:
	case spec.Remove:
		if err = m.prune(ctx, dyn, spec.Object, nil); err == nil {
			res.Removed, res.Applied, res.Message = true, "", "proxy removed"
		}
	case last.Applied != spec.Version:
		if err = m.applyAll(ctx, dyn, spec.Object); err != nil {
			break
		}
		res.Applied = spec.Version
		fallthrough
	default:
		res.Synced, res.Message, err = m.programmed(ctx, dyn, spec.Object)
	}
	switch {
	case err == nil && !spec.Remove && !res.Synced:
		c.Requeue(item, memberPoll)
	case err == nil && !spec.Remove:
		c.Requeue(item, memberRecheck)
	}
	return res, err
}

// applyAll applies the objects and the mounted Secrets' copies, then deletes what the member
// holds for the gateway that is no longer wanted.
func (m *memberProxies) applyAll(ctx context.Context, dyn dynamic.Interface, spec memberSpec) error {
	objects := slices.Clone(spec.objects)
	for _, name := range spec.mounted {
		s, err := m.central.CoreV1().Secrets(spec.namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // the gateway's status says so; the member's pod waits, as the central one does
		}
		if err != nil {
			return err
		}
		objects = append([]*unstructured.Unstructured{secretCopy(s, spec.gatewayUID)}, objects...)
	}
	want := map[string]bool{}
	for _, o := range objects {
		want[o.GetKind()+"/"+o.GetName()] = true
		if err := applyToMember(ctx, dyn, spec.namespace, o); err != nil {
			return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return m.prune(ctx, dyn, spec, want)
}

// applyToMember applies one object to a member. A Service the API server refuses is looked at:
// when it is this gateway's copy and only its clusterIP form differs (services.inClusterType changed), it is deleted and
// applied again, as the central cluster's are (there the cache tells it before the write).
func applyToMember(ctx context.Context, dyn dynamic.Interface, namespace string, o *unstructured.Unstructured) error {
	client := dyn.Resource(kindToGVR[o.GetKind()]).Namespace(namespace)
	apply := func() error {
		_, err := client.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: controller.FieldManager, Force: true})
		return err
	}
	err := apply()
	if !apierrors.IsInvalid(err) || o.GetKind() != gateway.KindService {
		return err
	}
	live, getErr := client.Get(ctx, o.GetName(), metav1.GetOptions{})
	if getErr != nil {
		return err
	}
	if !sameMemberCopy(live, o) {
		return err // not this gateway's copy: never deleted
	}
	var liveSvc, desired corev1.Service
	if fromUnstructured(live, &liveSvc) != nil || fromUnstructured(o, &desired) != nil || !gateway.ClusterIPFormChanges(&liveSvc, &desired) {
		return err
	}
	uid := live.GetUID()
	if err := client.Delete(ctx, o.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return apply()
}

// sameMemberCopy reports whether live carries the member label of desired, the gateway's copy:
// what prune selects by, so that nothing else of the same name is deleted.
func sameMemberCopy(live, desired *unstructured.Unstructured) bool {
	owner := desired.GetLabels()[wellknown.LabelMemberOf]
	return owner != "" && live.GetLabels()[wellknown.LabelMemberOf] == owner
}

// secretCopy is a central Secret as a member gets it: data and type, labelled for pruning.
func secretCopy(s *corev1.Secret, gatewayUID string) *unstructured.Unstructured {
	data := map[string]any{}
	for k, v := range s.Data {
		data[k] = v
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": gateway.KindSecret, "type": string(s.Type)}}
	u.SetName(s.Name)
	u.SetNamespace(s.Namespace)
	u.SetLabels(map[string]string{wellknown.LabelMemberOf: gatewayUID, wellknown.LabelManagedBy: wellknown.LabelManagedByValue})
	obj, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.Secret{Data: s.Data})
	u.Object["data"] = obj["data"]
	return u
}

// prune deletes the member's objects of the gateway that are not wanted (all when want is nil).
func (m *memberProxies) prune(ctx context.Context, dyn dynamic.Interface, spec memberSpec, want map[string]bool) error {
	selector := wellknown.LabelMemberOf + "=" + spec.gatewayUID
	for _, kind := range memberKinds {
		client := dyn.Resource(kindToGVR[kind]).Namespace(spec.namespace)
		list, err := client.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		for _, o := range list.Items {
			if want[kind+"/"+o.GetName()] {
				continue
			}
			uid := o.GetUID()
			if err := client.Delete(ctx, o.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

// programmed reads the member's Deployment: Programmed once it runs the current template with
// an available replica.
func (m *memberProxies) programmed(ctx context.Context, dyn dynamic.Interface, spec memberSpec) (bool, string, error) {
	u, err := dyn.Resource(gvrDeployment).Namespace(spec.namespace).Get(ctx, spec.deployment, metav1.GetOptions{})
	if err != nil {
		return false, "", err
	}
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
		return false, "", err
	}
	if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas < 1 || d.Status.AvailableReplicas < 1 {
		return false, fmt.Sprintf("waiting for the proxy Deployment: %d updated, %d available", d.Status.UpdatedReplicas, d.Status.AvailableReplicas), nil
	}
	return true, "proxy available", nil
}

// syncMembers brings the gateway's member proxies along after a sync (res nil while held) and
// returns their state for the status to write; finalizeMembers does it for a deleted gateway.
func (c *Controller) syncMembers(ctx context.Context, gw *kroxyliciousv1alpha1.KafkaGateway, params *kroxyliciousv1alpha1.KafkaGatewayParameters, res *gateway.Result) ([]kroxyliciousv1alpha1.GatewayMemberStatus, error) {
	version := func(name string) string {
		if s, err := c.secrets.Secrets(gw.Namespace).Get(name); err == nil {
			return s.ResourceVersion
		}
		return ""
	}
	allGone := c.members.want(gw, params, res, version)
	if patch := controller.FinalizerPatch(gw, FinalizerMemberProxies, !allGone); patch != nil {
		if _, err := c.env.Clients.KafkaLink.KroxyliciousV1alpha1().KafkaGateways(gw.Namespace).Patch(ctx, gw.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: controller.FieldManager}); err != nil {
			return nil, err
		}
	}
	return c.members.statuses(gw, params), nil
}

// finalizeMembers removes a deleted gateway's member proxies, reporting them in status, and
// then its finalizer; a member that does not answer holds the gateway until it does.
func (c *Controller) finalizeMembers(ctx context.Context, gw *kroxyliciousv1alpha1.KafkaGateway) error {
	if !slices.Contains(gw.Finalizers, FinalizerMemberProxies) {
		return nil
	}
	members, err := c.syncMembers(ctx, gw, nil, nil)
	if err != nil || equality.Semantic.DeepEqual(members, gw.Status.Members) {
		return err
	}
	updated := gw.DeepCopy()
	updated.Status.Members = members
	_, err = c.env.Clients.KafkaLink.KroxyliciousV1alpha1().KafkaGateways(gw.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: controller.FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
