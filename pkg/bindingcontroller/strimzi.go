package bindingcontroller

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// strimziWatch watches Strimzi's Kafkas and KafkaUsers, each in the first of kafka.strimzi.io/v1
// and v1beta2 the cluster serves, through optional informers (see package controller): Strimzi may
// be installed after the operator. Until it is, connections report StrimziNotInstalled; once it is
// served and the caches synced, every connection is reconciled again.
type strimziWatch struct {
	kafkas, users *controller.OptionalInformer
}

// newStrimziWatch makes the KafkaUser informer, takes the process's shared Kafka informer
// (controller.Informers.Kafkas, which the gateway controller reads too), and adds the controller's
// handlers and callback; start starts them.
func newStrimziWatch(kafkas *controller.OptionalInformer, dyn dynamic.Interface, disc discovery.DiscoveryInterface, namespace string, onServed func(),
	handler func(kind string) cache.ResourceEventHandler) (*strimziWatch, error) {
	w := &strimziWatch{
		kafkas: kafkas,
		users: controller.NewOptionalInformer(controller.OptionalConfig{What: "Strimzi KafkaUser", GVRs: strimzi.GVRs(strimzi.ResourceKafkaUsers),
			Namespace: namespace, Dynamic: dyn, Discovery: disc, Transform: strimzi.PruneKafkaUser,
			Indexers: cache.Indexers{indexUserSecret: indexUserBySecret}}),
	}
	for kind, o := range map[string]*controller.OptionalInformer{strimzi.KindKafka: w.kafkas, strimzi.KindKafkaUser: w.users} {
		if err := o.AddEventHandler(handler(kind)); err != nil {
			return nil, err
		}
		o.OnServed(onServed)
	}
	return w, nil
}

// start checks discovery once, so a running Strimzi is watched from the first sync and
// connections never flap through StrimziNotInstalled at start-up, then keeps checking in the
// background while Strimzi is missing.
func (w *strimziWatch) start(ctx context.Context) {
	w.kafkas.Start(ctx) // shared: a second Start does nothing
	w.users.Start(ctx)
}

// HasSynced is true once discovery has answered and, if Strimzi was served then, its informers
// synced or were refused by the API server (a refusal is reported per connection: readDenied).
func (w *strimziWatch) HasSynced() bool {
	return syncedOrDenied(w.kafkas.HasSynced, w.kafkas.ReadDenied)() && syncedOrDenied(w.users.HasSynced, w.users.ReadDenied)()
}

// strimziState is what a sync sees of Strimzi.
type strimziState int

const (
	strimziMissing strimziState = iota
	strimziStarting
	strimziReady
)

func (w *strimziWatch) state() strimziState {
	switch {
	case !w.kafkas.Served() || !w.users.Served():
		return strimziMissing
	case !w.kafkas.Ready() && w.kafkas.ReadDenied() == nil, !w.users.Ready() && w.users.ReadDenied() == nil:
		// A refused informer is not waited for: readDenied reports it to the connections
		// that read it, and the others go on.
		return strimziStarting
	default:
		return strimziReady
	}
}

// get returns a cached object's content, nil when it does not exist or is not cached.
func get(o *controller.OptionalInformer, key cache.ObjectName) map[string]any {
	idx := o.Indexer()
	if idx == nil {
		return nil
	}
	obj, ok, err := idx.GetByKey(key.String())
	if err != nil || !ok {
		return nil
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	return u.Object
}

func (w *strimziWatch) kafka(key cache.ObjectName) map[string]any { return get(w.kafkas, key) }

// user returns a cached KafkaUser as it was parsed: nil and no error when it does not exist or
// is not cached, nil and the reason when it could not be read.
func (w *strimziWatch) user(key cache.ObjectName) (*strimzi.KafkaUser, error) {
	idx := w.users.Indexer()
	if idx == nil {
		return nil, nil
	}
	obj, ok, err := idx.GetByKey(key.String())
	if err != nil || !ok {
		return nil, nil
	}
	if u, ok := obj.(*strimzi.CachedKafkaUser); ok {
		return u.User, u.Err
	}
	return nil, nil
}

// usersForSecret returns the KafkaUsers whose credentials Secret is the given one: the user of
// the Secret's name, whose Secret Strimzi names like it, and those the index holds, whose
// status names another.
func (w *strimziWatch) usersForSecret(secret cache.ObjectName) []cache.ObjectName {
	idx := w.users.Indexer()
	if idx == nil {
		return nil
	}
	keys := controller.KeysByIndex(idx, indexUserSecret, secret.String())
	if obj, ok, err := idx.GetByKey(secret.String()); err == nil && ok {
		if u, ok := obj.(*strimzi.CachedKafkaUser); ok && userSecretName(u) == secret.Name {
			keys = append(keys, secret)
		}
	}
	return keys
}

// userSecretName is the name of a KafkaUser's credentials Secret: status.secret, or the user's
// own name, which is what Strimzi names it.
func userSecretName(u *strimzi.CachedKafkaUser) string {
	if u.User != nil && u.User.Status.Secret != "" {
		return u.User.Status.Secret
	}
	return u.Name
}

// indexUserBySecret indexes a KafkaUser by its credentials Secret when that is not named like the
// user (see usersForSecret).
func indexUserBySecret(obj any) ([]string, error) {
	u, ok := obj.(*strimzi.CachedKafkaUser)
	if !ok {
		return nil, nil
	}
	if name := userSecretName(u); name != u.Name {
		return []string{cache.NewObjectName(u.Namespace, name).String()}, nil
	}
	return nil, nil
}
