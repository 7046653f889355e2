package bindingcontroller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// strimziWatch finds which version of Strimzi's API the cluster serves and watches Kafkas and
// KafkaUsers in it. Strimzi may be installed after the operator: until then it re-checks
// discovery with an exponential backoff (capped at maxDiscoveryInterval) and connections report
// StrimziNotInstalled; once served, it starts the informers and re-reconciles every connection.
// Healthy state is never polled: after the informers start, only watch events matter.
type strimziWatch struct {
	dynamic   dynamic.Interface
	discovery discovery.DiscoveryInterface
	namespace string
	// onServed runs once, after the informers have synced.
	onServed func()
	// register adds the controller's event handler to a new informer.
	register func(inf cache.SharedIndexInformer, kind string) error

	mu sync.RWMutex
	// resolved is true once discovery has answered (served or definitely not served).
	resolved      bool
	kafkaVersion  string
	userVersion   string
	kafkas, users cache.SharedIndexInformer
}

// How often discovery is re-checked while Strimzi is missing.
const (
	initialDiscoveryInterval = time.Second
	maxDiscoveryInterval     = 30 * time.Second
)

// errNotServed says discovery answered and the cluster serves no Strimzi version kafkalink reads.
var errNotServed = errors.New("kafka.strimzi.io serves neither v1 nor v1beta2 kafkas and kafkausers")

func newStrimziWatch(dyn dynamic.Interface, disc discovery.DiscoveryInterface, namespace string, onServed func(),
	register func(cache.SharedIndexInformer, string) error) *strimziWatch {
	return &strimziWatch{dynamic: dyn, discovery: disc, namespace: namespace, onServed: onServed, register: register}
}

// init checks discovery once, so a running Strimzi is watched from the first sync and connections
// never flap through StrimziNotInstalled at start-up, then keeps checking in the background while
// Strimzi is missing (or discovery failed).
func (w *strimziWatch) init(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	err := w.tryStart(ctx)
	if err == nil {
		return nil
	}
	logger.Info("Strimzi API not available yet; checking again with backoff", "reason", err.Error())
	go func() {
		b := backoff.NewExponentialBackOff()
		b.InitialInterval = initialDiscoveryInterval
		b.MaxInterval = maxDiscoveryInterval
		b.MaxElapsedTime = 0
		_ = backoff.RetryNotify(func() error { return w.tryStart(ctx) }, backoff.WithContext(b, ctx),
			func(err error, next time.Duration) {
				logger.V(4).Info("Strimzi API still not available", "reason", err.Error(), "next", next)
			})
	}()
	return nil
}

// tryStart resolves the served versions and, when found, starts the informers. It returns
// errNotServed or a discovery error while they cannot be started.
func (w *strimziWatch) tryStart(ctx context.Context) error {
	kv, uv, err := w.servedVersions()
	if err != nil {
		if errors.Is(err, errNotServed) {
			w.mu.Lock()
			w.resolved = true
			w.mu.Unlock()
		}
		return err
	}
	kafkas := w.newInformer(strimzi.ResourceKafkas, kv, pruneKafka, nil)
	users := w.newInformer(strimzi.ResourceKafkaUsers, uv, pruneKafkaUser, cache.Indexers{indexUserSecret: indexUserBySecret})
	if err := w.register(kafkas, strimzi.KindKafka); err != nil {
		return backoff.Permanent(err)
	}
	if err := w.register(users, strimzi.KindKafkaUser); err != nil {
		return backoff.Permanent(err)
	}
	go kafkas.RunWithContext(ctx)
	go users.RunWithContext(ctx)
	klog.FromContext(ctx).Info("Watching Strimzi", "kafkaVersion", kv, "kafkaUserVersion", uv)
	w.mu.Lock()
	w.resolved = true
	w.kafkaVersion, w.userVersion = kv, uv
	w.kafkas, w.users = kafkas, users
	w.mu.Unlock()
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), kafkas.HasSynced, users.HasSynced) && w.onServed != nil {
			w.onServed()
		}
	}()
	return nil
}

func (w *strimziWatch) newInformer(resource, version string, prune cache.TransformFunc, indexers cache.Indexers) cache.SharedIndexInformer {
	gvr := schema.GroupVersionResource{Group: strimzi.Group, Version: version, Resource: resource}
	if indexers == nil {
		indexers = cache.Indexers{}
	}
	indexers[cache.NamespaceIndex] = cache.MetaNamespaceIndexFunc
	inf := dynamicinformer.NewFilteredDynamicInformer(w.dynamic, gvr, w.namespace, 0, indexers, nil).Informer()
	_ = inf.SetTransform(prune)
	return inf
}

