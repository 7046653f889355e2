package gatewaycontroller

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// Cache transforms. The gateway controller watches every Service, Secret, ConfigMap and
// Deployment of the watched namespaces: Services and Secrets because routes and gateways refer to
// them by name, ConfigMaps and Deployments to see generated objects and to never take over
// someone else's object of the same name. They run before objects are cached, so the operator's
// memory grows with what it uses, not with everything the cluster holds.
//
// Secrets come from the operator's shared Secret cache (pkg/secretcache), which holds no private
// values. The few Secrets whose values the translator reads (listener and client key pairs, to
// check them, and Secrets copied into the gateway's namespace) are fetched by GET when a gateway
// names them and kept in secretData, keyed by resourceVersion, so a changed Secret is fetched
// again and an unchanged one never is.

// slimObject drops managed fields from every object, and keeps of ConfigMaps and Deployments that
// no gateway generated only the metadata the foreign-name check reads.
func slimObject(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		if !generated(o) {
			return &corev1.ConfigMap{ObjectMeta: foreignMeta(o.ObjectMeta)}, nil
		}
	case *appsv1.Deployment:
		if !generated(o) {
			return &appsv1.Deployment{ObjectMeta: foreignMeta(o.ObjectMeta)}, nil
		}
	}
	return obj, nil
}

// fetched holds the values of objects whose cache keeps none (Secrets, ConfigMaps), fetched by
// GET, each with the resourceVersion it was read at: a changed object is fetched again and an
// unchanged one never is.
type fetched[T metav1.Object] struct {
	// fetch GETs an object and keeps what the controller reads of it.
	fetch func(ctx context.Context, namespace, name string) (T, error)
	mu    sync.Mutex
	m     map[types.NamespacedName]T
}

// get returns the object with its values for the cached (slim) one: from memory when the
// resourceVersion matches, else by GET. ok is false when it no longer exists.
func (d *fetched[T]) get(ctx context.Context, slim metav1.Object) (obj T, ok bool, err error) {
	key := types.NamespacedName{Namespace: slim.GetNamespace(), Name: slim.GetName()}
	d.mu.Lock()
	have, cached := d.m[key]
	d.mu.Unlock()
	if cached && have.GetResourceVersion() == slim.GetResourceVersion() {
		return have, true, nil
	}
	full, err := d.fetch(ctx, key.Namespace, key.Name)
	if apierrors.IsNotFound(err) {
		d.forget(key)
		return obj, false, nil
	}
	if err != nil {
		return obj, false, err
	}
	d.mu.Lock()
	d.m[key] = full
	d.mu.Unlock()
	return full, true, nil
}

func (d *fetched[T]) forget(key types.NamespacedName) {
	d.mu.Lock()
	delete(d.m, key)
	d.mu.Unlock()
}

// onDelete drops the values of a deleted object.
func (d *fetched[T]) onDelete(obj any) {
	if m, ok := controller.MetaOf(obj); ok {
		d.forget(types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()})
	}
}

// sweep drops the values of every object that used no longer reports as named (by a gateway, a
// policy or a filter), so an object that stops being referenced leaves memory.
func (d *fetched[T]) sweep(used func(key string) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.m {
		if !used(k.String()) {
			delete(d.m, k)
		}
	}
}

// secretData holds the values of the Secrets gateways read.
type secretData struct{ fetched[*corev1.Secret] }

func newSecretData(kube kubernetes.Interface) *secretData {
	d := &secretData{}
	d.m = map[types.NamespacedName]*corev1.Secret{}
	d.fetch = func(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
		full, err := kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return &corev1.Secret{ObjectMeta: foreignMeta(full.ObjectMeta), Type: full.Type, Data: full.Data}, nil
	}
	return d
}

// get returns the Secret with its values, nil when it no longer exists.
func (d *secretData) get(ctx context.Context, slim *corev1.Secret) (*corev1.Secret, error) {
	full, _, err := d.fetched.get(ctx, slim)
	return full, err
}

// configMapData holds the values of the ConfigMaps filters read.
type configMapData struct{ fetched[*corev1.ConfigMap] }

func newConfigMapData(kube kubernetes.Interface) *configMapData {
	d := &configMapData{}
	d.m = map[types.NamespacedName]*corev1.ConfigMap{}
	d.fetch = func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
		full, err := kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return &corev1.ConfigMap{ObjectMeta: foreignMeta(full.ObjectMeta), Data: full.Data, BinaryData: full.BinaryData}, nil
	}
	return d
}

// get returns the ConfigMap with its values, nil when it no longer exists. A generated
// ConfigMap is cached whole.
func (d *configMapData) get(ctx context.Context, slim *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	if slim.Data != nil || slim.BinaryData != nil {
		return slim, nil
	}
	full, _, err := d.fetched.get(ctx, slim)
	return full, err
}

func generated(m metav1.Object) bool {
	_, ok := m.GetLabels()[wellknown.LabelGateway]
	return ok
}

// foreignMeta is what the controller reads of an object it did not generate: its identity,
// labels and owners.
func foreignMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Labels: m.Labels, OwnerReferences: m.OwnerReferences, DeletionTimestamp: m.DeletionTimestamp,
	}
}
