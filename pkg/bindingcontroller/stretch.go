package bindingcontroller

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// gvrsServiceExport are the Kubernetes Multi-Cluster Services ServiceExport (sigs.k8s.io/mcs-api),
// an optional API that Submariner and other MCS implementations serve, newest first.
var gvrsServiceExport = []schema.GroupVersionResource{
	{Group: "multicluster.x-k8s.io", Version: "v1beta1", Resource: "serviceexports"},
	{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceexports"},
}

// stretchWatch reads what the addresses of a stretch Kafka depend on: its KafkaNodePools'
// Submariner cluster ids (the shared node pool informer) and which of its Services are exported.
type stretchWatch struct {
	nodePools *controller.OptionalInformer
	exports   *controller.OptionalInformer
}

// newStretchWatch registers the handlers that enqueue the connections of a Kafka whose node pools
// or ServiceExports change, and starts the ServiceExport informer once the API is served.
func newStretchWatch(ctx context.Context, env controller.Env, r *reconciler, c *controller.Controller, enqueueAll func()) (*stretchWatch, error) {
	w := &stretchWatch{
		nodePools: env.Informers.KafkaNodePools,
		exports: controller.NewOptionalInformer(controller.OptionalConfig{What: "MCS ServiceExport",
			GVRs: gvrsServiceExport, Namespace: env.Informers.Namespace,
			Dynamic: env.Clients.Dynamic, Discovery: env.Clients.Discovery, Transform: pruneToIdentity}),
	}
	if err := w.nodePools.AddEventHandler(controller.MapHandler(r.nodePoolToConnections, c)); err != nil {
		return nil, err
	}
	if err := w.exports.AddEventHandler(controller.MapHandler(r.exportToConnections, c)); err != nil {
		return nil, err
	}
	w.exports.OnServed(enqueueAll)
	w.exports.Start(ctx)
	c.WaitFor(w.nodePools.HasSynced, w.exports.HasSynced)
	return w, nil
}

// input is the stretch part of a Kafka's binding input.
func (w *stretchWatch) input(k *strimzi.Kafka) binding.StretchInput {
	pools := strimzi.CachedNodePools(w.nodePools.Indexer(), map[string]bool{k.Namespace: true})
	exports := w.exports.Indexer()
	return binding.StretchInput{
		ClusterIDs: strimzi.SubmarinerClusterIDs(k, pools),
		Exported: func(service string) bool {
			if exports == nil {
				return false
			}
			_, exists, _ := exports.GetByKey(k.Namespace + "/" + service)
			return exists
		},
	}
}

// nodePoolToConnections maps a KafkaNodePool to the connections of its Kafka.
func (r *reconciler) nodePoolToConnections(obj any) []cache.ObjectName {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	cluster := u.GetLabels()[strimzi.LabelCluster]
	return r.byIndex(indexKafka, u.GetNamespace()+"/"+cluster)
}

// exportToConnections maps a ServiceExport to the connections of the Kafkas whose Services
// (<kafka>-kafka-…) it could export.
func (r *reconciler) exportToConnections(obj any) []cache.ObjectName {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	var out []cache.ObjectName
	for _, key := range r.connIndex.ListIndexFuncValues(indexKafka) {
		ns, name, _ := strings.Cut(key, "/")
		if ns == u.GetNamespace() && strings.HasPrefix(u.GetName(), name+"-kafka-") {
			out = append(out, r.byIndex(indexKafka, key)...)
		}
	}
	return out
}

// pruneToIdentity keeps an object's name and namespace: a ServiceExport matters by existing.
func pruneToIdentity(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := &unstructured.Unstructured{}
	out.SetAPIVersion(u.GetAPIVersion())
	out.SetKind(u.GetKind())
	out.SetName(u.GetName())
	out.SetNamespace(u.GetNamespace())
	out.SetUID(u.GetUID())
	out.SetResourceVersion(u.GetResourceVersion())
	return out, nil
}
