// Package secretcache is the operator's one cache of Secrets at large: every Secret of the
// watched namespaces but the binding Secrets, each kept as small as its readers allow. The
// gateway controller reads it for the Secrets gateways, routes and policies name, and the
// binding controller for route and Gateway listener certificates. One informer serves both, so
// each Secret is cached and watched once.
//
// Of a Secret that no gateway generated, the cache keeps its identity, type and key names, and the
// values of ca.crt and tls.crt only: public certificates, which the binding controller reads.
// Private keys, passwords and tokens never enter it; the gateway controller reads the few values
// it needs by GET. A Secret a gateway generated is kept whole, for drift detection.
package secretcache

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// Informer is the shared factory's Secret informer: every Secret but the binding Secrets (which
// the binding controller caches itself, as digests, and which are half of all Secrets at 5,000
// connections), slimmed before caching. Its transform is set where it is made, so it is the same
// whichever controller asks first, or alone.
func Informer(env controller.Env) cache.SharedIndexInformer {
	return env.Informers.Kube.InformerFor(&corev1.Secret{}, func(kube kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		inf := coreinformers.NewFilteredSecretInformer(kube, env.Informers.Namespace, resync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, notBindingSecrets)
		_ = inf.SetTransform(Slim) // cannot fail before the informer runs
		return inf
	})
}

func notBindingSecrets(o *metav1.ListOptions) {
	o.LabelSelector = wellknown.LabelBinding + "!=" + wellknown.LabelBindingValue
}

// Slim is the cache transform described in the package comment, exported so that controllers'
// test fixtures cache what the informer would. Labels are dropped (no reader uses a foreign
// Secret's), and owners kept only when a gateway controls the Secret: a generated Secret whose
// label was removed by hand still maps back to its gateway.
func Slim(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	s.ManagedFields = nil
	if _, ok := s.Labels[wellknown.LabelGateway]; ok {
		return s, nil
	}
	out := &corev1.Secret{Type: s.Type, ObjectMeta: metav1.ObjectMeta{
		Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion, DeletionTimestamp: s.DeletionTimestamp,
	}}
	if ControllingGateway(s) != nil {
		out.OwnerReferences = s.OwnerReferences
	}
	if len(s.Data) > 0 {
		out.Data = make(map[string][]byte, len(s.Data))
		for k := range s.Data {
			out.Data[k] = nil
		}
		maps.Copy(out.Data, Certificates(s))
	}
	return out, nil
}

// certificateKeys are the entries whose values the cache keeps: public certificates.
var certificateKeys = []string{strimzi.CACertKey, corev1.TLSCertKey}

// Certificates are the public certificates of a Secret, ca.crt and tls.crt, the only values the
// cache keeps of a Secret no gateway generated; nil when it has neither.
func Certificates(s *corev1.Secret) map[string][]byte {
	var out map[string][]byte
	for _, k := range certificateKeys {
		if v, ok := s.Data[k]; ok {
			if out == nil {
				out = map[string][]byte{}
			}
			out[k] = v
		}
	}
	return out
}

// ControllingGateway is the controller reference of an object when a KafkaGateway controls it.
func ControllingGateway(m metav1.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOf(m)
	if ref == nil || ref.Kind != gatewaymodel.KindGateway || ref.APIVersion != kroxyliciousv1alpha1.SchemeGroupVersion.String() {
		return nil
	}
	return ref
}
