// Package bindingcontroller is the KafkaConnection controller: it turns each KafkaConnection into
// one Secret of type servicebinding.io/kafka, named like the connection and owned by it, and keeps
// the connection's status (binding name, chosen listener, bootstrap servers, Ready) up to date.
//
// The wiring lives here, the sync in sync.go, and everything that decides what the Secret holds in
// the pure package binding. Strimzi's Kafka and KafkaUser are read through dynamic informers of
// whichever version the API server serves (kafka.strimzi.io/v1 or v1beta2), and their CRDs may
// arrive after the operator started; see strimzi.go. Connections that name a KafkaRoute are bound
// through the gateway: route.go wires what they read, route_gather.go gathers it for one
// connection, and sync hands it to binding.BuildRoute, as it hands a Strimzi connection's gather to
// binding.Build.
package bindingcontroller

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	kafkav1beta2listers "github.com/kafkalink/kafkalink/generated/listers/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// QueueName names the controller's work queue, its metrics and log lines, and its indexes
// (controller.IndexName).
const QueueName = "kafkaconnection"

// Indexes of the KafkaConnection informer: they map a changed dependency back to the connections
// that read it. Named by controller.IndexName for their values.
var (
	// indexKafka: namespace/name of the Kafka a connection names. The cluster CA Secret of a Kafka
	// maps through it too, since its name derives from the Kafka's.
	indexKafka = controller.IndexName(QueueName, "kafka")
	// indexUser: namespace/name of the KafkaUser a connection names.
	indexUser = controller.IndexName(QueueName, "user")
	// indexGrantNamespace: the namespace of a cross-namespace KafkaUser, where a ReferenceGrant
	// must allow the reference.
	indexGrantNamespace = controller.IndexName(QueueName, "user-namespace")
	// indexUserSecret (on the KafkaUser informer): namespace/name of the user's credentials Secret.
	indexUserSecret = controller.IndexName(QueueName, "user-secret")
	// indexSecretName: namespace/name of a connection's binding Secret when spec.secretName
	// names another than the connection's own, so a labelled Secret controlled by nothing maps to
	// the connection it is for.
	indexSecretName = controller.IndexName(QueueName, "secret-name")
	// indexBindingController (on the binding Secret informer): the UID of the connection that
	// controls a binding Secret not named like it, so a renamed binding's old Secret is found
	// and removed.
	indexBindingController = controller.IndexName(QueueName, "binding-controller")
)

// The indexes with one value per object (secret-name, binding-controller, user-secret) leave out
// the objects whose value follows from their name, the usual case, and their readers look those
// up by key: an index entry costs a set of its own, about 270 bytes, and at 20,000 connections
// the three cost 16 MB of live heap for lookups a key answers (issue 30).

// ConditionReady is the KafkaConnection's only condition type.
const ConditionReady = "Ready"

// ReasonBound is the Ready reason when the binding Secret holds the current binding. The reasons
// for False are binding.Reason* and ReasonSecretNotOwned.
const ReasonBound = "Bound"

// ReasonSecretNotOwned: a Secret with the binding's name exists and is not controlled by this
// KafkaConnection; kafkalink never adopts it.
const ReasonSecretNotOwned = "SecretNotOwned"

// Event reasons besides the Ready reasons (which are used as Warning event reasons as they are).
const (
	// EventSecretRestored: the binding Secret was deleted by someone else and created again.
	EventSecretRestored = "SecretRestored"
	// EventSecretDeleted: the binding Secret was deleted because its credentials may no longer be
	// shared (RefNotPermitted).
	EventSecretDeleted = "SecretDeleted"
)

// reconciler holds what a sync reads and writes.
type reconciler struct {
	kube        kubernetes.Interface
	kafkalink   kafkalinkclient.Interface
	connections kafkav1beta2listers.KafkaConnectionLister
	connIndex   cache.Indexer
	sources     corelisters.SecretLister
	bindings    corelisters.SecretLister
	// bindingIndex is the binding Secret informer's indexer (indexBindingController).
	bindingIndex cache.Indexer
	// allowedMetadataPrefixes is the operator's --allowed-metadata-prefixes (nil: any key).
	allowedMetadataPrefixes []string
	denials                 readDenials
	// recheck enqueues a connection again after a while (the controller's EnqueueAfter).
	recheck     func(cache.ObjectName, time.Duration)
	grants      *controller.OptionalInformer // ReferenceGrants, shared; see grants.go
	strimzi     *strimziWatch
	route       *routeWatch                  // connections that name a KafkaRoute; see route.go
	gatewaysAPI *controller.OptionalInformer // Gateway API Gateways, shared; see gatewaytrust.go
	stretch     *stretchWatch                // node pools and ServiceExports; see stretch.go
	targets     *targets                     // copies in member clusters; see targets.go
	cache       *binding.StoreCache
	ownWrites   ownWrites // status patches the cache has not shown yet; see ownwrites.go
	recorder    record.EventRecorder
	clock       clock.PassiveClock
}

