package gatewaycontroller

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	filterv1alpha1 "github.com/kafkalink/kafkalink/apis/filter/v1alpha1"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gateway"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
	proxyconfig "github.com/kafkalink/kafkalink/proxy/config"
)

// Event reasons beyond the condition reasons.
const (
	EventApplied = "Applied"
	EventPruned  = "Pruned"
	// EventRecreated: generated Services were deleted to be created again in the other
	// clusterIP form (services.inClusterType changed).
	EventRecreated = "Recreated"
	// EventRestored: generated objects changed by hand were applied again.
	EventRestored = "Restored"
)

// sync reconciles one KafkaGateway (the controller.SyncFunc): gather a snapshot from the caches,
// translate it (again, knowing them, when desired names are held by objects the gateway does not
// control), apply the generated objects and prune the rest (or, while the translation holds,
// prune only Secret copies whose grant was withdrawn), then write the status of the gateway, its
// routes and its policies. A deleted gateway's entries are removed from route and policy status
// (forget); the garbage collector removes its objects through their owner references. User errors
// end in status; API errors return for a retry.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx)
	gw, err := c.gateways.KafkaGateways(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		// Owner references let the garbage collector remove what the gateway generated; only the
		// status it wrote into routes and policies is left to clean.
		c.members.forget(key)
		return c.forget(ctx, key)
	}
	if err != nil {
		return err
	}
	if gw.DeletionTimestamp != nil {
		// Garbage collection removes what the gateway generated here; member clusters' copies
		// are ours to remove.
		return c.finalizeMembers(ctx, gw)
	}
	snap, err := c.gather(ctx, gw)
	if err != nil {
		return err
	}
	res := gateway.Translate(snap)
	if !res.Hold {
		foreign := c.foreign(gw, res.Objects)
		if len(foreign) > 0 {
			// Names held by objects the gateway does not control: translate again knowing them,
			// so the routes that need them say so and nothing is adopted.
			snap.Foreign = foreign
			res = gateway.Translate(snap)
		}
		c.waiters.set(key, foreign)
	}
	if !res.Hold {
		if err := c.apply(ctx, gw, res); err != nil {
			return err
		}
	} else if res.KeepCopies != nil {
		// Held: generated objects stay, except Secret copies whose grant was withdrawn.
		keep := map[gateway.ObjectKey]bool{}
		for name := range res.KeepCopies {
			keep[gateway.ObjectKey{Kind: gateway.KindSecret, Name: name}] = true
		}
		if _, err := c.prune(ctx, gw, []string{gateway.KindSecret}, keep); err != nil {
			return err
		}
	}
	applied := res
	if res.Hold {
		applied = nil
	}
	if res.GatewayStatus.Members, err = c.syncMembers(ctx, gw, snap.Parameters, applied); err != nil {
		return err
	}
	if err := c.writeStatus(ctx, gw, res); err != nil {
		return err
	}
	if res.RequeueAfter > 0 {
		logger.V(4).Info("Looking again later", "after", res.RequeueAfter)
		c.ctrl.EnqueueAfter(key, res.RequeueAfter)
	}
	return nil
}

// gather reads the snapshot from the informer caches: the environment, the parameters, the
// gateway namespace's routes, filters and policies, the Services and Secrets they name, the
// ReferenceGrants, and the generated Deployment and TLSRoutes the status reads.
func (c *Controller) gather(ctx context.Context, gw *kroxyliciousv1alpha1.KafkaGateway) (*gateway.Snapshot, error) {
	ns := gw.Namespace
	s := &gateway.Snapshot{Gateway: gw, Env: c.environment()}
	if name := gatewaymodel.ParametersName(gw); name != "" {
		p, err := c.params.KafkaGatewayParameters(ns).Get(name)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if err == nil {
			s.Parameters = p
		}
	}
	var err error
	if s.Routes, err = c.routes.KafkaRoutes(ns).List(labels.Everything()); err != nil {
		return nil, err
	}
	if s.Filters, err = c.filters.KafkaFilters(ns).List(labels.Everything()); err != nil {
		return nil, err
	}
	if s.Policies, err = c.policies.List(labels.Everything()); err != nil {
		return nil, err
	}
	if s.Services, err = c.gatherServices(ns, s.Routes); err != nil {
		return nil, err
	}
	s.Kafkas, s.KafkaErrors, s.NodePools = c.gatherKafkas(s.Routes, s.Services)
	if s.Secrets, err = c.gatherSecrets(ctx, gw, s.Policies, s.Filters, append(kafkaCASecrets(backendKafkas(s.Routes, s.Kafkas)), routesSecrets(s.Routes)...)); err != nil {
		return nil, err
	}
	if s.Env.FreshBrokerKey, err = c.brokerKey(ctx, gw, s); err != nil {
		return nil, err
	}
	if s.ConfigMaps, err = c.gatherConfigMaps(ctx, s.Filters); err != nil {
		return nil, err
	}
	if store := c.grants.Indexer(); store != nil {
		for _, o := range store.List() {
			if g, ok := o.(*gatewayv1beta1.ReferenceGrant); ok {
				s.ReferenceGrants = append(s.ReferenceGrants, g)
			}
		}
	}
	if d, err := c.deployments.Deployments(ns).Get(gateway.DeploymentName(gw.Name)); err == nil && controlledBy(d, gw) {
		s.Deployment = d
	}
	s.ParentGateways = c.gatherParents(ns, s.Parameters)
	if store := c.tlsRoutes.Indexer(); store != nil {
		for _, o := range store.List() {
			var r gatewayv1.TLSRoute
			if fromUnstructured(o, &r) == nil && r.Namespace == ns && controlledBy(&r, gw) {
				s.TLSRoutes = append(s.TLSRoutes, &r)
			}
		}
	}
	return s, nil
}

