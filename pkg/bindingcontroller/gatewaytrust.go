package bindingcontroller

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/secretcache"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// Strimzi tlsroute listeners with tls: false end TLS at a Gateway API Gateway: their bindings
// trust that Gateway listener's certificate. The Gateways come from an optional informer (a
// cluster may not serve Gateway API), the certificates from the route watch's Secret informer,
// which keeps every Secret's public certificates.

var gvrGateway = schema.GroupVersionResource{Group: strimzi.GatewayAPIGroup, Version: "v1", Resource: "gateways"}

// indexGatewayAPICertificate (Gateway API Gateways): namespace/name of each listener certificate.
var indexGatewayAPICertificate = controller.IndexName(QueueName, "gatewayapi-certificate")

// newGatewayAPIWatch watches Gateway API Gateways; any change, or a change to one of their
// certificates, re-binds every connection (Gateways are few and change rarely).
func newGatewayAPIWatch(ctx context.Context, env controller.Env, enqueueAll func()) (*controller.OptionalInformer, error) {
	gws := controller.NewOptionalInformer(controller.OptionalConfig{What: "Gateway API Gateway", GVRs: []schema.GroupVersionResource{gvrGateway},
		Namespace: env.Informers.Namespace, Dynamic: env.Clients.Dynamic, Discovery: env.Clients.Discovery,
		Transform: typedGateway, Indexers: cache.Indexers{indexGatewayAPICertificate: indexGatewayAPIByCertificate}})
	all := func(any) { enqueueAll() }
	if err := gws.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: all, UpdateFunc: func(_, o any) { all(o) }, DeleteFunc: all}); err != nil {
		return nil, err
	}
	gws.OnServed(enqueueAll)
	gws.Start(ctx)
	return gws, nil
}

// typedGateway turns a cached Gateway into a *gatewayv1.Gateway.
func typedGateway(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	g := &gatewayv1.Gateway{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, g); err != nil {
		return nil, err
	}
	g.ManagedFields, g.Status = nil, gatewayv1.GatewayStatus{}
	return g, nil
}

func indexGatewayAPIByCertificate(obj any) ([]string, error) {
	g, ok := obj.(*gatewayv1.Gateway)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, l := range g.Spec.Listeners {
		if l.TLS == nil {
			continue
		}
		for _, ref := range l.TLS.CertificateRefs {
			ns := g.Namespace
			if ref.Namespace != nil && *ref.Namespace != "" {
				ns = string(*ref.Namespace)
			}
			out = append(out, ns+"/"+string(ref.Name))
		}
	}
	return out, nil
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
	return controller.HasIndexed(r.gatewaysAPI.Indexer(), indexGatewayAPICertificate, key)
}
