// Package gatewaycontroller runs the gateway model: one work-queue key per KafkaGateway. Every
// change to an object a gateway uses (KafkaRoute, KafkaGatewayParameters, KafkaBackendTLSPolicy,
// KafkaFilter, Secret, Service, ReferenceGrant, and the objects it generated) enqueues that
// gateway; sync gathers a snapshot from the informer caches, translates it with package gateway,
// applies the result with server-side apply and prunes what is no longer desired.
//
// Files:
//   - controller.go: New (informers, indexes, event handlers), the optional APIs it watches when
//     they appear, and the mappers from each watched object to the gateways it concerns.
//   - sync.go: sync (gather → gateway.Translate → apply → status), gather and its Secrets and
//     Services, apply (server-side apply, pruning, objects the gateway does not control).
//   - members.go: the proxies of a stretch gateway in member clusters: what each member gets and
//     how it is written, on the member ledger of package member.
//   - cache.go: slimmed Secrets in the informer, and their data read on demand (secretData).
//   - drift.go: what differs between a live object and the desired one, for the drift event.
//   - waiters.go: gateways waiting for a name another object holds, woken when it frees.
package gatewaycontroller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	filterv1alpha1 "github.com/kafkalink/kafkalink/apis/filter/v1alpha1"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	filterlisters "github.com/kafkalink/kafkalink/generated/listers/filter/v1alpha1"
	kroxyliciouslisters "github.com/kafkalink/kafkalink/generated/listers/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gateway"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/secretcache"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// QueueName names the controller's work queue, its metrics and log lines, and its indexes. The
// Gateway API controller name kafkalink writes into status is gateway.ControllerName.
const QueueName = "gateway"

// Index names on the shared informers (controller.IndexName: the queue name keeps them apart from
// other controllers' indexes on the same informers). Each is named for its values.
var (
	// On KafkaGateways: namespace/name of each Secret the gateway names.
	indexGatewaySecret = controller.IndexName(QueueName, "secret")
	// On KafkaGateways: namespace/name of its KafkaGatewayParameters.
	indexGatewayParams = controller.IndexName(QueueName, "parameters")
	// On KafkaRoutes: names of the KafkaGateways (in the route's namespace) it attaches to.
	indexRouteGateway = controller.IndexName(QueueName, "gateway")
	// On KafkaRoutes: namespace/name of its backend Services, and kafkaKey of its Kafkas.
	indexRouteBackend = controller.IndexName(QueueName, "backend")
	// On KafkaRoutes: namespace/name of its KafkaFilters.
	indexRouteFilter = controller.IndexName(QueueName, "filter")
	// On KafkaRoutes: namespace/name of its rules' discovery credential Secrets.
	indexRouteSecret = controller.IndexName(QueueName, "routesecret")
	// On KafkaFilters: namespace/name of the Secrets its placeholders name.
	indexFilterSecret = controller.IndexName(QueueName, "secret")
	// indexFilterConfigMap (on KafkaFilters): namespace/name of each ConfigMap a filter's
	// ${configmap:…} references name.
	indexFilterConfigMap = controller.IndexName(QueueName, "configmap")
	// On KafkaBackendTLSPolicies: namespace/name of its CA Secrets.
	indexPolicySecret = controller.IndexName(QueueName, "secret")
)

// Resources of the generated kinds.
var (
	gvrDeployment = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrConfigMap  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrService    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	gvrSecret     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrPDB        = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
	gvrRoute      = schema.GroupVersionResource{Group: "route.openshift.io", Version: "v1", Resource: "routes"}
	gvrTLSRoute   = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "tlsroutes"}
	kindToGVR     = map[string]schema.GroupVersionResource{gateway.KindDeployment: gvrDeployment, gateway.KindConfigMap: gvrConfigMap, gateway.KindService: gvrService, gateway.KindSecret: gvrSecret, gateway.KindRoute: gvrRoute, gateway.KindTLSRoute: gvrTLSRoute, gateway.KindPodDisruptionBudget: gvrPDB}
)