// servedVersions picks, for Kafka and KafkaUser, the first of v1 and v1beta2 that the cluster serves.
func (w *strimziWatch) servedVersions() (kafkaVersion, userVersion string, err error) {
	for _, v := range []string{strimzi.VersionV1, strimzi.VersionV1beta2} {
		list, err := w.discovery.ServerResourcesForGroupVersion(strimzi.Group + "/" + v)
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return "", "", fmt.Errorf("discovering %s/%s: %w", strimzi.Group, v, err)
		}
		for _, r := range list.APIResources {
			switch r.Name {
			case strimzi.ResourceKafkas:
				if kafkaVersion == "" {
					kafkaVersion = v
				}
			case strimzi.ResourceKafkaUsers:
				if userVersion == "" {
					userVersion = v
				}
			}
		}
	}
	if kafkaVersion == "" || userVersion == "" {
		return "", "", errNotServed
	}
	return kafkaVersion, userVersion, nil
}

// HasSynced is true once discovery has answered and, if Strimzi is served, its informers synced.
func (w *strimziWatch) HasSynced() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if !w.resolved {
		return false
	}
	if w.kafkas == nil {
		return true
	}
	return w.kafkas.HasSynced() && w.users.HasSynced()
}

// strimziState is what a sync sees of Strimzi.
type strimziState int

const (
	strimziMissing strimziState = iota
	strimziStarting
	strimziReady
)

func (w *strimziWatch) state() strimziState {
	w.mu.RLock()
	defer w.mu.RUnlock()
	switch {
	case w.kafkas == nil:
		return strimziMissing
	case !w.kafkas.HasSynced() || !w.users.HasSynced():
		return strimziStarting
	default:
		return strimziReady
	}
}

// get returns a cached object's content, nil when it does not exist.
func get(inf cache.SharedIndexInformer, key cache.ObjectName) map[string]any {
	if inf == nil {
		return nil
	}
	obj, ok, err := inf.GetIndexer().GetByKey(key.String())
	if err != nil || !ok {
		return nil
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	return u.Object
}

func (w *strimziWatch) kafka(key cache.ObjectName) map[string]any {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return get(w.kafkas, key)
}

func (w *strimziWatch) user(key cache.ObjectName) map[string]any {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return get(w.users, key)
}

// usersForSecret returns the KafkaUsers whose credentials Secret is the given one.
func (w *strimziWatch) usersForSecret(secret cache.ObjectName) []cache.ObjectName {
	w.mu.RLock()
	users := w.users
	w.mu.RUnlock()
	if users == nil {
		return nil
	}
	objs, err := users.GetIndexer().ByIndex(indexUserSecret, secret.String())
	if err != nil {
		return nil
	}
	keys := make([]cache.ObjectName, 0, len(objs))
	for _, obj := range objs {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			keys = append(keys, cache.NewObjectName(u.GetNamespace(), u.GetName()))
		}
	}
	return keys
}

// indexUserBySecret indexes a KafkaUser by its credentials Secret: status.secret, or its own name,
// which is what Strimzi names it.
func indexUserBySecret(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	name := u.GetName()
	if s, ok, _ := unstructured.NestedString(u.Object, "status", "secret"); ok && s != "" {
		name = s
	}
	return []string{cache.NewObjectName(u.GetNamespace(), name).String()}, nil
}

// pruneKafka keeps only what strimzi.ParseKafka reads: a Kafka's spec carries the whole broker
// configuration, which kafkalink never needs to hold.
func pruneKafka(obj any) (any, error) {
	return prune(obj, [][]string{{"spec", "kafka", "listeners"}, {"status"}}), nil
}

// pruneKafkaUser keeps only what strimzi.ParseKafkaUser reads; ACLs and quotas can be large and
// there may be thousands of users.
func pruneKafkaUser(obj any) (any, error) {
	return prune(obj, [][]string{{"spec", "authentication"}, {"status"}}), nil
}

func prune(obj any, keep [][]string) any {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj
	}
	out := map[string]any{
		"apiVersion": u.Object["apiVersion"],
		"kind":       u.Object["kind"],
	}
	meta := map[string]any{}
	if m, ok := u.Object["metadata"].(map[string]any); ok {
		for _, k := range []string{"name", "namespace", "uid", "resourceVersion", "generation", "deletionTimestamp"} {
			if v, ok := m[k]; ok {
				meta[k] = v
			}
		}
	}
	out["metadata"] = meta
	for _, path := range keep {
		v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...)
		if err != nil || !found {
			continue
		}
		_ = unstructured.SetNestedField(out, v, path...)
	}
	u.Object = out
	return u
}
