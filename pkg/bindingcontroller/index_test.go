package bindingcontroller

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kafkav1beta2listers "github.com/kafkalink/kafkalink/generated/listers/kafka/v1beta2"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
)

// The one-value-per-object indexes hold only the objects whose value does not follow from their
// name; their readers find the others by key. These tests pin that both halves are found.

func TestUncontrolledBindingSecretMapsToTheConnectionsThatWantIt(t *testing.T) {
	withSecretName := func(name string) func(*kafkav1beta2.KafkaConnection) {
		return func(c *kafkav1beta2.KafkaConnection) { c.Spec.SecretName = name }
	}
	own := newConnection()                            // apps/app, binds to Secret app
	renamed := newConnection(withSecretName("creds")) // binds to Secret creds
	renamed.Name = "other"
	away := newConnection(withSecretName("elsewhere")) // named like a Secret it does not want
	away.Name = "creds"
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{indexSecretName: indexConnectionSecretName})
	for _, c := range []*kafkav1beta2.KafkaConnection{own, renamed, away} {
		if err := idx.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	r := &reconciler{connIndex: idx, connections: kafkav1beta2listers.NewKafkaConnectionLister(idx)}
	if got := sorted(idx.ListIndexFuncValues(indexSecretName)); !slices.Equal(got, []string{"apps/creds", "apps/elsewhere"}) {
		t.Errorf("index values %v, want only the connections that set spec.secretName", got)
	}
	for name, want := range map[string][]string{"app": {"app"}, "creds": {"other"}, "elsewhere": {"creds"}, "nobody": nil} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}}
		var got []string
		for _, k := range r.bindingSecretToConnection(s) {
			got = append(got, k.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Secret %s maps to %v, want %v", name, got, want)
		}
	}
}

func TestUserSecretMapsToItsUsers(t *testing.T) {
	user := func(name, secret string) *strimzi.CachedKafkaUser {
		u := &strimzi.CachedKafkaUser{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, User: &strimzi.KafkaUser{}}
		u.User.Status.Secret = secret
		return u
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{indexUserSecret: indexUserBySecret})
	for _, u := range []*strimzi.CachedKafkaUser{
		user("alice", ""),           // Secret alice, by Strimzi's naming
		user("bob", "bob"),          // Secret bob, named in status
		user("carol", "shared"),     // Secret shared
		user("shared", "elsewhere"), // named like a Secret that is not its own
	} {
		if err := idx.Add(u); err != nil {
			t.Fatal(err)
		}
	}
	if got := sorted(idx.ListIndexFuncValues(indexUserSecret)); !slices.Equal(got, []string{"ns/elsewhere", "ns/shared"}) {
		t.Errorf("index values %v, want only users whose Secret is named otherwise", got)
	}
	w := &strimziWatch{users: controller.NewServedOptionalInformer("KafkaUser", idx)}
	for secret, want := range map[string][]string{"alice": {"alice"}, "bob": {"bob"}, "shared": {"carol"}, "elsewhere": {"shared"}, "nobody": nil} {
		var got []string
		for _, k := range w.usersForSecret(cache.NewObjectName("ns", secret)) {
			got = append(got, k.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Secret %s maps to users %v, want %v", secret, got, want)
		}
	}
}

func TestOwnBindingsFindsSecretsByNameAndByIndex(t *testing.T) {
	conn := newConnection() // apps/app, UID conn-uid
	named := func(name string, owner string) *corev1.Secret {
		s := newBindingSecret("conn-uid", nil)
		s.Name, s.OwnerReferences[0].Name = name, owner
		return s
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{indexBindingController: indexSecretByController})
	for _, s := range []*corev1.Secret{named("app", "app"), named("old", "app")} {
		if err := idx.Add(cached(t, s)); err != nil {
			t.Fatal(err)
		}
	}
	if got := idx.ListIndexFuncValues(indexBindingController); !slices.Equal(got, []string{"conn-uid"}) {
		t.Errorf("index values %v", got)
	}
	if keys, _ := idx.IndexKeys(indexBindingController, "conn-uid"); !slices.Equal(keys, []string{"apps/old"}) {
		t.Errorf("indexed %v, want only the Secret not named like its connection", keys)
	}
	r := &reconciler{bindingIndex: idx}
	var got []string
	for _, s := range r.ownBindings(conn) {
		got = append(got, s.Name)
	}
	if !slices.Equal(got, []string{"app", "old"}) {
		t.Errorf("ownBindings = %v, want app (by key) and old (by index)", got)
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