// Controller reconciles the KafkaGateways of one watched namespace (or all).
type Controller struct {
	ctrl    *controller.Controller
	env     controller.Env
	clock   clock.Clock
	dynamic dynamic.Interface

	gateways   kroxyliciouslisters.KafkaGatewayLister
	gatewayIdx cache.Indexer
	params     kroxyliciouslisters.KafkaGatewayParametersLister
	routes     kroxyliciouslisters.KafkaRouteLister
	routeIdx   cache.Indexer
	policies   kroxyliciouslisters.KafkaBackendTLSPolicyLister
	policyIdx  cache.Indexer
	filters    filterlisters.KafkaFilterLister
	filterIdx  cache.Indexer
	services   corelisters.ServiceLister
	secrets    corelisters.SecretLister
	configMaps corelisters.ConfigMapLister
	// configMapData holds the values of the ConfigMaps filters name (the cache keeps none of
	// ConfigMaps kafkalink did not generate).
	configMapData *configMapData
	deployments   appslisters.DeploymentLister
	pdbs          policylisters.PodDisruptionBudgetLister

	osRoutes  *controller.OptionalInformer
	tlsRoutes *controller.OptionalInformer
	// parents are Gateway API Gateways (shared, typed: env.Informers.GatewayAPIGateways), read
	// for the TLS mode of the listeners the parameters' parentRefs name.
	parents   *controller.OptionalInformer
	grants    *controller.OptionalInformer
	kafkas    *controller.OptionalInformer // Strimzi Kafkas, pruned (strimzi.PruneKafka)
	nodePools *controller.OptionalInformer // Strimzi KafkaNodePools, pruned

	// waiters: gateways waiting for names held by objects they do not control.
	waiters *nameWaiters
	// secretData: values of the Secrets gateways read; the Secret informer keeps none (cache.go).
	secretData *secretData
	// members: the gateways' proxies in member clusters (members.go).
	members *memberProxies
}

// New builds the gateway controller for the namespace of env's informers and registers its
// informers and event handlers. Register it in cmd/kafkalink-operator/controllers.go.
func New(ctx context.Context, env controller.Env) (*controller.Controller, error) {
	c := &Controller{env: env, clock: clock.RealClock{}, dynamic: env.Clients.Dynamic, waiters: newNameWaiters()}
	c.ctrl = controller.New(QueueName, c.sync)
	c.members = newMemberProxies(ctx, env.Clients.Kube, c.ctrl.Enqueue, env.Options.AllowedMemberServers)
	kl := env.Informers.KafkaLink.Kroxylicious().V1alpha1()
	kube := env.Informers.Kube

	gwInf := kl.KafkaGateways()
	if err := gwInf.Informer().AddIndexers(cache.Indexers{indexGatewaySecret: gatewaySecrets, indexGatewayParams: gatewayParams}); err != nil {
		return nil, err
	}
	routeInf := kl.KafkaRoutes()
	if err := routeInf.Informer().AddIndexers(cache.Indexers{indexRouteGateway: routeGateways, indexRouteBackend: routeBackends, indexRouteFilter: routeFilters, indexRouteSecret: routeSecrets}); err != nil {
		return nil, err
	}
	policyInf := kl.KafkaBackendTLSPolicies()
	if err := policyInf.Informer().AddIndexers(cache.Indexers{indexPolicySecret: policySecrets}); err != nil {
		return nil, err
	}
	filterInf := env.Informers.KafkaLink.Filter().V1alpha1().KafkaFilters()
	if err := filterInf.Informer().AddIndexers(cache.Indexers{indexFilterSecret: filterSecrets, indexFilterConfigMap: filterConfigMaps}); err != nil {
		return nil, err
	}
	// The shared typed informer, which the binding controller reads too: one per process.
	paramsInf := kl.KafkaGatewayParameters()
	svcInf, secretInf := kube.Core().V1().Services(), secretcache.Informer(env)
	cmInf, depInf := kube.Core().V1().ConfigMaps(), kube.Apps().V1().Deployments()
	pdbInf := kube.Policy().V1().PodDisruptionBudgets()
	for _, inf := range []cache.SharedIndexInformer{svcInf.Informer(), cmInf.Informer(), depInf.Informer(), pdbInf.Informer()} {
		if err := inf.SetTransform(slimObject); err != nil {
			return nil, fmt.Errorf("setting the cache transform: %w", err)
		}
	}

	c.gateways, c.gatewayIdx = gwInf.Lister(), gwInf.Informer().GetIndexer()
	c.routes, c.routeIdx = routeInf.Lister(), routeInf.Informer().GetIndexer()
	c.policies, c.policyIdx = policyInf.Lister(), policyInf.Informer().GetIndexer()
	c.filters, c.filterIdx = filterInf.Lister(), filterInf.Informer().GetIndexer()
	c.params = paramsInf.Lister()
	c.services, c.secrets = svcInf.Lister(), corelisters.NewSecretLister(secretInf.GetIndexer())
	c.secretData = newSecretData(env.Clients.Kube)
	if _, err := secretInf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.secretData.onDelete}); err != nil {
		return nil, err
	}
	c.configMaps, c.deployments, c.pdbs = cmInf.Lister(), depInf.Lister(), pdbInf.Lister()
	c.configMapData = newConfigMapData(env.Clients.Kube)

	handlers := []struct {
		informer cache.SharedIndexInformer
		mapper   controller.MapFunc
	}{
		{gwInf.Informer(), controller.KeyOf},
		{routeInf.Informer(), c.routeToGateways},
		{paramsInf.Informer(), c.parametersToGateways},
		{policyInf.Informer(), c.policyToGateways},
		{filterInf.Informer(), c.filterToGateways},
		{secretInf, c.secretToGateways},
		{svcInf.Informer(), c.serviceToGateways},
		{cmInf.Informer(), c.generatedToGateways(gateway.KindConfigMap)},
		{cmInf.Informer(), c.filterConfigMapToGateways},
		{depInf.Informer(), c.generatedToGateways(gateway.KindDeployment)},
		{pdbInf.Informer(), c.generatedToGateways(gateway.KindPodDisruptionBudget)},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(controller.MapHandler(h.mapper, c.ctrl)); err != nil {
			return nil, err
		}
		c.ctrl.WaitFor(h.informer.HasSynced)
	}

	if err := c.watchOptional(ctx, env); err != nil {
		return nil, err
	}
	return c.ctrl, nil
}

