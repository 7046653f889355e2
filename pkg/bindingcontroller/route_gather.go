package bindingcontroller

import (
	"fmt"
	"strings"

	"k8s.io/client-go/tools/cache"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/secretcache"
)

// gatewayMayUseSecret applies binding.GatewayMayUseSecret with the ReferenceGrants of the
// Secret's namespace.
func (r *reconciler) gatewayMayUseSecret(gw *kroxyliciousv1alpha1.KafkaGateway, key string) bool {
	var grants []*gatewayv1beta1.ReferenceGrant
	if ns, _, ok := strings.Cut(key, "/"); ok && ns != gw.Namespace {
		grants = r.grantsIn(ns)
	}
	return binding.GatewayMayUseSecret(gw, key, grants)
}

// gatherRoute reads the inputs of a connection that names a KafkaRoute from the listers, as gather
// does for a Strimzi Kafka; binding.BuildRoute then decides. A Failure here is one the pure core
// cannot see: a reference not permitted, Strimzi missing, a KafkaUser missing or invalid. wait is
// true when nothing can be said yet (Strimzi's informers are still syncing for a connection with a
// user); they enqueue every connection once synced.
func (r *reconciler) gatherRoute(conn *kafkav1beta2.KafkaConnection) (in binding.RouteInput, failure *binding.Failure, wait bool) {
	rk := kafkaKey(conn)
	in = binding.RouteInput{
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
		return in, &binding.Failure{Reason: binding.ReasonRefNotPermitted, Message: fmt.Sprintf(
			"KafkaRoute %s is in another namespace and no ReferenceGrant in namespace %s allows KafkaConnections (group %s) from namespace %s to it",
			rk, rk.Namespace, kafkav1beta2.SchemeGroupVersion.Group, conn.Namespace) + r.grantAPIMissing()}, false
	}

	if _, named := userKey(conn); named {
		switch r.strimzi.state() {
		case strimziStarting:
			return in, nil, true
		case strimziMissing:
			return in, &binding.Failure{Reason: binding.ReasonStrimziNotInstalled,
				Message: "the connection names a KafkaUser and the cluster serves no Strimzi KafkaUser API (kafka.strimzi.io/v1 or v1beta2): install Strimzi's CRDs"}, false
		}
		user, userSecret, f := r.gatherUser(conn)
		if f != nil {
			return in, f, false
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
	return in, nil, false
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
	secrets[key] = &binding.SecretData{Name: key, Data: secretcache.Certificates(s)}
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
