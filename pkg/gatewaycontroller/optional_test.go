package gatewaycontroller

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gateway"
	"github.com/kafkalink/kafkalink/pkg/gatewaymodel"
)

// The controller tells the translator whether the ReferenceGrant API is served: without it, a
// route's RefNotPermitted condition about a missing ReferenceGrant says that the API is not
// installed; with it (and no grant), the condition does not.
func TestGrantAPIServedReachesTheTranslator(t *testing.T) {
	for _, served := range []bool{false, true} {
		f := newFixture(t)
		if served {
			f.c.grants = controller.NewServedOptionalInformer("ReferenceGrant", cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
		}
		f.add(newGateway("gw"), newCertSecret(t, "cert"), newRoute("route", "gw", func(r *kroxyliciousv1alpha1.KafkaRoute) {
			r.Spec.ParentRefs[0].Rules[0].BackendRefs[0].Namespace = ptr.To[kroxyliciousv1alpha1.Namespace]("other")
		}))
		f.sync("gw")
		route, err := f.kafkalink.KroxyliciousV1alpha1().KafkaRoutes(testNamespace).Get(context.Background(), "route", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, p := range route.Status.Parents {
			for _, c := range p.Conditions {
				if c.Reason != gateway.ReasonRefNotPermitted {
					continue
				}
				found = true
				if noted := strings.HasSuffix(c.Message, gatewaymodel.GrantAPIMissing); noted == served {
					t.Errorf("API served %v: message %q", served, c.Message)
				}
			}
		}
		if !found {
			t.Fatalf("API served %v: no RefNotPermitted condition: %+v", served, route.Status.Parents)
		}
	}
}