// gatherParents reads the Gateway API Gateways the parameters' parentRefs name from the shared
// cache, which holds them typed (without status, which package gateway does not read); they are
// the cache's objects, read and never modified.
func (c *Controller) gatherParents(ns string, params *kroxyliciousv1alpha1.KafkaGatewayParameters) []*gatewayv1.Gateway {
	store := c.parents.Indexer()
	if params == nil || store == nil {
		return nil
	}
	var out []*gatewayv1.Gateway
	for _, p := range params.Spec.ParentRefs {
		pns := ns
		if p.Namespace != nil && *p.Namespace != "" {
			pns = string(*p.Namespace)
		}
		obj, exists, err := store.GetByKey(pns + "/" + string(p.Name))
		if g, ok := obj.(*gatewayv1.Gateway); err == nil && exists && ok {
			out = append(out, g)
		}
	}
	return out
}

// brokerKey offers a fresh key for the brokerIdentityMapping hash when one of the gateway's
// routes uses it and the gateway's key Secret is not in the snapshot. The cache may not have the
// Secret this controller created a moment ago, and a new key would rename every hashed broker,
// so the Secret is read from the API server first; if it exists there, it joins the snapshot
// and no fresh key is offered.
func (c *Controller) brokerKey(ctx context.Context, gw *kroxyliciousv1alpha1.KafkaGateway, s *gateway.Snapshot) ([]byte, error) {
	if !usesHashMapping(gw.Name, s.Routes) {
		return nil, nil
	}
	name := gateway.BrokerIdentitySecretName(gw.Name)
	ours := func(sec *corev1.Secret) bool { return sec.Labels[wellknown.LabelGateway] == gw.Name }
	for _, sec := range s.Secrets {
		if sec.Namespace == gw.Namespace && sec.Name == name && ours(sec) {
			return nil, nil
		}
	}
	sec, err := c.env.Clients.Kube.CoreV1().Secrets(gw.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && ours(sec):
		s.Secrets = append(s.Secrets, sec)
		return nil, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, err
	}
	// None, or one the gateway did not generate: the generated one then reports NameInUse.
	key := make([]byte, proxyconfig.BrokerKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return key, nil
}

// usesHashMapping reports whether a route names gateway with brokerIdentityMapping hash.
func usesHashMapping(gateway_ string, routes []*kroxyliciousv1alpha1.KafkaRoute) bool {
	for _, r := range routes {
		for _, pr := range r.Spec.ParentRefs {
			if !gatewaymodel.IsGatewayParent(pr) || string(pr.Name) != gateway_ {
				continue
			}
			for _, b := range pr.Brokers {
				if ptr.Deref(b.BrokerIdentityMapping, "") == kroxyliciousv1alpha1.BrokerIdentityMappingHash {
					return true
				}
			}
		}
	}
	return false
}

// environment is what the translator reads from the operator rather than from objects.
func (c *Controller) environment() gateway.Environment {
	env := gateway.Environment{
		ClusterDomain: c.env.Options.ClusterDomain,
		ProxyImage:    c.env.Options.ProxyImage,
		FilterTypes:   c.env.Options.ProxyFilterTypes,
		CheckFilter:   c.env.Options.CheckFilter,

		AllowedMetadataPrefixes: c.env.Options.AllowedMetadataPrefixes,
		AllowedIngressDomains:   c.env.Options.AllowedIngressDomains,
		OpenShiftRoutes:         c.osRoutes.Ready(),
		TLSRoutes:               c.tlsRoutes.Ready(),
		ReferenceGrants:         c.grants.Served(),
		StrimziKafkas:           c.kafkas.Served(),
		TLSRouteTimeout:         c.env.Options.TLSRouteAttachTimeout,
		MaxGeneratedObjects:     c.env.Options.MaxGeneratedObjectsPerGateway,
		Now:                     c.clock.Now(),
	}
	if c.env.Informers.Namespace != "" {
		env.VisibleNamespaces = []string{c.env.Informers.Namespace}
	}
	return env
}

// gatherServices lists the gateway namespace's Services (its own, and same-namespace backends),
// plus the backends the routes name in other namespaces.
func (c *Controller) gatherServices(ns string, routes []*kroxyliciousv1alpha1.KafkaRoute) ([]*corev1.Service, error) {
	services, err := c.services.Services(ns).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, r := range routes {
		backends, _ := routeBackends(r)
		for _, b := range backends {
			bns, name, _ := cache.SplitMetaNamespaceKey(b)
			if bns == ns || seen[b] {
				continue
			}
			seen[b] = true
			if svc, err := c.services.Services(bns).Get(name); err == nil {
				services = append(services, svc)
			}
		}
	}
	return services, nil
}

// gatherSecrets lists the gateway namespace's Secrets plus those named in other namespaces, as
// the cache holds them (key names, no private values). The values are read only where the
// translator needs them: the gateway's own references (key pairs are checked, other namespaces'
// are copied), the KafkaFilters' Secrets (their configuration is checked with them as files) and
// policy CAs in other namespaces (copied).
// routeRefs are the Kafka CA and discovery credential Secrets the routes use (namespace/name);
// like policy CAs, those of other namespaces are copied, so their values are read.
func (c *Controller) gatherSecrets(ctx context.Context, gw *kroxyliciousv1alpha1.KafkaGateway, policies []*kroxyliciousv1alpha1.KafkaBackendTLSPolicy,
	filters []*filterv1alpha1.KafkaFilter, routeRefs []string) ([]*corev1.Secret, error) {
	ns := gw.Namespace
	listed, err := c.secrets.Secrets(ns).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	refs, _ := gatewaySecrets(gw)
	for _, f := range filters {
		more, _ := filterSecrets(f)
		refs = append(refs, more...)
	}
	withValues := map[string]bool{}
	for _, ref := range refs {
		withValues[ref] = true
	}
	copied := [][]string{routeRefs}
	for _, p := range policies {
		more, _ := policySecrets(p)
		copied = append(copied, more)
	}
	for _, more := range copied {
		for _, ref := range more {
			if sns, _, _ := cache.SplitMetaNamespaceKey(ref); sns != ns {
				withValues[ref] = true
			}
		}
		refs = append(refs, more...)
	}
	seen := map[string]bool{}
	for _, ref := range refs {
		sns, name, _ := cache.SplitMetaNamespaceKey(ref)
		if sns == ns || seen[ref] {
			continue
		}
		seen[ref] = true
		if sec, err := c.secrets.Secrets(sns).Get(name); err == nil {
			listed = append(listed, sec)
		}
	}
	secrets := listed[:0]
	for _, sec := range listed {
		if withValues[sec.Namespace+"/"+sec.Name] && !generatedSecret(sec) {
			full, err := c.secretData.get(ctx, sec)
			if err != nil {
				return nil, err
			}
			if full == nil {
				continue
			}
			sec = full
		}
		secrets = append(secrets, sec)
	}
	c.secretData.sweep(c.secretReferenced)
	return secrets, nil
}

// metaObjects lists a lister's objects as metav1.Objects; a lister's error is its selector's,
// and the prune selector is fixed.
func metaObjects[T metav1.Object](list []T, _ error) []metav1.Object {
	out := make([]metav1.Object, len(list))
	for i, o := range list {
		out[i] = o
	}
	return out
}

// generatedSecret reports a Secret a gateway generated: the informer keeps its values.
func generatedSecret(s *corev1.Secret) bool { return generated(s) }

// secretReferenced reports whether a gateway or a policy names Secret namespace/name, or it is
// the cluster CA of a Kafka a route uses.
func (c *Controller) secretReferenced(key string) bool {
	if controller.HasIndexed(c.gatewayIdx, indexGatewaySecret, key) || controller.HasIndexed(c.policyIdx, indexPolicySecret, key) ||
		controller.HasIndexed(c.routeIdx, indexRouteSecret, key) || controller.HasIndexed(c.filterIdx, indexFilterSecret, key) {
		return true
	}
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	cluster, ok := strings.CutSuffix(name, strimzi.ClusterCACertSuffix)
	return ok && controller.HasIndexed(c.routeIdx, indexRouteBackend, kafkaKey(ns, cluster))
}

func fromUnstructured(o any, into any) error {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("not unstructured: %T", o)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

func controlledBy(obj metav1.Object, gw *kroxyliciousv1alpha1.KafkaGateway) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == gw.UID
}

// existing returns the object of a generated kind and name from the caches, or nil.
func (c *Controller) existing(kind, namespace, name string) metav1.Object {
	var obj any
	var err error
	switch kind {
	case gateway.KindDeployment:
		obj, err = c.deployments.Deployments(namespace).Get(name)
	case gateway.KindPodDisruptionBudget:
		obj, err = c.pdbs.PodDisruptionBudgets(namespace).Get(name)
	case gateway.KindConfigMap:
		obj, err = c.configMaps.ConfigMaps(namespace).Get(name)
	case gateway.KindService:
		obj, err = c.services.Services(namespace).Get(name)
	case gateway.KindSecret:
		obj, err = c.secrets.Secrets(namespace).Get(name)
	case gateway.KindRoute, gateway.KindTLSRoute:
		o := c.osRoutes
		if kind == gateway.KindTLSRoute {
			o = c.tlsRoutes
		}
		store := o.Indexer()
		if store == nil {
			return nil
		}
		var exists bool
		obj, exists, err = store.GetByKey(namespace + "/" + name)
		if !exists {
			return nil
		}
	}
	if err != nil || obj == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m
}

// foreign lists desired names already held by objects the gateway does not control.
func (c *Controller) foreign(gw *kroxyliciousv1alpha1.KafkaGateway, objects []*unstructured.Unstructured) []gateway.ObjectKey {
	var out []gateway.ObjectKey
	for _, o := range objects {
		if m := c.existing(o.GetKind(), o.GetNamespace(), o.GetName()); m != nil && !controlledBy(m, gw) {
			out = append(out, gateway.ObjectKey{Kind: o.GetKind(), Name: o.GetName()})
		}
	}
	return out
}

// apply writes each desired object whose applied hash (wellknown.AnnotationAppliedHash) differs,
// then deletes generated objects that are no longer desired. An object whose hash matches the
// desired one, and that still holds every applied field (see drift.go), is not written again, so
// an idle operator makes no writes. The gateway's own objects (ConfigMap, Deployment, PDB, Secret
// copies) are written one after the other in the translator's order; the per-host objects, which
// are many and independent of each other, writesInFlight at a time.
func (c *Controller) apply(ctx context.Context, gw *kroxyliciousv1alpha1.KafkaGateway, res *gateway.Result) error {
	if err := c.recreate(ctx, gw, res.RecreateServices); err != nil {
		return err
	}
	desired := map[gateway.ObjectKey]bool{}
	var inOrder, perHost []applyStep
	restored := 0
	for _, o := range res.Objects {
		desired[gateway.ObjectKey{Kind: o.GetKind(), Name: o.GetName()}] = true
		step, write, err := c.planApply(ctx, gw, o)
		if err != nil {
			return err
		}
		if !write {
			continue
		}
		if step.restore {
			restored++
		}
		if perHostKinds[o.GetKind()] {
			perHost = append(perHost, step)
		} else {
			inOrder = append(inOrder, step)
		}
	}
	for _, step := range inOrder {
		if err := c.applyOne(ctx, step); err != nil {
			return err
		}
	}
	if err := inParallel(ctx, len(perHost), writesInFlight, func(ctx context.Context, i int) error { return c.applyOne(ctx, perHost[i]) }); err != nil {
		return err
	}
	applied := len(inOrder) + len(perHost)
	pruned, err := c.prune(ctx, gw, res.PruneKinds, desired)
	if err != nil {
		return err
	}
	if restored > 0 {
		c.env.Recorder.Eventf(gw, corev1.EventTypeWarning, EventRestored, "Restored %d generated objects that were changed by someone else", restored)
	}
	if applied > restored || pruned > 0 {
		c.env.Recorder.Eventf(gw, corev1.EventTypeNormal, EventApplied, "Applied %d and deleted %d generated objects", applied-restored, pruned)
	}
	return nil
}

// recreate deletes the gateway's Services the translation found in the wrong clusterIP form
// (gateway.ClusterIPFormChanges), so that apply creates them again: Kubernetes refuses the change
// in place. The UID precondition leaves alone a Service already created again since the cache
// was filled.
func (c *Controller) recreate(ctx context.Context, gw *kroxyliciousv1alpha1.KafkaGateway, names []string) error {
	deleted := 0
	for _, name := range names {
		m := c.existing(gateway.KindService, gw.Namespace, name)
		if m == nil || !controlledBy(m, gw) || m.GetDeletionTimestamp() != nil {
			continue
		}
		uid := m.GetUID()
		err := c.dynamic.Resource(kindToGVR[gateway.KindService]).Namespace(gw.Namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("deleting Service %s/%s to create it again: %w", gw.Namespace, name, err)
		}
		deleted++
	}
	if deleted > 0 {
		klog.FromContext(ctx).V(2).Info("Deleted Services to create them in the other clusterIP form", "gateway", klog.KObj(gw), "count", deleted)
		c.env.Recorder.Eventf(gw, corev1.EventTypeNormal, EventRecreated, "Deleting and creating again %d Services whose clusterIP form changed (services.inClusterType)", deleted)
	}
	return nil
}

// perHostKinds are the generated kinds of which a gateway has one or more per route host: many,
// and independent of each other, so apply writes them concurrently.
var perHostKinds = map[string]bool{gateway.KindService: true, gateway.KindRoute: true, gateway.KindTLSRoute: true}

// applyStep is a desired object as apply writes it: owned by the gateway, with its applied hash.
type applyStep struct {
	obj *unstructured.Unstructured
	gvr schema.GroupVersionResource
	// restore: the hash matched but the live object no longer holds every applied field.
	restore bool
}

// planApply prepares a desired object for writing, and reports whether it must be written: it
// is missing, its applied hash differs, or it drifted.
func (c *Controller) planApply(ctx context.Context, gw *kroxyliciousv1alpha1.KafkaGateway, o *unstructured.Unstructured) (applyStep, bool, error) {
	gvr, ok := kindToGVR[o.GetKind()]
	if !ok {
		return applyStep{}, false, nil
	}
	o = o.DeepCopy()
	o.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: kroxyliciousv1alpha1.SchemeGroupVersion.String(), Kind: gatewaymodel.KindGateway,
		Name: gw.Name, UID: gw.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}})
	hash, err := objectHash(o)
	if err != nil {
		return applyStep{}, false, err
	}
	ann := o.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[wellknown.AnnotationAppliedHash] = hash
	o.SetAnnotations(ann)
	step := applyStep{obj: o, gvr: gvr}
	m := c.existing(o.GetKind(), o.GetNamespace(), o.GetName())
	if m == nil || !controlledBy(m, gw) || m.GetAnnotations()[wellknown.AnnotationAppliedHash] != hash {
		return step, true, nil
	}
	live, err := liveFields(m)
	if err != nil {
		return applyStep{}, false, err
	}
	field := drift(live, o.Object)
	if field == "" {
		return applyStep{}, false, nil
	}
	step.restore = true
	klog.FromContext(ctx).Info("Restoring a generated object changed by someone else", "kind", o.GetKind(), "object", klog.KRef(o.GetNamespace(), o.GetName()), "field", field)
	return step, true, nil
}

