package bindingcontroller

import (
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/secretcache"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// Strimzi tlsroute listeners with tls: false end TLS at a Gateway API Gateway: their bindings
// trust that Gateway listener's certificate. The Gateways come from the operator's shared
// optional informer (env.Informers.GatewayAPIGateways: a cluster may not serve Gateway API),
// indexed by certificate (controller.IndexGatewayAPICertificate); the certificates from the route
// watch's Secret informer, which keeps every Secret's public certificates.

// watchGatewayAPI subscribes to the shared Gateway API Gateway informer: any change, or a change
// to one of their certificates (certificateSecretToConnections), re-binds every connection
// (Gateways are few and change rarely). The operator starts the informer.
func watchGatewayAPI(gws *controller.OptionalInformer, enqueueAll func()) error {
	all := func(any) { enqueueAll() }
	if err := gws.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: all, UpdateFunc: func(_, o any) { all(o) }, DeleteFunc: all}); err != nil {
		return err
	}
	gws.OnServed(enqueueAll)
	return nil
}

// gatewayAPIGateway looks a cached Gateway up; nil when it does not exist or is not cached.
func (r *reconciler) gatewayAPIGateway(namespace, name string) *gatewayv1.Gateway {
	idx := r.gatewaysAPI.Indexer()
	if idx == nil {
		return nil
	}
	obj, ok, err := idx.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	g, _ := obj.(*gatewayv1.Gateway)
	return g
}

// gatewayTrust resolves, for each tlsroute listener of the Kafka whose TLS ends at a Gateway, the
// Gateway listener's certificate Secret (binding.GatewayCertificateRef), or why it cannot.
func (r *reconciler) gatewayTrust(k *strimzi.Kafka) map[string]binding.GatewayTrust {
	var out map[string]binding.GatewayTrust
	for _, l := range k.Listeners {
		if !l.TerminatesAtGateway() {
			continue
		}
		if out == nil {
			out = map[string]binding.GatewayTrust{}
		}
		if !r.gatewaysAPI.Served() {
			out[l.Name] = binding.GatewayTrust{Problem: "the cluster serves no Gateway API Gateway (gateway.networking.k8s.io/v1)"}
			continue
		}
		ns, name, problem := binding.GatewayCertificateRef(l, k.Namespace, r.gatewayAPIGateway)
		if problem != "" {
			out[l.Name] = binding.GatewayTrust{Problem: problem}
			continue
		}
		s, err := r.route.secrets.Secrets(ns).Get(name)
		if err != nil {
			out[l.Name] = binding.GatewayTrust{Problem: "its certificate Secret " + ns + "/" + name + " is not found"}
			continue
		}
		out[l.Name] = binding.GatewayTrust{Secret: &binding.SecretData{Name: s.Name, Data: secretcache.Certificates(s)}}
	}
	return out
}

// isGatewayAPICertificate reports whether a Secret is a Gateway API Gateway listener's certificate.
func (r *reconciler) isGatewayAPICertificate(key string) bool {
	return controller.HasIndexed(r.gatewaysAPI.Indexer(), controller.IndexGatewayAPICertificate, key)
}
