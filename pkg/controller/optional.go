package controller

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// The retry policy of every optional API: while none of its resources is served, discovery is
// asked again after OptionalRetryInitial, then twice as long each time up to OptionalRetryMax
// (with up to 10% jitter), so a CRD installed later is picked up within OptionalRetryMax plus
// the jitter. Once served, nothing is polled: only watch events matter.
const (
	OptionalRetryInitial = time.Second
	OptionalRetryMax     = 20 * time.Second
)

// OptionalConfig describes an optional API.
type OptionalConfig struct {
	// What names the API in logs and messages, such as "ReferenceGrant".
	What string
	// GVRs are the resources to look for, in order of preference; the first served one is watched.
	GVRs []schema.GroupVersionResource
	// Namespace limits the informer to one namespace; "" for all.
	Namespace string
	// Dynamic is the client the informer lists and watches with.
	Dynamic dynamic.Interface
	// Discovery tells which of GVRs the cluster serves.
	Discovery discovery.DiscoveryInterface
	// Indexers are added to the informer; a namespace index is always present.
	Indexers cache.Indexers
	// Transform, when set, is the informer's cache transform (it may turn the unstructured
	// objects into typed ones, and must be idempotent).
	Transform cache.TransformFunc
}

// OptionalInformer watches a resource the cluster may not serve: the first of several
// GroupVersionResources that discovery lists. While none is served it asks discovery again with
// the retry policy above; when one becomes served it starts an informer for it, attaches the
// handlers added so far, and once that informer has synced calls the OnServed callbacks (which
// typically enqueue every object of a controller).
//
// HasSynced is what a controller waits for (WaitFor): true once discovery has answered and, if the
// resource was served at that first answer, its informer has synced. A missing optional API so
// never holds back a controller or the operator's readiness.
type OptionalInformer struct {
	cfg           OptionalConfig
	initial, max  time.Duration
	mu            sync.Mutex
	handlers      []cache.ResourceEventHandler
	onServed      []func()
	started       bool
	resolved      atomic.Bool // discovery has answered (served or definitely not)
	servedAtStart atomic.Bool
	informer      atomic.Pointer[cache.SharedIndexInformer]
	denial        atomic.Pointer[ReadDenial]
	gvr           atomic.Pointer[schema.GroupVersionResource]
}

// NewOptionalInformer makes an optional informer; it does nothing until Start.
func NewOptionalInformer(cfg OptionalConfig) *OptionalInformer {
	return &OptionalInformer{cfg: cfg, initial: OptionalRetryInitial, max: OptionalRetryMax}
}

// What names the API.
func (o *OptionalInformer) What() string { return o.cfg.What }

// AddEventHandler adds a handler, now if the informer runs, else when it starts.
func (o *OptionalInformer) AddEventHandler(h cache.ResourceEventHandler) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.handlers = append(o.handlers, h)
	if inf := o.informer.Load(); inf != nil {
		_, err := (*inf).AddEventHandler(h)
		return err
	}
	return nil
}

// OnServed adds a callback run once, after the resource became served later than the first
// discovery check and its informer synced.
func (o *OptionalInformer) OnServed(f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.onServed = append(o.onServed, f)
}

// Start checks discovery once and starts the informer when the resource is served; otherwise
// it keeps checking in the background until ctx ends. Only the first call does anything.
func (o *OptionalInformer) Start(ctx context.Context) {
	o.mu.Lock()
	if o.started {
		o.mu.Unlock()
		return
	}
	o.started = true
	o.mu.Unlock()
	logger := klog.FromContext(ctx).WithValues("api", o.cfg.What)
	gvr, err := o.served()
	if err == nil {
		o.servedAtStart.Store(true)
		o.startInformer(ctx, gvr)
		logger.V(2).Info("Watching optional API", "resource", gvr.String())
		return
	}
	if errors.Is(err, errNotServed) {
		logger.Info("Optional API not served; checking again with backoff", "resources", fmt.Sprint(o.cfg.GVRs), "maxInterval", o.max)
	} else {
		logger.Info("Cannot ask discovery for an optional API; checking again with backoff", "err", err.Error())
	}
	go o.retry(ctx, logger)
}

func (o *OptionalInformer) retry(ctx context.Context, logger klog.Logger) {
	delay := o.initial
	for {
		jittered := delay + time.Duration(rand.Int64N(int64(delay)/10+1))
		select {
		case <-ctx.Done():
			return
		case <-time.After(jittered):
		}
		gvr, err := o.served()
		if err != nil {
			logger.V(4).Info("Optional API still not served", "reason", err.Error(), "next", delay)
			delay = min(2*delay, o.max)
			continue
		}
		inf := o.startInformer(ctx, gvr)
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return
		}
		logger.Info("Optional API now served; reconciling everything that may use it", "resource", gvr.String())
		o.mu.Lock()
		callbacks := append([]func(){}, o.onServed...)
		o.mu.Unlock()
		for _, f := range callbacks {
			f()
		}
		return
	}
}

