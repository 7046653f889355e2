package bindingcontroller

import (
	"fmt"
	"strings"

	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	kroxyliciousv1alpha1listers "github.com/kafkalink/kafkalink/generated/listers/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/secretcache"
)

// Connections that name a KafkaRoute: route.go wires what they read (indexes, informers, mappers),
// gatherRoute (route_gather.go) reads it for one connection, and binding.BuildRoute decides.

// Indexes for connections that name a KafkaRoute. The connection indexes live on the
// KafkaConnection informer; the others on the shared KafkaRoute and KafkaGateway informers, where
// the queue name in controller.IndexName keeps them apart from the gateway controller's.
var (
	// indexRoute (connections): namespace/name of the KafkaRoute a connection names.
	indexRoute = controller.IndexName(QueueName, "route")
	// indexRouteCASecret (connections): namespace/name of spec.kafka.caSecret.
	indexRouteCASecret = controller.IndexName(QueueName, "route-ca-secret")
	// indexOAuthSecret (connections): namespace/name of spec.oauth.clientSecretRef.
	indexOAuthSecret = controller.IndexName(QueueName, "oauth-secret")
	// indexRouteGrantNamespace (connections): the namespace of a cross-namespace KafkaRoute, where
	// a ReferenceGrant must allow the reference.
	indexRouteGrantNamespace = controller.IndexName(QueueName, "route-namespace")
	// indexRouteGateway (routes): namespace/name of each KafkaGateway a route's parentRefs name.
	indexRouteGateway = controller.IndexName(QueueName, "gateway")
	// indexGatewayCertificate (gateways): namespace/name of each listener certificate Secret.
	indexGatewayCertificate = controller.IndexName(QueueName, "certificate")
	// indexGatewayParameters (gateways): namespace/name of the KafkaGatewayParameters it names.
	indexGatewayParameters = controller.IndexName(QueueName, "parameters")
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

// newRouteWatch adds the route indexes and handlers, on the shared informers (the Secret cache
// included), which the operator starts. The returned syncs are what the controller must wait for.
func newRouteWatch(env controller.Env, r *reconciler, c *controller.Controller) (*routeWatch, []cache.InformerSynced, error) {
	kl := env.Informers.KafkaLink.Kroxylicious().V1alpha1()
	routeInf, gwInf, paramsInf := kl.KafkaRoutes(), kl.KafkaGateways(), kl.KafkaGatewayParameters()
	connInf := env.Informers.KafkaLink.Kafka().V1beta2().KafkaConnections().Informer()
	if err := connInf.AddIndexers(cache.Indexers{
		indexRoute:               indexConnectionRoute,
		indexRouteCASecret:       indexConnectionCASecret,
		indexOAuthSecret:         indexConnectionOAuthSecret,
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
	// they come from the operator's shared cache of every Secret but the binding ones, which
	// keeps their public certificates.
	secretInf := secretcache.Informer(env)

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
		{routeInf.Informer(), r.routeToConnections},
		{gwInf.Informer(), r.gatewayToConnections},
		{paramsInf.Informer(), r.parametersToConnections},
		{secretInf, r.certificateSecretToConnections},
		{nil, r.routeGrantToConnections}, // on the shared optional ReferenceGrant informer
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
	return w, []cache.InformerSynced{routeInf.Informer().HasSynced, gwInf.Informer().HasSynced,
		paramsInf.Informer().HasSynced, secretInf.HasSynced}, nil
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

func indexConnectionOAuthSecret(obj any) ([]string, error) {
	conn, ok := obj.(*kafkav1beta2.KafkaConnection)
	if !ok || conn.Spec.OAuth == nil {
		return nil, nil
	}
	return []string{cache.NewObjectName(conn.Namespace, conn.Spec.OAuth.ClientSecretRef.Name).String()}, nil
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

// routesToConnections lists the connections that name any of the routes.
func (r *reconciler) routesToConnections(routes []cache.ObjectName) []cache.ObjectName {
	var keys []cache.ObjectName
	for _, rk := range routes {
		keys = append(keys, r.byIndex(indexRoute, rk.String())...)
	}
	return keys
}

// gatewaysToConnections lists the connections whose route attaches to any of the gateways.
func (r *reconciler) gatewaysToConnections(gateways []cache.ObjectName) []cache.ObjectName {
	var keys []cache.ObjectName
	for _, gk := range gateways {
		keys = append(keys, r.routesToConnections(controller.KeysByIndex(r.route.routeIdx, indexRouteGateway, gk.String()))...)
	}
	return keys
}

// routeToConnections maps a KafkaRoute to the connections that name it.
func (r *reconciler) routeToConnections(obj any) []cache.ObjectName {
	return r.routesToConnections(controller.KeyOf(obj))
}

// gatewayToConnections maps a KafkaGateway to the connections of the routes attached to it.
func (r *reconciler) gatewayToConnections(obj any) []cache.ObjectName {
	return r.gatewaysToConnections(controller.KeyOf(obj))
}

// parametersToConnections maps a KafkaGatewayParameters to the connections of the routes attached
// to the gateways that name it.
func (r *reconciler) parametersToConnections(obj any) []cache.ObjectName {
	var keys []cache.ObjectName
	for _, pk := range controller.KeyOf(obj) {
		keys = append(keys, r.gatewaysToConnections(controller.KeysByIndex(r.route.gatewayIdx, indexGatewayParameters, pk.String()))...)
	}
	return keys
}

// certificateSecretToConnections maps a Secret to the route connections that read it: as their
// spec.kafka.caSecret, or as a listener certificate of a gateway their route attaches to.
func (r *reconciler) certificateSecretToConnections(obj any) []cache.ObjectName {
	var keys []cache.ObjectName
	for _, sk := range controller.KeyOf(obj) {
		keys = append(keys, r.byIndex(indexRouteCASecret, sk.String())...)
		keys = append(keys, r.byIndex(indexOAuthSecret, sk.String())...)
		keys = append(keys, r.gatewaysToConnections(controller.KeysByIndex(r.route.gatewayIdx, indexGatewayCertificate, sk.String()))...)
		if r.gatewaysAPI != nil && r.isGatewayAPICertificate(sk.String()) {
			// A Gateway API Gateway's certificate, which tlsroute bindings trust: every connection.
			for _, conn := range r.connIndex.List() {
				keys = append(keys, controller.KeyOf(conn)...)
			}
		}
	}
	return keys
}

// routeGrantToConnections maps a ReferenceGrant to the connections whose KafkaRoute is in its
// namespace, and to those of routes attached to gateways using certificates from its namespace.
func (r *reconciler) routeGrantToConnections(obj any) []cache.ObjectName {
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
	return append(keys, r.gatewaysToConnections(gateways)...)
}