// applyOne writes one object with server-side apply.
func (c *Controller) applyOne(ctx context.Context, step applyStep) error {
	o := step.obj
	if _, err := c.dynamic.Resource(step.gvr).Namespace(o.GetNamespace()).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: controller.FieldManager, Force: true}); err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
	}
	klog.FromContext(ctx).V(2).Info("Applied", "kind", o.GetKind(), "object", klog.KRef(o.GetNamespace(), o.GetName()))
	return nil
}

func objectHash(o *unstructured.Unstructured) (string, error) {
	b, err := json.Marshal(o.Object) // map keys marshal sorted
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}

// prune deletes the gateway's generated objects of the given kinds that are not desired.
func (c *Controller) prune(ctx context.Context, gw *kroxyliciousv1alpha1.KafkaGateway, kinds []string, desired map[gateway.ObjectKey]bool) (int, error) {
	selector := labels.SelectorFromSet(labels.Set{wellknown.LabelGateway: gw.Name})
	pruned := 0
	for _, kind := range kinds {
		var objs []metav1.Object
		switch kind {
		case gateway.KindDeployment:
			objs = metaObjects(c.deployments.Deployments(gw.Namespace).List(selector))
		case gateway.KindPodDisruptionBudget:
			objs = metaObjects(c.pdbs.PodDisruptionBudgets(gw.Namespace).List(selector))
		case gateway.KindConfigMap:
			objs = metaObjects(c.configMaps.ConfigMaps(gw.Namespace).List(selector))
		case gateway.KindService:
			objs = metaObjects(c.services.Services(gw.Namespace).List(selector))
		case gateway.KindSecret:
			objs = metaObjects(c.secrets.Secrets(gw.Namespace).List(selector))
		case gateway.KindRoute, gateway.KindTLSRoute:
			o := c.osRoutes
			if kind == gateway.KindTLSRoute {
				o = c.tlsRoutes
			}
			for _, m := range controller.ByIndex[metav1.Object](o.Indexer(), cache.NamespaceIndex, gw.Namespace) {
				if selector.Matches(labels.Set(m.GetLabels())) {
					objs = append(objs, m)
				}
			}
		}
		sort.Slice(objs, func(i, j int) bool { return objs[i].GetName() < objs[j].GetName() })
		for _, o := range objs {
			if desired[gateway.ObjectKey{Kind: kind, Name: o.GetName()}] || !controlledBy(o, gw) || o.GetDeletionTimestamp() != nil {
				continue
			}
			uid := o.GetUID()
			err := c.dynamic.Resource(kindToGVR[kind]).Namespace(gw.Namespace).Delete(ctx, o.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return pruned, fmt.Errorf("deleting %s %s/%s: %w", kind, gw.Namespace, o.GetName(), err)
			}
			pruned++
			klog.FromContext(ctx).V(2).Info("Pruned", "kind", kind, "object", klog.KRef(gw.Namespace, o.GetName()))
		}
	}
	return pruned, nil
}