// watchOptional watches the optional APIs (OpenShift Route, TLSRoute, Gateway API Gateway,
// ReferenceGrant, Strimzi's Kafka and KafkaNodePool). Each may
// be missing now and installed later (see package controller): it is watched once discovery
// shows it, and then every gateway is reconciled again.
func (c *Controller) watchOptional(ctx context.Context, env controller.Env) error {
	ns := env.Informers.Namespace
	newOptional := func(what string, gvrs ...schema.GroupVersionResource) *controller.OptionalInformer {
		return controller.NewOptionalInformer(controller.OptionalConfig{What: what, GVRs: gvrs, Namespace: ns,
			Dynamic: env.Clients.Dynamic, Discovery: env.Clients.Discovery})
	}
	c.osRoutes = newOptional("OpenShift Route", gvrRoute)
	c.tlsRoutes = newOptional("TLSRoute", gvrTLSRoute)
	// Shared with the other controllers; the operator starts them.
	c.grants, c.kafkas, c.nodePools = env.Informers.ReferenceGrants, env.Informers.Kafkas, env.Informers.KafkaNodePools
	c.parents = env.Informers.GatewayAPIGateways
	for _, o := range []struct {
		informer *controller.OptionalInformer
		mapper   controller.MapFunc
	}{
		{c.osRoutes, c.generatedToGateways(gateway.KindRoute)},
		{c.tlsRoutes, c.generatedToGateways(gateway.KindTLSRoute)},
		{c.parents, c.parentToGateways},
		{c.grants, c.grantToGateways},
		{c.kafkas, c.kafkaToGateways},
		{c.nodePools, c.nodePoolToGateways},
	} {
		if err := o.informer.AddEventHandler(controller.MapHandler(o.mapper, c.ctrl)); err != nil {
			return err
		}
		o.informer.OnServed(func() {
			for _, key := range c.allGateways() {
				c.ctrl.Enqueue(key)
			}
		})
		c.ctrl.WaitFor(o.informer.HasSynced)
	}
	c.osRoutes.Start(ctx)
	c.tlsRoutes.Start(ctx)
	return nil
}

// parentToGateways maps a Gateway API Gateway to every gateway: any gateway's parameters may
// name it as a TLSRoute parent, and gateways are few.
func (c *Controller) parentToGateways(any) []cache.ObjectName { return c.allGateways() }