// errNotServed: discovery answered and serves none of the resources.
var errNotServed = errors.New("not served")

// served returns the first resource discovery lists; errNotServed when discovery answered for
// every group version and lists none of them, another error when it could not answer.
func (o *OptionalInformer) served() (schema.GroupVersionResource, error) {
	var failure error
	for _, gvr := range o.cfg.GVRs {
		list, err := o.cfg.Discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err != nil {
			if !apierrors.IsNotFound(err) {
				failure = fmt.Errorf("discovering %s: %w", gvr.GroupVersion(), err)
			}
			continue
		}
		for _, r := range list.APIResources {
			if r.Name == gvr.Resource {
				o.resolved.Store(true)
				return gvr, nil
			}
		}
	}
	if failure != nil {
		return schema.GroupVersionResource{}, failure
	}
	o.resolved.Store(true)
	return schema.GroupVersionResource{}, errNotServed
}

func (o *OptionalInformer) startInformer(ctx context.Context, gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	for k, v := range o.cfg.Indexers {
		indexers[k] = v
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(o.cfg.Dynamic, gvr, o.cfg.Namespace, 0, indexers, nil).Informer()
	if o.cfg.Transform != nil {
		_ = inf.SetTransform(o.cfg.Transform)
	}
	o.denial.Store(WatchReadDenial(inf))
	o.mu.Lock()
	for _, h := range o.handlers {
		_, _ = inf.AddEventHandler(h)
	}
	o.gvr.Store(&gvr)
	o.informer.Store(&inf)
	o.mu.Unlock()
	go inf.RunWithContext(ctx)
	return inf
}

// HasSynced is true once discovery has answered and, when the resource was served then, its
// informer has synced. A resource that appears later never makes it false.
func (o *OptionalInformer) HasSynced() bool {
	if !o.resolved.Load() {
		return false
	}
	if !o.servedAtStart.Load() {
		return true
	}
	return (*o.informer.Load()).HasSynced()
}

// ReadDenied is the 401 or 403 the informer's last list or watch got, while it lasts (see
// ReadDenial); nil when the resource is not served.
func (o *OptionalInformer) ReadDenied() error {
	if o == nil {
		return nil
	}
	return o.denial.Load().Err()
}

// Served reports whether the resource is served (its informer may still be syncing).
func (o *OptionalInformer) Served() bool {
	return o != nil && o.informer.Load() != nil
}

// Ready reports whether the resource is served and its cache synced: only then do its lister
// and indexer answer.
func (o *OptionalInformer) Ready() bool {
	if o == nil {
		return false
	}
	inf := o.informer.Load()
	if inf == nil {
		return false
	}
	return (*inf).HasSynced()
}

// GVR is the resource watched, once served.
func (o *OptionalInformer) GVR() (schema.GroupVersionResource, bool) {
	if o == nil {
		return schema.GroupVersionResource{}, false
	}
	if p := o.gvr.Load(); p != nil {
		return *p, true
	}
	return schema.GroupVersionResource{}, false
}

// Indexer is the informer's cache once Ready, else nil.
func (o *OptionalInformer) Indexer() cache.Indexer {
	if !o.Ready() {
		return nil
	}
	return (*o.informer.Load()).GetIndexer()
}

// Lister is a generic lister over the cache once Ready, else nil.
func (o *OptionalInformer) Lister() cache.GenericLister {
	idx := o.Indexer()
	if idx == nil {
		return nil
	}
	gvr, _ := o.GVR()
	return cache.NewGenericLister(idx, gvr.GroupResource())
}

// NewServedOptionalInformer is an optional informer whose resource is served and whose synced
// cache is indexer, for unit tests of code that reads an optional cache. Only its read side
// (Served, Ready, HasSynced, Indexer, Lister) works.
func NewServedOptionalInformer(what string, indexer cache.Indexer) *OptionalInformer {
	o := NewOptionalInformer(OptionalConfig{What: what})
	var inf cache.SharedIndexInformer = staticInformer{indexer: indexer}
	o.informer.Store(&inf)
	o.resolved.Store(true)
	o.servedAtStart.Store(true)
	return o
}

// staticInformer is a synced informer over a fixed cache; its other methods are not for use.
type staticInformer struct {
	cache.SharedIndexInformer
	indexer cache.Indexer
}

// GetIndexer is the fixed cache.
func (s staticInformer) GetIndexer() cache.Indexer { return s.indexer }

// HasSynced is always true: the cache is filled before use.
func (s staticInformer) HasSynced() bool { return true }
