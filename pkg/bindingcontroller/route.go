package bindingcontroller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	kroxyliciousv1alpha1listers "github.com/kafkalink/kafkalink/generated/listers/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/operator"
	"github.com/kafkalink/kafkalink/pkg/strimzi"

	coreinformers "k8s.io/client-go/informers/core/v1"
)

// Indexes for connections that name a KafkaRoute. The connection indexes live on the
// KafkaConnection informer; the others on the shared KafkaRoute and KafkaGateway informers, under
// names of their own so they never clash with the gateway controller's.
const (
	// indexRoute (connections): namespace/name of the KafkaRoute a connection names.
	indexRoute = "kafkalink.io/route"
	// indexRouteCASecret (connections): namespace/name of spec.kafka.caSecret.
	indexRouteCASecret = "kafkalink.io/route-ca-secret"
	// indexRouteGrantNamespace (connections): the namespace of a cross-namespace KafkaRoute, where
	// a ReferenceGrant must allow the reference.
	indexRouteGrantNamespace = "kafkalink.io/route-grant-namespace"
	// indexRouteGateway (routes): namespace/name of each KafkaGateway a route's parentRefs name.
	indexRouteGateway = "binding:route-gateway"
	// indexGatewayCertificate (gateways): namespace/name of each listener certificate Secret.
	indexGatewayCertificate = "binding:gateway-certificate"
	// indexGatewayParameters (gateways): namespace/name of the KafkaGatewayParameters it names.
	indexGatewayParameters = "binding:gateway-parameters"
)

// kindKafkaRoute and groupKroxylicious are what a ReferenceGrant names to let connections of
// another namespace bind a KafkaRoute.
const (
	kindKafkaRoute    = kafkav1beta2.KindKafkaRoute
	groupKroxylicious = gatewaymodel.Group
)

// routeWatch is what the controller reads for connections that name a KafkaRoute: routes,
// gateways and their parameters from the shared informers, and the CA material of Secrets from an
// informer of its own that keeps only ca.crt and tls.crt (no private key is ever cached).
type routeWatch struct {
	routes        kroxyliciousv1alpha1listers.KafkaRouteLister
	routeIdx      cache.Indexer
	gateways      kroxyliciousv1alpha1listers.KafkaGatewayLister
	gatewayIdx    cache.Indexer
	params        kroxyliciousv1alpha1listers.KafkaGatewayParametersLister
	secrets       corelisters.SecretLister
	clusterDomain string
}

// newRouteWatch adds the route indexes and handlers and starts the certificate Secret informer
// (which stops with ctx). The returned syncs are what the controller must wait for.
func newRouteWatch(ctx context.Context, env operator.Env, r *reconciler, c *controller.Controller) (*routeWatch, []cache.InformerSynced, error) {
	kl := env.Informers.KafkaLink.Kroxylicious().V1alpha1()
	routeInf, gwInf, paramsInf := kl.KafkaRoutes(), kl.KafkaGateways(), kl.KafkaGatewayParameters()
	connInf := env.Informers.KafkaLink.Kafka().V1beta2().KafkaConnections().Informer()
	if err := connInf.AddIndexers(cache.Indexers{
		indexRoute:               indexConnectionRoute,
		indexRouteCASecret:       indexConnectionCASecret,
		indexRouteGrantNamespace: indexConnectionRouteGrantNamespace,
	}); err != nil {
		return nil, nil, fmt.Errorf("indexing KafkaConnections by route: %w", err)
	}
	if err := routeInf.Informer().AddIndexers(cache.Indexers{indexRouteGateway: indexRouteByGateway}); err != nil {
		return nil, nil, fmt.Errorf("indexing KafkaRoutes: %w", err)
	}
	if err := gwInf.Informer().AddIndexers(cache.Indexers{
		indexGatewayCertificate: indexGatewayByCertificate,
		indexGatewayParameters:  indexGatewayByParameters,
	}); err != nil {
		return nil, nil, fmt.Errorf("indexing KafkaGateways: %w", err)
	}
	// Certificates are not labelled by anything kafkalink controls (cert-manager writes them), so
	// this informer sees every Secret, and keeps of each only the public certificates.
	secretInf := coreinformers.NewFilteredSecretInformer(env.Clients.Kube, env.Informers.Namespace, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil)
	_ = secretInf.SetTransform(pruneCertificateSecret)

	w := &routeWatch{
		routes:        routeInf.Lister(),
		routeIdx:      routeInf.Informer().GetIndexer(),
		gateways:      gwInf.Lister(),
		gatewayIdx:    gwInf.Informer().GetIndexer(),
		params:        paramsInf.Lister(),
		secrets:       corelisters.NewSecretLister(secretInf.GetIndexer()),
		clusterDomain: env.Options.ClusterDomain,
	}
	for _, reg := range []struct {
		informer cache.SharedIndexInformer
		mapper   controller.MapFunc
	}{
		{routeInf.Informer(), func(obj any) []cache.ObjectName { return r.connectionsForRoutes(objectKeys(obj)) }},
		{gwInf.Informer(), r.connectionsForGateway},
		{paramsInf.Informer(), r.connectionsForParameters},
		{secretInf, r.connectionsForCertificateSecret},
		{nil, r.connectionsForRouteGrant}, // on the shared optional ReferenceGrant informer
	} {
		var err error
		if reg.informer == nil {
			err = r.grants.AddEventHandler(controller.MapHandler(reg.mapper, c))
		} else {
			_, err = reg.informer.AddEventHandler(controller.MapHandler(reg.mapper, c))
		}
		if err != nil {
			return nil, nil, err
		}
	}
	go secretInf.RunWithContext(ctx)
	return w, []cache.InformerSynced{routeInf.Informer().HasSynced, gwInf.Informer().HasSynced,
		paramsInf.Informer().HasSynced, secretInf.HasSynced}, nil
}