// Mappers (controller.MapFunc, named <source>ToGateways): each returns the gateways an object's
// change concerns. A gateway maps to itself with controller.KeyOf.

// grantToGateways maps a ReferenceGrant to every gateway: a grant may allow or withdraw a
// reference from any namespace, and gateways are few.
func (c *Controller) grantToGateways(any) []cache.ObjectName { return c.allGateways() }

// allGateways lists the keys of every cached gateway.
func (c *Controller) allGateways() []cache.ObjectName {
	list, err := c.gateways.List(labels.Everything())
	if err != nil {
		return nil
	}
	keys := make([]cache.ObjectName, 0, len(list))
	for _, g := range list {
		keys = append(keys, cache.ObjectName{Namespace: g.Namespace, Name: g.Name})
	}
	return keys
}

// ownerGateway maps a generated object to the KafkaGateway that controls it.
func ownerGateway(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	ref := secretcache.ControllingGateway(m)
	if ref == nil {
		return nil
	}
	return []cache.ObjectName{{Namespace: m.GetNamespace(), Name: ref.Name}}
}

// routeToGateways maps a route to the gateways it attaches to or whose status it carries.
func (c *Controller) routeToGateways(obj any) []cache.ObjectName {
	r, ok := controller.Unwrap(obj).(*kroxyliciousv1alpha1.KafkaRoute)
	if !ok {
		return nil
	}
	names, _ := routeGateways(r)
	keys := make([]cache.ObjectName, 0, len(names))
	for _, n := range names {
		keys = append(keys, cache.ObjectName{Namespace: r.Namespace, Name: n})
	}
	return keys
}

// parametersToGateways maps a KafkaGatewayParameters to the gateways that name it.
func (c *Controller) parametersToGateways(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	return controller.KeysByIndex(c.gatewayIdx, indexGatewayParams, m.GetNamespace()+"/"+m.GetName())
}

// routesByIndex maps routes found through an index to their gateways.
func (c *Controller) routesByIndex(index, value string) []cache.ObjectName {
	var keys []cache.ObjectName
	for _, r := range controller.ByIndex[*kroxyliciousv1alpha1.KafkaRoute](c.routeIdx, index, value) {
		keys = append(keys, c.routeToGateways(r)...)
	}
	return keys
}

// policyToGateways maps a KafkaBackendTLSPolicy to the gateways of the routes whose backends it
// targets, and to the gateways its status lists.
func (c *Controller) policyToGateways(obj any) []cache.ObjectName {
	p, ok := controller.Unwrap(obj).(*kroxyliciousv1alpha1.KafkaBackendTLSPolicy)
	if !ok {
		return nil
	}
	var keys []cache.ObjectName
	for _, ref := range p.Spec.TargetRefs {
		ns := gatewaymodel.RefNamespace(ref.Namespace, p.Namespace)
		keys = append(keys, c.routesByIndex(indexRouteBackend, ns+"/"+string(ref.Name))...)
		// A policy on a Strimzi bootstrap Service (<cluster>-kafka-...-bootstrap) concerns the
		// routes of that Kafka.
		for _, k := range c.kafkasOf(ns) {
			if strings.HasPrefix(string(ref.Name), k.Name+"-kafka-") {
				keys = append(keys, c.routesByIndex(indexRouteBackend, kafkaKey(ns, k.Name))...)
			}
		}
	}
	// Gateways whose status lists the policy, so a policy that stops applying is removed from it.
	for _, a := range p.Status.Ancestors {
		if a.ControllerName == gateway.ControllerName && a.AncestorRef.Namespace != nil {
			keys = append(keys, cache.ObjectName{Namespace: string(*a.AncestorRef.Namespace), Name: string(a.AncestorRef.Name)})
		}
	}
	return keys
}

// filterToGateways maps a KafkaFilter to the gateways of the routes that use it.
func (c *Controller) filterToGateways(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	return c.routesByIndex(indexRouteFilter, m.GetNamespace()+"/"+m.GetName())
}