// changedToBad lists the conditions that turned unhealthy (or changed reason while unhealthy).
func changedToBad(old, desired []metav1.Condition) []metav1.Condition {
	var out []metav1.Condition
	for _, d := range desired {
		bad := d.Status == metav1.ConditionFalse
		if d.Type == gateway.ConditionConflicted {
			bad = d.Status == metav1.ConditionTrue
		}
		if !bad {
			continue
		}
		prev := meta.FindStatusCondition(old, d.Type)
		if prev == nil || prev.Status != d.Status || prev.Reason != d.Reason {
			out = append(out, d)
		}
	}
	return out
}

// writeStatus writes the translation's status: the gateway's (conditions and listener conditions
// merged with the old ones, so unchanged conditions keep their lastTransitionTime; updated only
// when it differs), then this gateway's entries in its routes' and policies' status. It records a
// Warning event for each condition that just turned bad, and a Normal one when the gateway becomes
// Programmed; an unchanged status is silent.
func (c *Controller) writeStatus(ctx context.Context, gw *kroxyliciousv1alpha1.KafkaGateway, res *gateway.Result) error {
	now := metav1.NewTime(c.clock.Now())
	st := res.GatewayStatus
	st.Conditions = controller.MergeConditions(gw.Status.Conditions, st.Conditions, now)
	for i := range st.Listeners {
		var old []metav1.Condition
		for _, l := range gw.Status.Listeners {
			if l.Name == st.Listeners[i].Name {
				old = l.Conditions
			}
		}
		for _, cond := range changedToBad(old, st.Listeners[i].Conditions) {
			if cond.Type != gateway.ConditionProgrammed { // Programmed follows from the others
				c.env.Recorder.Event(gw, corev1.EventTypeWarning, cond.Reason, fmt.Sprintf("listener %s: %s", st.Listeners[i].Name, cond.Message))
			}
		}
		st.Listeners[i].Conditions = controller.MergeConditions(old, st.Listeners[i].Conditions, now)
	}
	if !equality.Semantic.DeepEqual(gw.Status, st) {
		// Warning events only for conditions that just turned bad: an unchanged status is silent.
		for _, cond := range changedToBad(gw.Status.Conditions, st.Conditions) {
			if cond.Type != gateway.ConditionReady { // Ready repeats Accepted or Programmed
				c.env.Recorder.Event(gw, corev1.EventTypeWarning, cond.Reason, cond.Message)
			}
		}
		if was, is := meta.FindStatusCondition(gw.Status.Conditions, gateway.ConditionProgrammed), meta.FindStatusCondition(st.Conditions, gateway.ConditionProgrammed); is != nil && is.Status == metav1.ConditionTrue && (was == nil || was.Status != metav1.ConditionTrue) {
			c.env.Recorder.Event(gw, corev1.EventTypeNormal, gateway.ReasonProgrammed, is.Message)
		}
		updated := gw.DeepCopy()
		updated.Status = st
		if _, err := c.env.Clients.KafkaLink.KroxyliciousV1alpha1().KafkaGateways(gw.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: controller.FieldManager}); err != nil {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Updated gateway status", "gateway", klog.KObj(gw))
	}
	if res.RouteParents != nil {
		names := make([]string, 0, len(res.RouteParents))
		for n := range res.RouteParents {
			names = append(names, n)
		}
		sort.Strings(names)
		// Each route's status is its own object: written writesInFlight at a time.
		if err := inParallel(ctx, len(names), writesInFlight, func(ctx context.Context, i int) error {
			return c.writeRouteStatus(ctx, gw.Namespace, gw.Name, names[i], res.RouteParents[names[i]], now)
		}); err != nil {
			return err
		}
	}
	if res.PolicyAncestors != nil {
		keys := make([]types.NamespacedName, 0, len(res.PolicyAncestors))
		for k := range res.PolicyAncestors {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			if err := c.writePolicyStatus(ctx, gw.Namespace, gw.Name, k, res.PolicyAncestors[k], now); err != nil {
				return err
			}
		}
	}
	return nil
}