// pruneCertificateSecret keeps only ca.crt and tls.crt (public certificates) and the metadata the
// listers need; private keys and everything else are dropped before caching.
func pruneCertificateSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	out := &corev1.Secret{}
	out.Name, out.Namespace, out.UID, out.ResourceVersion = s.Name, s.Namespace, s.UID, s.ResourceVersion
	out.DeletionTimestamp = s.DeletionTimestamp
	for _, k := range []string{"ca.crt", corev1.TLSCertKey} {
		if v, ok := s.Data[k]; ok {
			if out.Data == nil {
				out.Data = map[string][]byte{}
			}
			out.Data[k] = v
		}
	}
	return out, nil
}

// routeKey is the namespace/name of the KafkaRoute a connection names, if it names one.
func routeKey(conn *kafkav1beta2.KafkaConnection) (cache.ObjectName, bool) {
	if conn.Spec.Kafka.Kind != kindKafkaRoute {
		return cache.ObjectName{}, false
	}
	return kafkaKey(conn), true
}

func indexConnectionRoute(obj any) ([]string, error) {
	conn, ok := obj.(*kafkav1beta2.KafkaConnection)
	if !ok {
		return nil, nil
	}
	if k, ok := routeKey(conn); ok {
		return []string{k.String()}, nil
	}
	return nil, nil
}

func indexConnectionCASecret(obj any) ([]string, error) {
	conn, ok := obj.(*kafkav1beta2.KafkaConnection)
	if !ok {
		return nil, nil
	}
	if k, ok := routeKey(conn); ok && conn.Spec.Kafka.CASecret != nil && conn.Spec.Kafka.CASecret.Name != "" {
		return []string{cache.NewObjectName(k.Namespace, conn.Spec.Kafka.CASecret.Name).String()}, nil
	}
	return nil, nil
}

func indexConnectionRouteGrantNamespace(obj any) ([]string, error) {
	conn, ok := obj.(*kafkav1beta2.KafkaConnection)
	if !ok {
		return nil, nil
	}
	if k, ok := routeKey(conn); ok && k.Namespace != conn.Namespace {
		return []string{k.Namespace}, nil
	}
	return nil, nil
}

func indexRouteByGateway(obj any) ([]string, error) {
	route, ok := obj.(*kroxyliciousv1alpha1.KafkaRoute)
	if !ok {
		return nil, nil
	}
	names := gatewaymodel.ParentGateways(route)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = cache.NewObjectName(route.Namespace, n).String()
	}
	return out, nil
}

func indexGatewayByCertificate(obj any) ([]string, error) {
	gw, ok := obj.(*kroxyliciousv1alpha1.KafkaGateway)
	if !ok {
		return nil, nil
	}
	return binding.CertificateSecrets(gw), nil
}

func indexGatewayByParameters(obj any) ([]string, error) {
	gw, ok := obj.(*kroxyliciousv1alpha1.KafkaGateway)
	if !ok {
		return nil, nil
	}
	if name := gatewaymodel.ParametersName(gw); name != "" {
		return []string{cache.NewObjectName(gw.Namespace, name).String()}, nil
	}
	return nil, nil
}

