// Package controller is the worker loop every kafkalink controller shares: a named, typed,
// rate-limited work queue of object names, a sync function per key, and the rules for errors:
// success forgets the key, a conflict requeues quietly, any other error is
// logged and retried with backoff, and a panic in a sync is recovered, logged with its key,
// counted (kafkalink_reconcile_panics_total) and retried with backoff like an error, so one bad
// object never crash-loops the operator.
//
// Env (env.go) is what every controller constructor gets: the API clients (Clients), the shared
// informer factories of one watched namespace (Informers), an event recorder and the controllers'
// settings (Options). Package operator builds it; controllers import this package, not that one,
// so they depend neither on the operator's wiring nor on what the command wires in.
//
// It also holds what both controllers share: tombstone unwrapping (Unwrap, MetaOf, KeyOf), index
// names and lookups (IndexName, ByIndex, KeysByIndex, HasIndexed), condition merging
// (MergeConditions) in helpers.go, and OptionalInformer (optional.go) for the APIs a cluster may
// not serve. Controllers use these and keep no copies of their own.
//
// Names: a controller's queue name (the argument of New) names its work queue, its metrics
// labels, its log lines and its indexes (IndexName). It is not the Gateway API controller name
// that kafkalink writes into route and policy status (gateway.ControllerName).
//
// Mappers (MapFunc) are named <source>To<targets>, such as routeToGateways: the kind of the
// changed object and the keys of the objects that depend on it.
//
// Required and optional APIs: kafkalink's own CRDs are required; the operator's readiness waits
// for their informers. Strimzi's Kafka and KafkaUser, Gateway API's ReferenceGrant, Gateway and TLSRoute
// and OpenShift's Route are optional: each is watched through an OptionalInformer, which asks
// discovery again with one retry policy (from OptionalRetryInitial, doubling, capped at
// OptionalRetryMax) while the API is missing, starts its informer when the API appears and then
// has the controllers reconcile everything again. A missing optional API never holds back
// readiness; what needs it reports a condition until it is installed.
package controller

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// FieldManager is the server-side apply field manager of every kafkalink write.
const FieldManager = "kafkalink"

// SyncFunc reconciles one object, named by its key. It returns nil when the object is done
// (including user errors, which it reports in status), and an error to be retried.
type SyncFunc func(ctx context.Context, key cache.ObjectName) error

// Controller runs a SyncFunc for every key added to its queue.
type Controller struct {
	name      string
	sync      SyncFunc
	queue     workqueue.TypedRateLimitingInterface[cache.ObjectName]
	hasSynced []cache.InformerSynced
	mu        sync.Mutex
}

// New makes a controller whose queue is named name (the name labels the work-queue metrics).
func New(name string, sync SyncFunc) *Controller {
	reconcilePanics.WithLabelValues(name) // reported as 0 until one happens
	reconcileErrors.WithLabelValues(name, ReasonOther)
	return &Controller{
		name: name,
		sync: sync,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: name},
		),
	}
}

// Name is the controller's queue name.
func (c *Controller) Name() string { return c.name }

// WaitFor adds informers whose caches must sync before the workers start.
func (c *Controller) WaitFor(synced ...cache.InformerSynced) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hasSynced = append(c.hasSynced, synced...)
}

// HasSynced reports whether every informer the controller waits for has synced.
func (c *Controller) HasSynced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, synced := range c.hasSynced {
		if !synced() {
			return false
		}
	}
	return true
}

// Enqueue adds a key.
func (c *Controller) Enqueue(key cache.ObjectName) { c.queue.Add(key) }

// EnqueueAfter adds a key after a delay, for timed re-checks such as a deadline in status.
func (c *Controller) EnqueueAfter(key cache.ObjectName, after time.Duration) {
	c.queue.AddAfter(key, after)
}

// EnqueueObject adds the key of an object, including one wrapped in a deletion tombstone.
func (c *Controller) EnqueueObject(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("%s: cannot key %T: %w", c.name, obj, err))
		return
	}
	c.queue.Add(key)
}

// Handler enqueues the object of every add, update and delete event.
func (c *Controller) Handler() cache.ResourceEventHandler {
	return MapHandler(func(obj any) []cache.ObjectName {
		key, err := cache.DeletionHandlingObjectToName(obj)
		if err != nil {
			return nil
		}
		return []cache.ObjectName{key}
	}, c)
}

// MapFunc maps a changed object to the keys of the objects that depend on it.
type MapFunc func(obj any) []cache.ObjectName

// MapHandler enqueues, for every event, the keys that mapper returns for the object (for an
// update, for both the old and the new object, so a reference that moved re-reconciles both ends).
// Resyncs that change nothing are skipped.
func MapHandler(mapper MapFunc, c *Controller) cache.ResourceEventHandler {
	add := func(obj any) {
		for _, key := range mapper(obj) {
			c.queue.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: add,
		UpdateFunc: func(oldObj, newObj any) {
			if sameResourceVersion(oldObj, newObj) {
				return
			}
			add(oldObj)
			add(newObj)
		},
		DeleteFunc: add,
	}
}

func sameResourceVersion(oldObj, newObj any) bool {
	type versioned interface{ GetResourceVersion() string }
	o, ok1 := oldObj.(versioned)
	n, ok2 := newObj.(versioned)
	return ok1 && ok2 && o.GetResourceVersion() == n.GetResourceVersion()
}

// Run waits for the caches, then runs workers until ctx ends, and then shuts the queue down.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", c.name)
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Waiting for caches")
	if !cache.WaitForNamedCacheSync(c.name, ctx.Done(), c.HasSynced) {
		return
	}
	logger.Info("Starting workers", "count", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	logger.Info("Stopped workers")
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	logger := klog.FromContext(ctx).WithValues("key", key)
	err := c.safeSync(klog.NewContext(ctx, logger), key)
	if err != nil {
		countError(c.name, err)
	}
	switch {
	case err == nil:
		c.queue.Forget(key)
	case errors.As(err, new(errPanic)):
		// Logged with its stack where it was recovered.
		c.queue.AddRateLimited(key)
	case apierrors.IsConflict(err):
		// Another writer got there first: read again, without alarm.
		logger.V(4).Info("Conflict, requeueing", "err", err)
		c.queue.AddRateLimited(key)
	default:
		logger.Error(err, "Sync failed, retrying", "retries", c.queue.NumRequeues(key))
		c.queue.AddRateLimited(key)
	}
	return true
}

// errPanic marks a sync that panicked; the panic is logged where it is recovered.
type errPanic struct{ value any }

// Error says that the sync panicked, and with what.
func (e errPanic) Error() string { return fmt.Sprintf("sync panicked: %v", e.value) }

// safeSync runs the sync function and turns a panic into an error, after logging it with its key
// and stack and counting it.
func (c *Controller) safeSync(ctx context.Context, key cache.ObjectName) (err error) {
	defer func() {
		if r := recover(); r != nil {
			reconcilePanics.WithLabelValues(c.name).Inc()
			klog.FromContext(ctx).Error(nil, "Sync panicked, retrying with backoff", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = errPanic{value: r}
		}
	}()
	return c.sync(ctx, key)
}
