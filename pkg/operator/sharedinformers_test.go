package operator

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	kafkalinkfake "github.com/kafkalink/kafkalink/generated/clientset/versioned/fake"
	"github.com/kafkalink/kafkalink/pkg/bindingcontroller"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gatewaycontroller"
)

// The binding and gateway controllers both read Gateway API Gateways: with both built, as
// cmd/kafkalink-operator builds them, the operator lists (and so watches) Gateways once, and the
// one cache holds them typed, without managedFields or status, indexed by certificate.
func TestGatewayAPIGatewaysAreWatchedOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	kube := kubefake.NewClientset()
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: gvrGateway.GroupVersion().String(), APIResources: []metav1.APIResource{{Name: "gateways", Namespaced: true, Kind: "Gateway"}}},
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvrGateway: "GatewayList"})
	if _, err := dyn.Resource(gvrGateway).Namespace("edge").Create(ctx, gatewayAPIGateway(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clients := controller.Clients{Kube: kube, KafkaLink: kafkalinkfake.NewSimpleClientset(), Gateway: gatewayfake.NewSimpleClientset(),
		Dynamic: dyn, Discovery: kube.Discovery()}
	opts := Options{Workers: 1, Options: controller.Options{ClusterDomain: "cluster.local", ProxyImage: "proxy:test", MaxGeneratedObjectsPerGateway: 10}}
	ctrls, err := buildControllers(ctx, opts, clients, record.NewFakeRecorder(100), []NewControllerFunc{bindingcontroller.New, gatewaycontroller.New})
	if err != nil {
		t.Fatal(err)
	}
	ctrls.startInformers(ctx)
	if !cache.WaitForCacheSync(waitCtx(t, ctx).Done(), ctrls.hasSynced) {
		t.Fatal("the controllers' caches did not sync")
	}
	if got := countActions(dyn.Actions(), "list", "gateways"); got != 1 {
		t.Errorf("Gateway API Gateways listed %d times, want once (one informer for both controllers)", got)
	}
	idx := ctrls.informers[0].GatewayAPIGateways.Indexer()
	obj, ok, err := idx.GetByKey("edge/kafka-gateway")
	g, typed := obj.(*gatewayv1.Gateway)
	if err != nil || !ok || !typed {
		t.Fatalf("cached Gateway: %T %v %v", obj, ok, err)
	}
	if g.ManagedFields != nil || len(g.Status.Conditions) != 0 {
		t.Errorf("the cache keeps managedFields %v or status %v", g.ManagedFields, g.Status)
	}
	if !controller.HasIndexed(idx, controller.IndexGatewayAPICertificate, "certs/kafka-gateway-tls") {
		t.Error("the cache does not index the listener certificate certs/kafka-gateway-tls")
	}
}

// waitCtx bounds a wait in a test.
func waitCtx(t *testing.T, ctx context.Context) context.Context {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func countActions(actions []clienttesting.Action, verb, resource string) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

// gatewayAPIGateway is a Gateway with a TLS listener whose certificate is in another namespace,
// with managedFields and status, as the API server serves it.
func gatewayAPIGateway() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "kafka-gateway", "namespace": "edge",
			"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Apply", "apiVersion": "gateway.networking.k8s.io/v1"}}},
		"spec": map[string]any{"gatewayClassName": "example", "listeners": []any{map[string]any{
			"name": "kafka", "port": int64(443), "protocol": "TLS",
			"tls": map[string]any{"mode": "Terminate", "certificateRefs": []any{map[string]any{"name": "kafka-gateway-tls", "namespace": "certs"}}},
		}}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted",
			"message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}}},
	}}
}