// objectKeys is the key of an informer object or tombstone, as a one-element list.
func objectKeys(obj any) []cache.ObjectName { return controller.KeyOf(obj) }

// keysByIndex lists the namespace/name keys of the objects of an indexer under one value.
func keysByIndex(idx cache.Indexer, index, value string) []cache.ObjectName {
	return controller.KeysByIndex(idx, index, value)
}

func (r *reconciler) connectionsForRoutes(routes []cache.ObjectName) []cache.ObjectName {
	var keys []cache.ObjectName
	for _, rk := range routes {
		keys = append(keys, r.byIndex(indexRoute, rk.String())...)
	}
	return keys
}

func (r *reconciler) connectionsForGateways(gateways []cache.ObjectName) []cache.ObjectName {
	var keys []cache.ObjectName
	for _, gk := range gateways {
		keys = append(keys, r.connectionsForRoutes(keysByIndex(r.route.routeIdx, indexRouteGateway, gk.String()))...)
	}
	return keys
}

func (r *reconciler) connectionsForGateway(obj any) []cache.ObjectName {
	return r.connectionsForGateways(objectKeys(obj))
}

func (r *reconciler) connectionsForParameters(obj any) []cache.ObjectName {
	var keys []cache.ObjectName
	for _, pk := range objectKeys(obj) {
		keys = append(keys, r.connectionsForGateways(keysByIndex(r.route.gatewayIdx, indexGatewayParameters, pk.String()))...)
	}
	return keys
}

// connectionsForCertificateSecret maps a Secret to the route connections that read it: as their
// spec.kafka.caSecret, or as a listener certificate of a gateway their route attaches to.
func (r *reconciler) connectionsForCertificateSecret(obj any) []cache.ObjectName {
	var keys []cache.ObjectName
	for _, sk := range objectKeys(obj) {
		keys = append(keys, r.byIndex(indexRouteCASecret, sk.String())...)
		keys = append(keys, r.connectionsForGateways(keysByIndex(r.route.gatewayIdx, indexGatewayCertificate, sk.String()))...)
	}
	return keys
}

func (r *reconciler) connectionsForRouteGrant(obj any) []cache.ObjectName {
	m, ok := controller.MetaOf(obj)
	if !ok {
		return nil
	}
	keys := r.byIndex(indexRouteGrantNamespace, m.GetNamespace())
	// A grant also decides which listener certificates of other namespaces a gateway may use.
	var gateways []cache.ObjectName
	for _, obj := range r.route.gatewayIdx.List() {
		gw, ok := obj.(*kroxyliciousv1alpha1.KafkaGateway)
		if !ok || gw.Namespace == m.GetNamespace() {
			continue
		}
		for _, key := range binding.CertificateSecrets(gw) {
			if strings.HasPrefix(key, m.GetNamespace()+"/") {
				gateways = append(gateways, cache.NewObjectName(gw.Namespace, gw.Name))
				break
			}
		}
	}
	return append(keys, r.connectionsForGateways(gateways)...)
}

// gatewayMayUseSecret applies binding.GatewayMayUseSecret with the ReferenceGrants of the
// Secret's namespace.
func (r *reconciler) gatewayMayUseSecret(gw *kroxyliciousv1alpha1.KafkaGateway, key string) bool {
	var grants []*gatewayv1beta1.ReferenceGrant
	if ns, _, ok := strings.Cut(key, "/"); ok && ns != gw.Namespace {
		grants = r.grantsIn(ns)
	}
	return binding.GatewayMayUseSecret(gw, key, grants)
}