// New builds the KafkaConnection controller for the namespace of env.Informers ("" for all). It
// registers its event handlers on the shared KafkaConnection and ReferenceGrant informers, and
// creates and starts its own filtered Secret informers and, once Strimzi's CRDs are served, the
// Kafka and KafkaUser informers; all of these stop when ctx ends.
func New(ctx context.Context, env controller.Env) (*controller.Controller, error) {
	logger := klog.FromContext(ctx).WithValues("controller", QueueName, "namespace", env.Informers.Namespace)
	ctx = klog.NewContext(ctx, logger)

	kube, kl := env.Clients.Kube, env.Clients.KafkaLink
	ns := env.Informers.Namespace

	connInformer := env.Informers.KafkaLink.Kafka().V1beta2().KafkaConnections()
	if err := connInformer.Informer().AddIndexers(cache.Indexers{
		indexKafka:          indexConnectionKafka,
		indexUser:           indexConnectionUser,
		indexGrantNamespace: indexConnectionGrantNamespace,
		indexSecretName:     indexConnectionSecretName,
	}); err != nil {
		return nil, fmt.Errorf("indexing KafkaConnections: %w", err)
	}
	_ = connInformer.Informer().SetTransform(stripManagedFields)
	// Gateway API's ReferenceGrants, an optional API, through the informer every controller shares.
	grants := env.Informers.ReferenceGrants

	// Two Secret informers filtered by label, so the cache holds only what kafkalink reads:
	// Strimzi's Secrets (cluster CA and KafkaUser credentials carry strimzi.io/cluster) and the
	// binding Secrets, of which only a digest of the data is kept (see digestBindingSecret).
	// No namespace index: both are read by key, the binding Secrets also by their controller
	// (an index by namespace cost a set entry per Secret).
	sourceInformer := coreinformers.NewFilteredSecretInformer(kube, ns, 0, cache.Indexers{},
		labelSelector(strimzi.LabelCluster))
	_ = sourceInformer.SetTransform(pruneSourceSecret)
	bindingInformer := coreinformers.NewFilteredSecretInformer(kube, ns, 0, cache.Indexers{indexBindingController: indexSecretByController},
		labelSelector(wellknown.LabelBinding+"="+wellknown.LabelBindingValue))
	_ = bindingInformer.SetTransform(digestBindingSecret)

	r := &reconciler{
		kube:                    kube,
		kafkalink:               kl,
		connections:             connInformer.Lister(),
		connIndex:               connInformer.Informer().GetIndexer(),
		sources:                 corelisters.NewSecretLister(sourceInformer.GetIndexer()),
		bindings:                corelisters.NewSecretLister(bindingInformer.GetIndexer()),
		bindingIndex:            bindingInformer.GetIndexer(),
		allowedMetadataPrefixes: env.Options.AllowedMetadataPrefixes,
		grants:                  grants,
		// Twice the connections a big installation has: one truststore per Kafka and CA, one
		// keystore per mTLS user.
		cache:    binding.NewStoreCache(10000),
		recorder: env.Recorder,
		clock:    clock.RealClock{},
	}
	r.denials = readDenials{sources: controller.WatchReadDenial(sourceInformer), bindings: controller.WatchReadDenial(bindingInformer)}
	c := controller.New(QueueName, r.sync)
	r.recheck = c.EnqueueAfter
	r.targets = newTargets(ctx, r, c, env.Options.AllowedMemberServers)
	if err := r.watchOptional(ctx, env, c); err != nil {
		return nil, err
	}
	for _, reg := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{connInformer.Informer(), c.Handler()},
		{sourceInformer, controller.MapHandler(r.sourceSecretToConnections, c)},
		{bindingInformer, controller.MapHandler(r.bindingSecretToConnection, c)},
	} {
		if _, err := reg.informer.AddEventHandler(reg.handler); err != nil {
			return nil, err
		}
	}
	c.WaitFor(connInformer.Informer().HasSynced,
		syncedOrDenied(sourceInformer.HasSynced, r.denials.sources.Err),
		syncedOrDenied(bindingInformer.HasSynced, r.denials.bindings.Err))
	route, routeSynced, err := newRouteWatch(env, r, c)
	if err != nil {
		return nil, err
	}
	r.route = route
	c.WaitFor(routeSynced...)

	go sourceInformer.RunWithContext(ctx)
	go bindingInformer.RunWithContext(ctx)
	return c, nil
}

