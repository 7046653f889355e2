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

// secretData holds the values of the Secrets gateways read, fetched by GET, each with the
// resourceVersion it was read at.
type secretData struct {
	kube kubernetes.Interface
	mu   sync.Mutex
	m    map[types.NamespacedName]*corev1.Secret
}

func newSecretData(kube kubernetes.Interface) *secretData {
	return &secretData{kube: kube, m: map[types.NamespacedName]*corev1.Secret{}}
}

// get returns the Secret with its values for the cached (slim) Secret: from memory when the
// resourceVersion matches, else by GET. nil when it no longer exists.
func (d *secretData) get(ctx context.Context, slim *corev1.Secret) (*corev1.Secret, error) {
	key := types.NamespacedName{Namespace: slim.Namespace, Name: slim.Name}
	d.mu.Lock()
	have := d.m[key]
	d.mu.Unlock()
	if have != nil && have.ResourceVersion == slim.ResourceVersion {
		return have, nil
	}
	full, err := d.kube.CoreV1().Secrets(slim.Namespace).Get(ctx, slim.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		d.forget(key)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	full = &corev1.Secret{ObjectMeta: foreignMeta(full.ObjectMeta), Type: full.Type, Data: full.Data}
	d.mu.Lock()
	d.m[key] = full
	d.mu.Unlock()
	return full, nil
}

func (d *secretData) forget(key types.NamespacedName) {
	d.mu.Lock()
	delete(d.m, key)
	d.mu.Unlock()
}

// onDelete drops the values of a deleted Secret.
func (d *secretData) onDelete(obj any) {
	if m, ok := controller.MetaOf(obj); ok {
		d.forget(types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()})
	}
}

// sweep drops the values of every Secret that used no longer reports as named by a gateway or a
// policy, so a Secret that stops being referenced leaves memory.
func (d *secretData) sweep(used func(key string) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.m {
		if !used(k.String()) {
			delete(d.m, k)
		}
	}
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

// configMapData holds the values of the ConfigMaps filters read, fetched by GET, each with the
// resourceVersion it was read at, as secretData does for Secrets.
type configMapData struct {
	kube kubernetes.Interface
	mu   sync.Mutex
	m    map[types.NamespacedName]*corev1.ConfigMap
}

func newConfigMapData(kube kubernetes.Interface) *configMapData {
	return &configMapData{kube: kube, m: map[types.NamespacedName]*corev1.ConfigMap{}}
}

// get returns the ConfigMap with its values for the cached (slim) one: from memory when the
// resourceVersion matches, else by GET. nil when it no longer exists.
func (d *configMapData) get(ctx context.Context, slim *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	if slim.Data != nil || slim.BinaryData != nil {
		return slim, nil // cached whole
	}
	key := types.NamespacedName{Namespace: slim.Namespace, Name: slim.Name}
	d.mu.Lock()
	have := d.m[key]
	d.mu.Unlock()
	if have != nil && have.ResourceVersion == slim.ResourceVersion {
		return have, nil
	}
	full, err := d.kube.CoreV1().ConfigMaps(slim.Namespace).Get(ctx, slim.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		d.mu.Lock()
		delete(d.m, key)
		d.mu.Unlock()
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	full = &corev1.ConfigMap{ObjectMeta: foreignMeta(full.ObjectMeta), Data: full.Data, BinaryData: full.BinaryData}
	d.mu.Lock()
	d.m[key] = full
	d.mu.Unlock()
	return full, nil
}

// sweep drops the values of every ConfigMap no filter names any more.
func (d *configMapData) sweep(used func(key string) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.m {
		if !used(k.String()) {
			delete(d.m, k)
		}
	}
}