// secretToGateways maps a Secret to the gateways that name it, generated it or wait for its name,
// and to the gateways of the routes whose filters or backend policies name it.
func (c *Controller) secretToGateways(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	key := m.GetNamespace() + "/" + m.GetName()
	keys := controller.KeysByIndex(c.gatewayIdx, indexGatewaySecret, key)
	keys = append(keys, c.ownerOrWaiting(gateway.KindSecret, obj)...)
	for _, f := range controller.KeysByIndex(c.filterIdx, indexFilterSecret, key) {
		keys = append(keys, c.routesByIndex(indexRouteFilter, f.String())...)
	}
	for _, p := range controller.ByIndex[*kroxyliciousv1alpha1.KafkaBackendTLSPolicy](c.policyIdx, indexPolicySecret, key) {
		keys = append(keys, c.policyToGateways(p)...)
	}
	keys = append(keys, c.routesByIndex(indexRouteSecret, key)...)
	if cluster, ok := strings.CutSuffix(m.GetName(), strimzi.ClusterCACertSuffix); ok {
		keys = append(keys, c.routesByIndex(indexRouteBackend, kafkaKey(m.GetNamespace(), cluster))...)
	}
	return keys
}

// serviceToGateways maps a Service to the gateway that generated it or waits for its name, and to
// the gateways of the routes that use it as a backend.
func (c *Controller) serviceToGateways(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	keys := c.ownerOrWaiting(gateway.KindService, obj)
	return append(keys, c.routesByIndex(indexRouteBackend, m.GetNamespace()+"/"+m.GetName())...)
}

// kafkaToGateways maps a Strimzi Kafka to the gateways of the routes that use it.
func (c *Controller) kafkaToGateways(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	return append(c.routesByIndex(indexRouteBackend, kafkaKey(m.GetNamespace(), m.GetName())), c.strimziServiceRoutes(m.GetNamespace(), m.GetName())...)
}