// watchOptional watches the optional APIs a binding reads (Strimzi's, ReferenceGrants, Gateway
// API Gateways): each may arrive after the operator; once it is served, every connection is
// reconciled again.
func (r *reconciler) watchOptional(ctx context.Context, env controller.Env, c *controller.Controller) error {
	enqueueAll := func() {
		for _, obj := range r.connIndex.List() {
			c.EnqueueObject(obj)
		}
	}
	var err error
	r.strimzi, err = newStrimziWatch(env.Informers.Kafkas, env.Clients.Dynamic, env.Clients.Discovery, env.Informers.Namespace, enqueueAll, func(kind string) cache.ResourceEventHandler {
		if kind == strimzi.KindKafka {
			return controller.MapHandler(r.kafkaToConnections, c)
		}
		return controller.MapHandler(r.userToConnections, c)
	})
	if err != nil {
		return err
	}
	r.strimzi.start(ctx)
	if err := r.grants.AddEventHandler(controller.MapHandler(r.grantToConnections, c)); err != nil {
		return err
	}
	r.grants.OnServed(enqueueAll)
	r.gatewaysAPI = env.Informers.GatewayAPIGateways
	if err := watchGatewayAPI(r.gatewaysAPI, enqueueAll); err != nil {
		return err
	}
	if r.stretch, err = newStretchWatch(ctx, env, r, c, enqueueAll); err != nil {
		return err
	}
	c.WaitFor(r.grants.HasSynced, r.strimzi.HasSynced, r.gatewaysAPI.HasSynced)
	return nil
}

func labelSelector(selector string) internalinterfaces.TweakListOptionsFunc {
	return func(o *metav1.ListOptions) { o.LabelSelector = selector }
}

// stripManagedFields drops managedFields, and kubectl's copy of the last applied object, before
// objects are cached: kafkalink never reads them and they are often the largest part of the
// metadata. (The status update sends the cached object, but the API server takes only the
// status from it.)
func stripManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a[corev1.LastAppliedConfigAnnotation] != "" {
			a = maps.Clone(a)
			delete(a, corev1.LastAppliedConfigAnnotation)
			m.SetAnnotations(a)
		}
	}
	return obj, nil
}

// pruneSourceSecret keeps only the entries the binding reads from Strimzi's Secrets. The label
// selector also brings Strimzi's private Secrets (the CA keys, broker keys): their keys are
// dropped before caching, so the operator never holds a CA's private key, and mTLS users' PKCS12
// files (rebuilt from PEM anyway) take no memory.
//
// Of the metadata only the identity is kept: the binding reads a source Secret's name and data,
// and Strimzi's labels, annotations and owner reference cost about as much as a SCRAM user's
// entries.
func pruneSourceSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	out := &corev1.Secret{Type: s.Type, ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID,
		ResourceVersion: s.ResourceVersion, DeletionTimestamp: s.DeletionTimestamp}}
	for k, v := range s.Data {
		if sourceEntry(k) {
			if out.Data == nil {
				out.Data = make(map[string][]byte, len(s.Data))
			}
			out.Data[k] = v
		}
	}
	return out, nil
}

// sourceEntry reports whether binding.Build reads an entry of a cluster CA or user Secret.
func sourceEntry(key string) bool {
	switch key {
	case "ca.p12", "ca.password", "password", "user.key", "user.password":
		return true
	}
	return strings.HasSuffix(key, ".crt")
}

// kafkaKey is the namespace/name of the Kafka a connection names.
func kafkaKey(conn *kafkav1beta2.KafkaConnection) cache.ObjectName {
	ns := conn.Spec.Kafka.Namespace
	if ns == "" {
		ns = conn.Namespace
	}
	return cache.NewObjectName(ns, conn.Spec.Kafka.Name)
}

// userKey is the namespace/name of the KafkaUser a connection names, if any.
func userKey(conn *kafkav1beta2.KafkaConnection) (cache.ObjectName, bool) {
	if conn.Spec.User == nil || conn.Spec.User.Name == "" {
		return cache.ObjectName{}, false
	}
	ns := conn.Spec.User.Namespace
	if ns == "" {
		ns = conn.Namespace
	}
	return cache.NewObjectName(ns, conn.Spec.User.Name), true
}

func indexConnectionKafka(obj any) ([]string, error) {
	conn, ok := obj.(*kafkav1beta2.KafkaConnection)
	if !ok {
		return nil, nil
	}
	return []string{kafkaKey(conn).String()}, nil
}

func indexConnectionUser(obj any) ([]string, error) {
	conn, ok := obj.(*kafkav1beta2.KafkaConnection)
	if !ok {
		return nil, nil
	}
	if k, ok := userKey(conn); ok {
		return []string{k.String()}, nil
	}
	return nil, nil
}

