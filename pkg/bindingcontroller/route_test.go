package bindingcontroller

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
)

func TestGrantAllowsRoute(t *testing.T) {
	from := gatewayv1beta1.ReferenceGrantFrom{Group: "kafka.strimzi.io", Kind: "KafkaConnection", Namespace: "apps"}
	grant := func(f gatewayv1beta1.ReferenceGrantFrom, to ...gatewayv1beta1.ReferenceGrantTo) *gatewayv1beta1.ReferenceGrant {
		return &gatewayv1beta1.ReferenceGrant{Spec: gatewayv1beta1.ReferenceGrantSpec{From: []gatewayv1beta1.ReferenceGrantFrom{f}, To: to}}
	}
	routes := gatewayv1beta1.ReferenceGrantTo{Group: "kroxylicious.io", Kind: "KafkaRoute"}
	cases := map[string]struct {
		grant *gatewayv1beta1.ReferenceGrant
		want  bool
	}{
		"a grant to every KafkaRoute allows":        {grant(from, routes), true},
		"a grant to this KafkaRoute by name allows": {grant(from, gatewayv1beta1.ReferenceGrantTo{Group: "kroxylicious.io", Kind: "KafkaRoute", Name: ptr(gatewayv1beta1.ObjectName("my-route"))}), true},
		"a grant to another KafkaRoute does not":    {grant(from, gatewayv1beta1.ReferenceGrantTo{Group: "kroxylicious.io", Kind: "KafkaRoute", Name: ptr(gatewayv1beta1.ObjectName("other"))}), false},
		"a grant to KafkaUsers does not":            {grant(from, gatewayv1beta1.ReferenceGrantTo{Group: "kafka.strimzi.io", Kind: "KafkaUser"}), false},
		"a grant from another namespace does not":   {grant(gatewayv1beta1.ReferenceGrantFrom{Group: "kafka.strimzi.io", Kind: "KafkaConnection", Namespace: "elsewhere"}, routes), false},
		"a grant to KafkaRoutes' routes does not":   {grant(gatewayv1beta1.ReferenceGrantFrom{Group: "kroxylicious.io", Kind: "KafkaRoute", Namespace: "apps"}, routes), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := grantAllowsRoute(tc.grant, "apps", "my-route"); got != tc.want {
				t.Errorf("grantAllowsRoute = %t, want %t", got, tc.want)
			}
		})
	}
}

// A change to a certificate Secret, a gateway, its parameters or a grant maps to exactly the
// route connections that read it, through the indexes.
func TestRouteDependenciesMapToTheirConnections(t *testing.T) {
	conns := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		indexRoute: indexConnectionRoute, indexRouteCASecret: indexConnectionCASecret, indexRouteGrantNamespace: indexConnectionRouteGrantNamespace,
	})
	routes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{indexRouteGateway: indexRouteByGateway})
	gateways := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		indexGatewayCertificate: indexGatewayByCertificate, indexGatewayParameters: indexGatewayByParameters,
	})
	r := &reconciler{connIndex: conns, route: &routeWatch{routeIdx: routes, gatewayIdx: gateways}}

	conn := func(ns, name, kind, target, targetNS, caSecret string) *kafkav1beta2.KafkaConnection {
		c := &kafkav1beta2.KafkaConnection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: kafkav1beta2.KafkaConnectionSpec{Kafka: kafkav1beta2.KafkaReference{Kind: kind, Name: target, Namespace: targetNS}}}
		if caSecret != "" {
			c.Spec.Kafka.CASecret = &kafkav1beta2.SecretReference{Name: caSecret}
		}
		return c
	}
	for _, c := range []*kafkav1beta2.KafkaConnection{
		conn("apps", "via-route", "KafkaRoute", "my-route", "", ""),
		conn("apps", "via-route-own-ca", "KafkaRoute", "my-route", "", "custom-ca"),
		conn("other", "cross", "KafkaRoute", "my-route", "apps", ""),
		conn("apps", "direct", "Kafka", "my-route", "", ""), // a Kafka that happens to share the name
		conn("apps", "elsewhere", "KafkaRoute", "other-route", "", ""),
	} {
		_ = conns.Add(c)
	}
	section := kroxyliciousv1alpha1.SectionName("tls")
	_ = routes.Add(&kroxyliciousv1alpha1.KafkaRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "my-route"},
		Spec: kroxyliciousv1alpha1.KafkaRouteSpec{ParentRefs: []kroxyliciousv1alpha1.KafkaRouteParentReference{{Name: "simple", SectionName: &section}}}})
	_ = routes.Add(&kroxyliciousv1alpha1.KafkaRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "other-route"},
		Spec: kroxyliciousv1alpha1.KafkaRouteSpec{ParentRefs: []kroxyliciousv1alpha1.KafkaRouteParentReference{{Name: "other-gateway"}}}})
	_ = gateways.Add(&kroxyliciousv1alpha1.KafkaGateway{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "simple"},
		Spec: kroxyliciousv1alpha1.KafkaGatewaySpec{
			Infrastructure: &kroxyliciousv1alpha1.GatewayInfrastructure{ParametersRef: &kroxyliciousv1alpha1.LocalParametersReference{
				Group: "kroxylicious.io", Kind: "KafkaGatewayParameters", Name: "params"}},
			Listeners: []kroxyliciousv1alpha1.Listener{{Name: "tls", Port: 9092, TLS: &kroxyliciousv1alpha1.ListenerTLSConfig{
				CertificateRefs: []kroxyliciousv1alpha1.SecretObjectReference{{Name: "my-cert"}}}}},
		}})

	objAt := func(ns, name string) metav1.Object { return &metav1.ObjectMeta{Namespace: ns, Name: name} }
	names := func(keys []cache.ObjectName) []string {
		out := make([]string, 0, len(keys))
		for _, k := range keys {
			out = append(out, k.String())
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	onRoute := []string{"apps/via-route", "apps/via-route-own-ca", "other/cross"}
	cases := map[string]struct {
		got  []cache.ObjectName
		want []string
	}{
		"the route":                         {r.routesToConnections([]cache.ObjectName{cache.NewObjectName("apps", "my-route")}), onRoute},
		"the gateway":                       {r.gatewayToConnections(objAt("apps", "simple")), onRoute},
		"the gateway's parameters":          {r.parametersToConnections(objAt("apps", "params")), onRoute},
		"the listener's certificate Secret": {r.certificateSecretToConnections(objAt("apps", "my-cert")), onRoute},
		"a connection's CA Secret":          {r.certificateSecretToConnections(objAt("apps", "custom-ca")), []string{"apps/via-route-own-ca"}},
		"a grant in the route's namespace":  {r.routeGrantToConnections(objAt("apps", "any")), []string{"other/cross"}},
		"an unrelated Secret":               {r.certificateSecretToConnections(objAt("apps", "unrelated")), []string{}},
		"a gateway in another namespace":    {r.gatewayToConnections(objAt("other", "simple")), []string{}},
		"a deleted gateway (tombstone)": {
			r.gatewayToConnections(cache.DeletedFinalStateUnknown{Key: "apps/simple", Obj: &kroxyliciousv1alpha1.KafkaGateway{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "simple"}}}),
			onRoute,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := names(tc.got); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