// strimziServiceRoutes maps a Strimzi cluster to the gateways of the routes whose backend is a
// Service of that cluster (gateway.StrimziClusterOf): their diagnostics read its broker ids and
// listeners.
func (c *Controller) strimziServiceRoutes(namespace, cluster string) []cache.ObjectName {
	services, err := c.services.Services(namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []cache.ObjectName
	for _, svc := range services {
		if k, ok := gateway.StrimziClusterOf(svc); ok && k.Name == cluster {
			out = append(out, c.routesByIndex(indexRouteBackend, svc.Namespace+"/"+svc.Name)...)
		}
	}
	return out
}

// nodePoolToGateways maps a KafkaNodePool to the gateways of the routes that use its Kafka: a
// scale-out changes its status.nodeIds.
func (c *Controller) nodePoolToGateways(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	cluster := m.GetLabels()[strimzi.LabelCluster]
	if cluster == "" {
		return nil
	}
	return append(c.routesByIndex(indexRouteBackend, kafkaKey(m.GetNamespace(), cluster)), c.strimziServiceRoutes(m.GetNamespace(), cluster)...)
}

// Index functions.

func gatewaySecrets(obj any) ([]string, error) {
	g, ok := obj.(*kroxyliciousv1alpha1.KafkaGateway)
	if !ok {
		return nil, nil
	}
	var out []string
	add := func(ref kroxyliciousv1alpha1.SecretObjectReference) {
		ns := gatewaymodel.RefNamespace(ref.Namespace, g.Namespace)
		out = append(out, ns+"/"+string(ref.Name))
	}
	for _, l := range g.Spec.Listeners {
		if l.TLS == nil {
			continue
		}
		for _, r := range l.TLS.CertificateRefs {
			add(r)
		}
		if l.TLS.FrontendValidation != nil {
			for _, r := range l.TLS.FrontendValidation.CACertificateRefs {
				add(r)
			}
		}
	}
	if g.Spec.BackendTLS != nil && g.Spec.BackendTLS.ClientCertificateRef != nil {
		add(*g.Spec.BackendTLS.ClientCertificateRef)
	}
	return out, nil
}

func gatewayParams(obj any) ([]string, error) {
	g, ok := obj.(*kroxyliciousv1alpha1.KafkaGateway)
	if !ok || gatewaymodel.ParametersName(g) == "" {
		return nil, nil
	}
	return []string{g.Namespace + "/" + gatewaymodel.ParametersName(g)}, nil
}

// routeGateways lists the gateways a route attaches to, and also those whose status it
// carries, so that detaching a route clears its old gateway's entry.
func routeGateways(obj any) ([]string, error) {
	r, ok := obj.(*kroxyliciousv1alpha1.KafkaRoute)
	if !ok {
		return nil, nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, pr := range r.Spec.ParentRefs {
		if gatewaymodel.IsGatewayParent(pr) {
			add(string(pr.Name))
		}
	}
	for _, p := range r.Status.Parents {
		if p.ControllerName == gateway.ControllerName {
			add(string(p.ParentRef.Name))
		}
	}
	return out, nil
}

func routeBackends(obj any) ([]string, error) {
	r, ok := obj.(*kroxyliciousv1alpha1.KafkaRoute)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, pr := range r.Spec.ParentRefs {
		for _, rule := range pr.Rules {
			for _, b := range rule.BackendRefs {
				ns := gatewaymodel.RefNamespace(b.Namespace, r.Namespace)
				if gateway.IsKafkaRef(b) {
					out = append(out, kafkaKey(ns, string(b.Name)))
				} else {
					out = append(out, ns+"/"+string(b.Name))
				}
			}
		}
	}
	return out, nil
}

func routeSecrets(obj any) ([]string, error) {
	r, ok := obj.(*kroxyliciousv1alpha1.KafkaRoute)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, pr := range r.Spec.ParentRefs {
		for _, rule := range pr.Rules {
			if dc := rule.DiscoveryCredential; dc != nil {
				out = append(out, gatewaymodel.RefNamespace(dc.SecretRef.Namespace, r.Namespace)+"/"+string(dc.SecretRef.Name))
			}
		}
	}
	return out, nil
}

// kafkaKey is the backend index value of a Strimzi Kafka, apart from Services of the same name:
// kafkaKeyPrefix and the Kafka's namespace/name.
func kafkaKey(namespace, name string) string { return kafkaKeyPrefix + namespace + "/" + name }

const kafkaKeyPrefix = "Kafka:"

func routeFilters(obj any) ([]string, error) {
	r, ok := obj.(*kroxyliciousv1alpha1.KafkaRoute)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, pr := range r.Spec.ParentRefs {
		for _, rule := range pr.Rules {
			for _, f := range rule.Filters {
				out = append(out, r.Namespace+"/"+string(f.Name))
			}
		}
	}
	return out, nil
}

func filterSecrets(obj any) ([]string, error) { return filterRefs(obj, gateway.KindSecret) }

func filterConfigMaps(obj any) ([]string, error) { return filterRefs(obj, gateway.KindConfigMap) }

// filterRefs lists, as namespace/name, the Secrets or ConfigMaps (kind) a KafkaFilter names.
func filterRefs(obj any, kind string) ([]string, error) {
	f, ok := obj.(*filterv1alpha1.KafkaFilter)
	if !ok {
		return nil, nil
	}
	_, refs, err := gateway.SubstituteFilterSecrets(f.Spec.RawConfig())
	if err != nil {
		return nil, nil // a malformed filter is reported in route status, not by the index
	}
	var out []string
	for _, r := range refs {
		if r.Kind == kind && !slices.Contains(out, f.GetNamespace()+"/"+r.Secret) {
			out = append(out, f.GetNamespace()+"/"+r.Secret)
		}
	}
	return out, nil
}

// filterConfigMapToGateways maps a ConfigMap to the gateways whose routes use a filter that
// names it, so a changed value restarts their proxies as a changed Secret does.
func (c *Controller) filterConfigMapToGateways(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	var keys []cache.ObjectName
	for _, f := range controller.KeysByIndex(c.filterIdx, indexFilterConfigMap, m.GetNamespace()+"/"+m.GetName()) {
		keys = append(keys, c.routesByIndex(indexRouteFilter, f.String())...)
	}
	return keys
}

func policySecrets(obj any) ([]string, error) {
	p, ok := obj.(*kroxyliciousv1alpha1.KafkaBackendTLSPolicy)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, ref := range p.Spec.Validation.CACertificateRefs {
		ns := gatewaymodel.RefNamespace(ref.Namespace, p.Namespace)
		out = append(out, ns+"/"+string(ref.Name))
	}
	return out, nil
}