func ours(p kroxyliciousv1alpha1.RouteParentStatus, gateway_ string) bool {
	return p.ControllerName == gateway.ControllerName && string(p.ParentRef.Name) == gateway_ &&
		(p.ParentRef.Kind == nil || *p.ParentRef.Kind == gatewaymodel.KindGateway)
}

// writeRouteStatus replaces this gateway's entries in a route's status.parents, leaving other
// gateways' and controllers' entries alone.
func (c *Controller) writeRouteStatus(ctx context.Context, namespace, gw, routeName string, entries []kroxyliciousv1alpha1.RouteParentStatus, now metav1.Time) error {
	route, err := c.routes.KafkaRoutes(namespace).Get(routeName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var old []kroxyliciousv1alpha1.RouteParentStatus
	var parents []kroxyliciousv1alpha1.RouteParentStatus
	for _, p := range route.Status.Parents {
		if ours(p, gw) {
			old = append(old, p)
		} else {
			parents = append(parents, p)
		}
	}
	for _, e := range entries {
		var prev []metav1.Condition
		for _, o := range old {
			if ptr.Deref(o.ParentRef.SectionName, "") == ptr.Deref(e.ParentRef.SectionName, "") {
				prev = o.Conditions
				break
			}
		}
		for _, cond := range changedToBad(prev, e.Conditions) {
			c.env.Recorder.Event(route, corev1.EventTypeWarning, cond.Reason, fmt.Sprintf("gateway %s: %s", gw, cond.Message))
		}
		e.Conditions = controller.MergeConditions(prev, e.Conditions, now)
		parents = append(parents, e)
	}
	if len(parents) > 32 {
		parents = parents[:32]
	}
	if equality.Semantic.DeepEqual(route.Status.Parents, parents) || len(route.Status.Parents) == 0 && len(parents) == 0 {
		return nil
	}
	updated := route.DeepCopy()
	updated.Status.Parents = parents
	_, err = c.env.Clients.KafkaLink.KroxyliciousV1alpha1().KafkaRoutes(namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: controller.FieldManager})
	return err
}