func indexConnectionGrantNamespace(obj any) ([]string, error) {
	conn, ok := obj.(*kafkav1beta2.KafkaConnection)
	if !ok {
		return nil, nil
	}
	if k, ok := userKey(conn); ok && k.Namespace != conn.Namespace {
		return []string{k.Namespace}, nil
	}
	return nil, nil
}

// byIndex returns the keys of the connections under one index value.
func (r *reconciler) byIndex(index, value string) []cache.ObjectName {
	return controller.KeysByIndex(r.connIndex, index, value)
}

// Mappers (controller.MapFunc, named <source>ToConnections): each returns the connections an
// object's change concerns.

// kafkaToConnections maps a Strimzi Kafka to the connections that name it.
func (r *reconciler) kafkaToConnections(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	return r.byIndex(indexKafka, cache.NewObjectName(m.GetNamespace(), m.GetName()).String())
}

// userToConnections maps a Strimzi KafkaUser to the connections that name it.
func (r *reconciler) userToConnections(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	return r.byIndex(indexUser, cache.NewObjectName(m.GetNamespace(), m.GetName()).String())
}

// grantToConnections maps a ReferenceGrant to the connections whose KafkaUser is in its namespace.
func (r *reconciler) grantToConnections(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	return r.byIndex(indexGrantNamespace, m.GetNamespace())
}

// sourceSecretToConnections maps a Strimzi Secret to the connections that read it: as the cluster
// CA of a Kafka, and as the credentials of any KafkaUser whose status names it.
func (r *reconciler) sourceSecretToConnections(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	var keys []cache.ObjectName
	if cluster, ok := strings.CutSuffix(m.GetName(), strimzi.ClusterCACertSuffix); ok && cluster != "" {
		keys = append(keys, r.byIndex(indexKafka, cache.NewObjectName(m.GetNamespace(), cluster).String())...)
	}
	for _, user := range r.strimzi.usersForSecret(cache.NewObjectName(m.GetNamespace(), m.GetName())) {
		keys = append(keys, r.byIndex(indexUser, user.String())...)
	}
	return keys
}

// bindingSecretToConnection maps a binding Secret to the KafkaConnection controlling it, so a
// deleted or hand-edited Secret is restored.
func (r *reconciler) bindingSecretToConnection(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil && ref.Kind == kafkaConnectionKind && strings.HasPrefix(ref.APIVersion, kafkav1beta2.SchemeGroupVersion.Group+"/") {
		return []cache.ObjectName{cache.NewObjectName(m.GetNamespace(), ref.Name)}
	}
	// A labelled Secret controlled by nothing: the connections whose binding has its name
	// decide what it should be. The index holds those with spec.secretName; a connection of
	// the Secret's own name binds to it when it sets none.
	key := cache.NewObjectName(m.GetNamespace(), m.GetName())
	keys := r.byIndex(indexSecretName, key.String())
	if conn, err := r.connections.KafkaConnections(key.Namespace).Get(key.Name); err == nil && binding.SecretName(conn) == key.Name {
		keys = append(keys, key)
	}
	return keys
}

// indexConnectionSecretName indexes a connection by its binding Secret's name, when that is not
// its own (see bindingSecretToConnection).
func indexConnectionSecretName(obj any) ([]string, error) {
	conn, ok := obj.(*kafkav1beta2.KafkaConnection)
	if !ok {
		return nil, nil
	}
	if name := binding.SecretName(conn); name != conn.Name {
		return []string{cache.NewObjectName(conn.Namespace, name).String()}, nil
	}
	return nil, nil
}

// indexSecretByController indexes a binding Secret by its controlling connection's UID, when the
// Secret is not named like that connection (see ownBindings).
func indexSecretByController(obj any) ([]string, error) {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil && ref.Kind == kafkaConnectionKind && ref.Name != m.GetName() {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

const kafkaConnectionKind = "KafkaConnection"

// digestBindingSecret replaces a binding Secret's data with its digest before it is cached: the
// controller only needs to know whether the data equals what it wants, and 5,000 bindings with
// PKCS12 stores would otherwise hold tens of megabytes.
func digestBindingSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	s.ManagedFields = nil
	if _, done := s.Annotations[wellknown.AnnotationCachedDataSHA256]; done && s.Data == nil {
		// Already digested: transforms must be idempotent.
		return s, nil
	}
	ann := make(map[string]string, len(s.Annotations)+1)
	for k, v := range s.Annotations {
		ann[k] = v
	}
	ann[wellknown.AnnotationCachedDataSHA256] = dataDigest(s.Data)
	s.Annotations = ann
	s.Data = nil
	s.StringData = nil
	return s, nil
}
