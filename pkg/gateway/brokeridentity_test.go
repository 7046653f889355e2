package gateway

import (
	"bytes"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/proxy/config"
)

// hashedServiceNames are the per-broker Service names of a result, sorted.
func hashedServiceNames(res *Result) []string {
	var out []string
	for _, o := range res.Objects {
		if o.GetKind() == KindService && strings.HasPrefix(o.GetName(), "my-cluster-broker-") {
			out = append(out, o.GetName())
		}
	}
	sort.Strings(out)
	return out
}

// The hash mapping's names survive reconciles: once the generated key Secret exists, another
// fresh key offered by the controller changes nothing. And the operator's per-broker Services
// are named as the proxy names the brokers to clients (the first label of config.BrokerNames'
// host), so a client told a broker's host reaches it through its Service.
func TestHashedBrokerNamesAreStableAndMatchTheProxy(t *testing.T) {
	s := loadCase(t, filepath.Join("testdata", "broker-identity-hash.in.yaml"))
	first := Translate(s)
	var keySecret *corev1.Secret
	for _, o := range first.Objects {
		if o.GetKind() == KindSecret && o.GetName() == BrokerIdentitySecretName("simple") {
			keySecret = &corev1.Secret{}
			if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, keySecret); err != nil {
				t.Fatal(err)
			}
		}
	}
	if keySecret == nil || !bytes.Equal(keySecret.Data[BrokerIdentityKey], s.Env.FreshBrokerKey) {
		t.Fatalf("no key Secret holding the fresh key: %+v", keySecret)
	}
	names := hashedServiceNames(first)
	if len(names) != 3 {
		t.Fatalf("per-broker Services: %v", names)
	}
	for _, vc := range first.Config.VirtualClusters {
		if !strings.HasSuffix(vc.BrokerPattern, ".svc.cluster.local") {
			continue
		}
		bn, err := config.NewBrokerNames(&vc, s.Env.FreshBrokerKey)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for id := int32(0); id < 3; id++ {
			label, _, _ := strings.Cut(bn.Host(id), ".")
			want = append(want, label)
		}
		sort.Strings(want)
		if strings.Join(want, " ") != strings.Join(names, " ") {
			t.Errorf("Services %v, proxy names %v", names, want)
		}
	}

	s.Secrets = append(s.Secrets, keySecret)
	s.Env.FreshBrokerKey = bytes.Repeat([]byte{2}, config.BrokerKeySize)
	if again := hashedServiceNames(Translate(s)); strings.Join(again, " ") != strings.Join(names, " ") {
		t.Errorf("with the key Secret and another fresh key the Services are %v, were %v", again, names)
	}
}

// A gateway held by an error keeps its key Secret, which the controller would otherwise prune
// with withdrawn Secret copies: a new key would rename every hashed broker.
func TestHeldGatewayKeepsItsBrokerKey(t *testing.T) {
	s := loadCase(t, filepath.Join("testdata", "broker-identity-hash-key-kept.in.yaml"))
	s.Gateway.Spec.Infrastructure = &kroxyliciousv1alpha1.GatewayInfrastructure{ParametersRef: &kroxyliciousv1alpha1.LocalParametersReference{
		Group: "kroxylicious.io", Kind: "KafkaGatewayParameters", Name: "missing"}}
	res := Translate(s)
	if !res.Hold {
		t.Fatal("the gateway is not held")
	}
	if !res.KeepCopies[BrokerIdentitySecretName("simple")] {
		t.Errorf("KeepCopies %v lacks the key Secret", res.KeepCopies)
	}
}
