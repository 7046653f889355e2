package secretcache

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

func secret(labels map[string]string, owners ...metav1.OwnerReference) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "x", Namespace: "ns", UID: "u", ResourceVersion: "7", Labels: labels, OwnerReferences: owners,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			Annotations:   map[string]string{"big": "annotation"},
		},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"ca.crt": []byte("CA"), "tls.crt": []byte("CRT"), "tls.key": []byte("PRIVATE"), "password": []byte("PW")},
	}
}

func TestSlim(t *testing.T) {
	gatewayOwner := metav1.OwnerReference{APIVersion: kroxyliciousv1alpha1.SchemeGroupVersion.String(), Kind: "KafkaGateway", Name: "gw", Controller: ptr.To(true)}
	userOwner := metav1.OwnerReference{APIVersion: "kafka.strimzi.io/v1beta2", Kind: "KafkaUser", Name: "alice", Controller: ptr.To(true)}

	t.Run("a foreign Secret keeps its identity, type, key names and public certificates", func(t *testing.T) {
		out, _ := Slim(secret(map[string]string{"strimzi.io/cluster": "c"}, userOwner))
		s := out.(*corev1.Secret)
		if string(s.Data["ca.crt"]) != "CA" || string(s.Data["tls.crt"]) != "CRT" {
			t.Errorf("public certificates lost: %q", s.Data)
		}
		for _, k := range []string{"tls.key", "password"} {
			if v, ok := s.Data[k]; !ok || v != nil {
				t.Errorf("%s: %q (key kept: %v), want the name without its value", k, v, ok)
			}
		}
		if s.Name != "x" || s.Namespace != "ns" || s.UID != "u" || s.ResourceVersion != "7" || s.Type != corev1.SecretTypeTLS {
			t.Errorf("lost identity: %+v", s)
		}
		if s.Labels != nil || s.Annotations != nil || s.ManagedFields != nil || s.OwnerReferences != nil {
			t.Errorf("kept metadata no reader uses: %+v", s.ObjectMeta)
		}
	})
	t.Run("a Secret a gateway controls keeps its owners", func(t *testing.T) {
		out, _ := Slim(secret(nil, gatewayOwner))
		if s := out.(*corev1.Secret); len(s.OwnerReferences) != 1 || s.Data["tls.key"] != nil {
			t.Errorf("got %+v", s)
		}
	})
	t.Run("a generated Secret is kept whole, without managed fields", func(t *testing.T) {
		out, _ := Slim(secret(map[string]string{wellknown.LabelGateway: "gw"}))
		if s := out.(*corev1.Secret); string(s.Data["tls.key"]) != "PRIVATE" || s.ManagedFields != nil || s.Annotations["big"] == "" {
			t.Errorf("got %+v", s)
		}
	})
	t.Run("anything else passes through", func(t *testing.T) {
		if out, err := Slim("tombstone"); err != nil || out != "tombstone" {
			t.Errorf("got %v, %v", out, err)
		}
	})
}

// TestOneInformerForEveryReader: every caller gets the same informer, which excludes binding
// Secrets and caches the slim form, whoever asked first.
func TestOneInformerForEveryReader(t *testing.T) {
	kube := fake.NewClientset(secret(nil))
	env := controller.Env{Informers: controller.Informers{Kube: kubeinformers.NewSharedInformerFactory(kube, 0)}}
	first, second := Informer(env), Informer(env)
	if first != second {
		t.Fatal("two Secret informers for one factory")
	}
	var opts metav1.ListOptions
	notBindingSecrets(&opts)
	if opts.LabelSelector != "kafkalink.io/binding!=kafkaconnection" {
		t.Errorf("selector %q", opts.LabelSelector)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	env.Informers.Kube.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), first.HasSynced) {
		t.Fatal("no sync")
	}
	obj, ok, err := first.GetStore().GetByKey("ns/x")
	if err != nil || !ok {
		t.Fatalf("not cached: %v", err)
	}
	if s := obj.(*corev1.Secret); s.Data["tls.key"] != nil || string(s.Data["ca.crt"]) != "CA" {
		t.Errorf("cached %q", s.Data)
	}
}

// TestCertificatesAreTheOnlyValuesKept: of a Secret at large, ca.crt and tls.crt are read (by
// the binding controller) and kept (by Slim), and nothing else, even where there are more keys.
func TestCertificatesAreTheOnlyValuesKept(t *testing.T) {
	in := &corev1.Secret{Data: map[string][]byte{"ca.crt": []byte("ca"), "tls.crt": []byte("crt"), "tls.key": nil, "keystore.p12": nil}}
	out := Certificates(in)
	keys := slices.Sorted(maps.Keys(out))
	if !slices.Equal(keys, []string{"ca.crt", "tls.crt"}) || string(out["ca.crt"]) != "ca" {
		t.Errorf("read %v", out)
	}
	if Certificates(&corev1.Secret{Data: map[string][]byte{"password": nil}}) != nil {
		t.Error("values read from a Secret without certificates")
	}
}