// buildRoute computes the binding of a connection that names a KafkaRoute. wait is true when
// nothing can be said yet (Strimzi's informers are still syncing for a connection with a user);
// they enqueue every connection once synced.
func (r *reconciler) buildRoute(conn *kafkav1beta2.KafkaConnection) (res binding.Result, failure *binding.Failure, wait bool) {
	rk := kafkaKey(conn)
	in := binding.RouteInput{
		RouteKey:      rk.String(),
		Gateways:      map[string]*kroxyliciousv1alpha1.KafkaGateway{},
		Parameters:    map[string]*kroxyliciousv1alpha1.KafkaGatewayParameters{},
		Secrets:       map[string]*binding.SecretData{},
		ClusterDomain: r.route.clusterDomain,
		StoreFormats:  conn.Spec.StoreFormats,
		Cache:         r.cache,
	}
	if l := conn.Spec.Kafka.Listener; l != nil {
		in.RequestedListener = l.Name
	}
	in.RequestedHostname = conn.Spec.Kafka.Hostname
	if s := conn.Spec.Kafka.CASecret; s != nil {
		in.CASecretName = s.Name
	}
	if rk.Namespace != conn.Namespace && !r.routePermitted(conn, rk) {
		// Checked first, so a connection learns nothing about a namespace it may not use.
		return res, &binding.Failure{Reason: binding.ReasonRefNotPermitted, Message: fmt.Sprintf(
			"KafkaRoute %s is in another namespace and no ReferenceGrant in namespace %s allows KafkaConnections (group %s) from namespace %s to it",
			rk, rk.Namespace, kafkav1beta2.SchemeGroupVersion.Group, conn.Namespace) + r.grantAPIMissing()}, false
	}

	if _, named := userKey(conn); named {
		switch r.strimzi.state() {
		case strimziStarting:
			return res, nil, true
		case strimziMissing:
			return res, &binding.Failure{Reason: binding.ReasonStrimziNotInstalled,
				Message: "the connection names a KafkaUser and the cluster serves no Strimzi KafkaUser API (kafka.strimzi.io/v1 or v1beta2): install Strimzi's CRDs"}, false
		}
		user, userSecret, f := r.gatherUser(conn)
		if f != nil {
			return res, f, false
		}
		in.User, in.UserSecret = user, userSecret
	}

	route, err := r.route.routes.KafkaRoutes(rk.Namespace).Get(rk.Name)
	if err == nil {
		in.Route = route
		for _, name := range gatewaymodel.ParentGateways(route) {
			gw, err := r.route.gateways.KafkaGateways(rk.Namespace).Get(name)
			if err != nil {
				continue
			}
			in.Gateways[name] = gw
			if p := gatewaymodel.ParametersName(gw); p != "" {
				if params, err := r.route.params.KafkaGatewayParameters(rk.Namespace).Get(p); err == nil {
					in.Parameters[p] = params
				}
			}
			for _, key := range binding.CertificateSecrets(gw) {
				if r.gatewayMayUseSecret(gw, key) {
					r.route.addSecret(in.Secrets, key)
				}
			}
		}
	}
	if in.CASecretName != "" {
		r.route.addSecret(in.Secrets, cache.NewObjectName(rk.Namespace, in.CASecretName).String())
	}

	res, failure = binding.BuildRoute(in)
	if failure != nil && failure.Reason == binding.ReasonUserSecretMissing {
		failure = &binding.Failure{Reason: failure.Reason, Message: failure.Message + fmt.Sprintf(" (kafkalink reads Secrets labelled %s)", strimzi.LabelCluster)}
	}
	return res, failure, false
}

// addSecret puts the cached Secret namespace/name into secrets when it exists.
func (w *routeWatch) addSecret(secrets map[string]*binding.SecretData, key string) {
	name, err := cache.ParseObjectName(key)
	if err != nil {
		return
	}
	s, err := w.secrets.Secrets(name.Namespace).Get(name.Name)
	if err != nil {
		// Not found (or not cached): the pure core reports the missing Secret.
		return
	}
	secrets[key] = &binding.SecretData{Name: key, Data: s.Data}
}

// routePermitted reports whether a ReferenceGrant in the route's namespace lets KafkaConnections
// of the connection's namespace refer to the KafkaRoute.
func (r *reconciler) routePermitted(conn *kafkav1beta2.KafkaConnection, rk cache.ObjectName) bool {
	for _, g := range r.grantsIn(rk.Namespace) {
		if grantAllowsRoute(g, conn.Namespace, rk.Name) {
			return true
		}
	}
	return false
}

func grantAllowsRoute(g *gatewayv1beta1.ReferenceGrant, fromNamespace, routeName string) bool {
	return gatewaymodel.Granted([]*gatewayv1beta1.ReferenceGrant{g}, connectionFrom(fromNamespace), gatewaymodel.To{Group: groupKroxylicious, Kind: kindKafkaRoute, Namespace: g.Namespace, Name: routeName})
}

// connectionFrom is the referring side of a KafkaConnection's cross-namespace reference.
func connectionFrom(namespace string) gatewaymodel.From {
	return gatewaymodel.From{Group: kafkav1beta2.SchemeGroupVersion.Group, Kind: kafkaConnectionKind, Namespace: namespace}
}