func (c *Controller) writePolicyStatus(ctx context.Context, namespace, gw string, key types.NamespacedName, entry *kroxyliciousv1alpha1.PolicyAncestorStatus, now metav1.Time) error {
	policy, err := c.policies.KafkaBackendTLSPolicies(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var prev []metav1.Condition
	var ancestors []kroxyliciousv1alpha1.PolicyAncestorStatus
	for _, a := range policy.Status.Ancestors {
		if a.ControllerName == gateway.ControllerName && string(a.AncestorRef.Name) == gw && a.AncestorRef.Namespace != nil && string(*a.AncestorRef.Namespace) == namespace {
			prev = a.Conditions
			continue
		}
		ancestors = append(ancestors, a)
	}
	if entry != nil {
		e := *entry
		e.Conditions = controller.MergeConditions(prev, e.Conditions, now)
		ancestors = append(ancestors, e)
	}
	if len(ancestors) > 16 {
		ancestors = ancestors[:16]
	}
	if equality.Semantic.DeepEqual(policy.Status.Ancestors, ancestors) || len(policy.Status.Ancestors) == 0 && len(ancestors) == 0 {
		return nil
	}
	updated := policy.DeepCopy()
	updated.Status.Ancestors = ancestors
	_, err = c.env.Clients.KafkaLink.KroxyliciousV1alpha1().KafkaBackendTLSPolicies(key.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: controller.FieldManager})
	return err
}

