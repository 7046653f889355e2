package bindingcontroller

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	kroxyliciousv1alpha1listers "github.com/kafkalink/kafkalink/generated/listers/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/binding"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gateway"
)

// M8: a tenant's gateway names, as its listener certificate, a Secret of another namespace it
// has no ReferenceGrant for. A KafkaConnection through the tenant's route must not receive that
// Secret's ca.crt, and must get the same message whether the Secret exists or not.
func TestRouteCAOnlyFromSecretsTheGatewayMayUse(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "victim CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	build := func(withVictimSecret, withGrant bool) (binding.Result, *binding.Failure) {
		idx := func() cache.Indexer {
			return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		}
		routes, gateways, params, secrets, grants := idx(), idx(), idx(), idx(), idx()
		section := kroxyliciousv1alpha1.SectionName("tls")
		victim := kroxyliciousv1alpha1.Namespace("victims")
		_ = gateways.Add(&kroxyliciousv1alpha1.KafkaGateway{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "gw"},
			Spec: kroxyliciousv1alpha1.KafkaGatewaySpec{Listeners: []kroxyliciousv1alpha1.Listener{{Name: "tls", Port: 9092, Protocol: kroxyliciousv1alpha1.ProtocolKafkaTLS,
				TLS: &kroxyliciousv1alpha1.ListenerTLSConfig{CertificateRefs: []kroxyliciousv1alpha1.SecretObjectReference{{Name: "ca-holder", Namespace: &victim}}}}}}})
		_ = routes.Add(&kroxyliciousv1alpha1.KafkaRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "r", Generation: 1},
			Spec: kroxyliciousv1alpha1.KafkaRouteSpec{ParentRefs: []kroxyliciousv1alpha1.KafkaRouteParentReference{{
				Name: "gw", SectionName: &section, Hostnames: []kroxyliciousv1alpha1.PercentHostname{"c-%.svc.cluster.local"},
				Brokers: []kroxyliciousv1alpha1.BrokerTopology{{AdvertisedBrokerIds: []int32{0}}}}}},
			Status: kroxyliciousv1alpha1.RouteStatus{Parents: []kroxyliciousv1alpha1.RouteParentStatus{{
				ParentRef:      kroxyliciousv1alpha1.ParentReference{Name: "gw", SectionName: &section},
				ControllerName: gateway.ControllerName,
				Conditions:     []metav1.Condition{{Type: gateway.ConditionAccepted, Status: metav1.ConditionTrue, ObservedGeneration: 1}},
			}}}})
		if withVictimSecret {
			_ = secrets.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "victims", Name: "ca-holder"}, Data: map[string][]byte{"ca.crt": []byte(caPEM)}})
		}
		if withGrant {
			_ = grants.Add(&gatewayv1beta1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "victims", Name: "g"},
				Spec: gatewayv1beta1.ReferenceGrantSpec{
					From: []gatewayv1beta1.ReferenceGrantFrom{{Group: "kroxylicious.io", Kind: "KafkaGateway", Namespace: "tenant"}},
					To:   []gatewayv1beta1.ReferenceGrantTo{{Group: "", Kind: "Secret"}},
				}})
		}
		r := &reconciler{
			grants: controller.NewServedOptionalInformer("ReferenceGrant", grants),
			route: &routeWatch{
				routes: kroxyliciousv1alpha1listers.NewKafkaRouteLister(routes), routeIdx: routes,
				gateways: kroxyliciousv1alpha1listers.NewKafkaGatewayLister(gateways), gatewayIdx: gateways,
				params:  kroxyliciousv1alpha1listers.NewKafkaGatewayParametersLister(params),
				secrets: corelisters.NewSecretLister(secrets), clusterDomain: "svc.cluster.local",
			},
		}
		conn := &kafkav1beta2.KafkaConnection{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "c"},
			Spec: kafkav1beta2.KafkaConnectionSpec{Kafka: kafkav1beta2.KafkaReference{Kind: "KafkaRoute", Name: "r"}}}
		in, f, _ := r.gatherRoute(conn)
		if f != nil {
			return binding.Result{}, f
		}
		return binding.BuildRoute(in)
	}

	res, withSecret := build(true, false)
	if withSecret == nil {
		t.Fatalf("the binding was built from another namespace's Secret without a grant: %v", res)
	}
	_, without := build(false, false)
	if without == nil || withSecret.Reason != without.Reason || withSecret.Message != without.Message {
		t.Errorf("an existing Secret and a missing one read differently:\n%+v\n%+v", withSecret, without)
	}
	if strings.Contains(withSecret.Message, "has no") {
		t.Errorf("message reveals the Secret: %s", withSecret.Message)
	}
	// With a ReferenceGrant the gateway may use the Secret, and so the binding reads its CA.
	if res, granted := build(true, true); granted != nil || !strings.Contains(string(res.Data["ssl.truststore.crt"]), caPEM) {
		t.Errorf("with a grant the Secret's CA is not in the binding: %+v", granted)
	}
}
