package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// fakeDiscovery serves the group versions and resources in served, which a test may change.
type fakeDiscovery struct {
	discovery.DiscoveryInterface
	mu     sync.Mutex
	served map[string][]string
	calls  int
}

func (f *fakeDiscovery) serve(gv string, resources ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.served[gv] = resources
}

func (f *fakeDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	f.mu.Lock()
	f.calls++
	resources, ok := f.served[gv]
	f.mu.Unlock()
	if !ok {
		// What the real client returns for a group version the server does not serve.
		return (&discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}).ServerResourcesForGroupVersion(gv)
	}
	list := &metav1.APIResourceList{GroupVersion: gv}
	for _, r := range resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: r, Namespaced: true})
	}
	return list, nil
}

var (
	widgetsV1      = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widgetsV1beta1 = schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}
)

func widget(version, ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/" + version, "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns},
	}}
}

func newTestOptional(disc *fakeDiscovery, objects ...runtime.Object) *OptionalInformer {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgetsV1: "WidgetList", widgetsV1beta1: "WidgetList"}, objects...)
	o := NewOptionalInformer(OptionalConfig{What: "Widget", GVRs: []schema.GroupVersionResource{widgetsV1, widgetsV1beta1},
		Dynamic: dyn, Discovery: disc})
	o.initial, o.max = 5*time.Millisecond, 20*time.Millisecond
	return o
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestOptionalInformerServedAtStart(t *testing.T) {
	disc := &fakeDiscovery{served: map[string][]string{"example.com/v1beta1": {"widgets"}}}
	o := newTestOptional(disc, widget("v1beta1", "ns", "a"))
	var served atomic.Int32
	o.OnServed(func() { served.Add(1) })
	if o.HasSynced() || o.Ready() || o.Served() {
		t.Fatal("synced, ready or served before Start")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Start(ctx)
	poll(t, "the informer to sync", o.HasSynced)
	if gvr, _ := o.GVR(); gvr != widgetsV1beta1 {
		t.Errorf("watching %v, want the first served %v", gvr, widgetsV1beta1)
	}
	if _, ok, _ := o.Indexer().GetByKey("ns/a"); !ok {
		t.Error("the cache lacks ns/a")
	}
	if l := o.Lister(); l == nil {
		t.Error("no lister")
	} else if _, err := l.ByNamespace("ns").Get("a"); err != nil {
		t.Error(err)
	}
	if served.Load() != 0 {
		t.Error("OnServed ran for an API served from the start")
	}
}

func TestOptionalInformerServedLater(t *testing.T) {
	disc := &fakeDiscovery{served: map[string][]string{"example.com/v1": {"gadgets"}}}
	o := newTestOptional(disc)
	var added atomic.Int32
	if err := o.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { added.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	var served atomic.Int32
	o.OnServed(func() { served.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Start(ctx)
	// A missing optional API does not hold back whoever waits for it.
	if !o.HasSynced() {
		t.Fatal("HasSynced is false for an API that is not served")
	}
	if o.Ready() || o.Served() || o.Indexer() != nil || o.Lister() != nil {
		t.Fatal("ready before served")
	}
	poll(t, "discovery to be asked again with backoff", func() bool {
		disc.mu.Lock()
		defer disc.mu.Unlock()
		return disc.calls >= 3*2 // two group versions per check
	})

	disc.serve("example.com/v1", "gadgets", "widgets")
	poll(t, "the API to be picked up", o.Ready)
	poll(t, "OnServed", func() bool { return served.Load() == 1 })
	if gvr, _ := o.GVR(); gvr != widgetsV1 {
		t.Errorf("watching %v, want %v", gvr, widgetsV1)
	}
	// Handlers added before and after the informer started both see events.
	var addedLate atomic.Int32
	if err := o.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { addedLate.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	gvrClient := o.cfg.Dynamic.Resource(widgetsV1).Namespace("ns")
	if _, err := gvrClient.Create(ctx, widget("v1", "ns", "b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "both handlers to see the new object", func() bool { return added.Load() == 1 && addedLate.Load() == 1 })
	if keys := KeysByIndex(o.Indexer(), cache.NamespaceIndex, "ns"); len(keys) != 1 {
		t.Errorf("namespace index: %v", keys)
	}
	if !o.HasSynced() {
		t.Error("HasSynced turned false")
	}
}

// A discovery error (not a 404) is not an answer: HasSynced stays false until discovery answers.
func TestOptionalInformerDiscoveryError(t *testing.T) {
	disc := &failingDiscovery{}
	o := NewOptionalInformer(OptionalConfig{What: "Widget", GVRs: []schema.GroupVersionResource{widgetsV1}, Discovery: disc})
	o.initial, o.max = 5*time.Millisecond, 20*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Start(ctx)
	if o.HasSynced() {
		t.Fatal("synced although discovery failed")
	}
	disc.ok.Store(true)
	poll(t, "HasSynced once discovery answers", o.HasSynced)
}

type failingDiscovery struct {
	discovery.DiscoveryInterface
	ok atomic.Bool
}

func (f *failingDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	if !f.ok.Load() {
		return nil, context.DeadlineExceeded
	}
	return (&discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}).ServerResourcesForGroupVersion(gv)
}