// forget removes a deleted gateway's entries from route and policy status.
func (c *Controller) forget(ctx context.Context, key cache.ObjectName) error {
	c.waiters.set(key, nil)
	now := metav1.NewTime(c.clock.Now())
	for _, r := range controller.ByIndex[*kroxyliciousv1alpha1.KafkaRoute](c.routeIdx, indexRouteGateway, key.Name) {
		if r.Namespace != key.Namespace {
			continue
		}
		if err := c.writeRouteStatus(ctx, key.Namespace, key.Name, r.Name, nil, now); err != nil {
			return err
		}
	}
	policies, err := c.policies.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, p := range policies {
		for _, a := range p.Status.Ancestors {
			if a.ControllerName == gateway.ControllerName && string(a.AncestorRef.Name) == key.Name && a.AncestorRef.Namespace != nil && string(*a.AncestorRef.Namespace) == key.Namespace {
				if err := c.writePolicyStatus(ctx, key.Namespace, key.Name, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, nil, now); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// gatherKafkas reads the Strimzi Kafkas the routes name as backends from the shared cache, and
// those the backend Services belong to (gateway.StrimziClusterOf, for the route diagnostics),
// with the KafkaNodePools of their namespaces; a Kafka that does not parse is reported by name.
func (c *Controller) gatherKafkas(routes []*kroxyliciousv1alpha1.KafkaRoute, services []*corev1.Service) ([]*strimzi.Kafka, map[types.NamespacedName]error, []*strimzi.KafkaNodePool) {
	var kafkas []*strimzi.Kafka
	errs := map[types.NamespacedName]error{}
	namespaces := map[string]bool{}
	seen := map[string]bool{}
	idx := c.kafkas.Indexer()
	var keys []string
	for _, r := range routes {
		backends, _ := routeBackends(r)
		for _, b := range backends {
			if key, ok := strings.CutPrefix(b, kafkaKeyPrefix); ok {
				keys = append(keys, key)
			}
		}
	}
	for _, svc := range services {
		if k, ok := gateway.StrimziClusterOf(svc); ok {
			keys = append(keys, k.String())
		}
	}
	for _, key := range keys {
		if seen[key] || idx == nil {
			continue
		}
		seen[key] = true
		obj, exists, err := idx.GetByKey(key)
		u, isU := obj.(*unstructured.Unstructured)
		if err != nil || !exists || !isU {
			continue
		}
		k, err := strimzi.ParseKafka(u.Object)
		if err != nil {
			errs[types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}] = err
			continue
		}
		kafkas = append(kafkas, k)
		namespaces[k.Namespace] = true
	}
	return kafkas, errs, c.nodePoolsIn(namespaces)
}

// nodePoolsIn reads the cached KafkaNodePools of some namespaces.
func (c *Controller) nodePoolsIn(namespaces map[string]bool) []*strimzi.KafkaNodePool {
	return strimzi.CachedNodePools(c.nodePools.Indexer(), namespaces)
}

// kafkasOf lists the cached Kafkas of a namespace, parsed.
func (c *Controller) kafkasOf(namespace string) []*strimzi.Kafka {
	idx := c.kafkas.Indexer()
	if idx == nil {
		return nil
	}
	var out []*strimzi.Kafka
	for _, o := range idx.List() {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetNamespace() == namespace {
			if k, err := strimzi.ParseKafka(u.Object); err == nil {
				out = append(out, k)
			}
		}
	}
	return out
}

// backendKafkas are the Kafkas of a snapshot that routes name as backends, whose cluster CA the
// gateway may copy; the others are there for diagnostics only.
func backendKafkas(routes []*kroxyliciousv1alpha1.KafkaRoute, kafkas []*strimzi.Kafka) []*strimzi.Kafka {
	named := map[string]bool{}
	for _, r := range routes {
		backends, _ := routeBackends(r)
		for _, b := range backends {
			named[b] = true
		}
	}
	var out []*strimzi.Kafka
	for _, k := range kafkas {
		if named[kafkaKey(k.Namespace, k.Name)] {
			out = append(out, k)
		}
	}
	return out
}

// kafkaCASecrets names the cluster CA Secrets of Kafkas, as namespace/name.
func kafkaCASecrets(kafkas []*strimzi.Kafka) []string {
	out := make([]string, 0, len(kafkas))
	for _, k := range kafkas {
		out = append(out, k.Namespace+"/"+strimzi.ClusterCASecretName(k.Name))
	}
	return out
}

// routesSecrets lists the discovery credential Secrets of routes, as namespace/name.
func routesSecrets(routes []*kroxyliciousv1alpha1.KafkaRoute) []string {
	var out []string
	for _, r := range routes {
		refs, _ := routeSecrets(r)
		out = append(out, refs...)
	}
	return out
}

// gatherConfigMaps reads the ConfigMaps the gateway's filters name, with their values (from
// configMapData, which reads each version once).
func (c *Controller) gatherConfigMaps(ctx context.Context, filters []*filterv1alpha1.KafkaFilter) ([]*corev1.ConfigMap, error) {
	var out []*corev1.ConfigMap
	seen := map[string]bool{}
	for _, f := range filters {
		refs, _ := filterConfigMaps(f)
		for _, ref := range refs {
			if seen[ref] {
				continue
			}
			seen[ref] = true
			ns, name, _ := cache.SplitMetaNamespaceKey(ref)
			slim, err := c.configMaps.ConfigMaps(ns).Get(name)
			if err != nil {
				continue // missing: the translator reports it
			}
			full, err := c.configMapData.get(ctx, slim)
			if err != nil {
				return nil, err
			}
			if full != nil {
				out = append(out, full)
			}
		}
	}
	c.configMapData.sweep(func(key string) bool { return controller.HasIndexed(c.filterIdx, indexFilterConfigMap, key) })
	return out, nil
}
