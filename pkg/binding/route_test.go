package binding

import (
	"bytes"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/internal/golden"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
)

// The seed's in-cluster example: a gateway with two listeners in namespace apps, its parameters,
// and a route attached to the "tls" listener with an in-cluster and an external hostname,
// accepted by the gateway controller.
const (
	routeGateway = `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGateway
metadata: {name: simple, namespace: apps}
spec:
  infrastructure:
    parametersRef: {group: kroxylicious.io, kind: KafkaGatewayParameters, name: params}
  listeners:
  - name: tls
    port: 9092
    protocol: kroxylicious.io/kafka-tls
    tls: {certificateRefs: [{kind: Secret, name: my-cert}]}
  - name: alpha
    port: 9192
    protocol: kroxylicious.io/kafka-tls
    tls: {certificateRefs: [{kind: Secret, name: alpha-cert}]}
`
	routeParams = `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaGatewayParameters
metadata: {name: params, namespace: apps}
spec:
  ingressDomains: [apps.example.com]
`
	routeRoute = `
apiVersion: kroxylicious.io/v1alpha1
kind: KafkaRoute
metadata: {name: my-route, namespace: apps, generation: 3}
spec:
  parentRefs:
  - name: simple
    sectionName: tls
    brokers: [{advertisedBrokerIds: [0, 1, 2]}]
    hostnames: [my-cluster-%.example.org, my-cluster-%.svc.cluster.local, other-%.apps.svc.cluster.local, my-cluster-%.apps.example.com]
    rules: [{name: all, backendRefs: [{kind: Service, namespace: kafka, name: my-cluster-kafka-bootstrap, port: 9093}]}]
status:
  parents:
  - parentRef: {group: kroxylicious.io, kind: KafkaGateway, name: simple, sectionName: tls}
    controllerName: kafkalink.io/gateway-controller
    conditions:
    - {type: Accepted, status: "True", reason: Accepted, observedGeneration: 3, lastTransitionTime: "2025-01-01T00:00:00Z"}
`
)

func decode[T any](t testing.TB, doc string) *T {
	t.Helper()
	out := new(T)
	if err := yaml.UnmarshalStrict([]byte(doc), out); err != nil {
		t.Fatalf("test YAML: %v", err)
	}
	return out
}

// routeFixture is a complete, valid input; cases change one thing.
func routeFixture(t testing.TB, p *pki) RouteInput {
	gw := decode[kroxyliciousv1alpha1.KafkaGateway](t, routeGateway)
	return RouteInput{
		RouteKey:      "apps/my-route",
		Route:         decode[kroxyliciousv1alpha1.KafkaRoute](t, routeRoute),
		Gateways:      map[string]*kroxyliciousv1alpha1.KafkaGateway{"simple": gw},
		Parameters:    map[string]*kroxyliciousv1alpha1.KafkaGatewayParameters{"params": decode[kroxyliciousv1alpha1.KafkaGatewayParameters](t, routeParams)},
		ClusterDomain: "svc.cluster.local",
		Secrets: map[string]*SecretData{
			// As cert-manager writes it; tls.crt here is just some certificate: it must never
			// reach the truststore.
			"apps/my-cert":    {Name: "my-cert", Data: map[string][]byte{"ca.crt": p.clusterCA, "tls.crt": p.userCert, "tls.key": p.userKey}},
			"apps/alpha-cert": {Name: "alpha-cert", Data: map[string][]byte{"ca.crt": p.clusterCAOld, "tls.crt": p.userCert}},
			"apps/custom-ca":  {Name: "custom-ca", Data: map[string][]byte{"ca.crt": p.clusterCAOld}},
		},
	}
}

func TestGoldenRouteBindings(t *testing.T) {
	p := loadPKI(t)
	tests := map[string]struct {
		golden string
		edit   func(in *RouteInput)
	}{
		"a SCRAM user binds the route's in-cluster bootstrap over SASL_SSL with the certificate's ca.crt": {
			golden: "route-scram",
			edit: func(in *RouteInput) {
				in.User, in.UserSecret = parseUserYAML(t, scramUser), p.scramSecret()
			},
		},
		"a connection without a user binds SSL, with PKCS12 and JKS truststores built from ca.crt": {
			golden: "route-no-user",
			edit:   func(in *RouteInput) { in.StoreFormats = []string{FormatPEM, FormatPKCS12, FormatJKS} },
		},
		"a chosen hostname and CA Secret are bound as written": {
			golden: "route-hostname-ca-secret",
			edit: func(in *RouteInput) {
				in.RequestedHostname, in.CASecretName, in.StoreFormats = "my-cluster-%.apps.example.com", "custom-ca", []string{FormatPEM}
			},
		},
	}
	names := make([]string, 0, len(tests))
	for name := range tests {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		tc := tests[name]
		t.Run(name, func(t *testing.T) {
			in := routeFixture(t, p)
			tc.edit(&in)
			res, f := BuildRoute(in)
			if f != nil {
				t.Fatalf("BuildRoute failed: %v", f)
			}
			got := renderResult(t, name, res)
			golden.Check(t, filepath.Join("testdata", tc.golden+".golden"), got)
		})
	}
}

func TestChooseRoute(t *testing.T) {
	p := loadPKI(t)
	tests := map[string]struct {
		edit          func(in *RouteInput)
		wantListener  string
		wantBootstrap string
	}{
		"the first in-cluster hostname gains the gateway's namespace and takes the listener port": {
			wantListener: "tls", wantBootstrap: "my-cluster-bootstrap.apps.svc.cluster.local:9092",
		},
		"a hostname that already names the namespace is bound as it is": {
			edit:         func(in *RouteInput) { in.RequestedHostname = "other-%.apps.svc.cluster.local" },
			wantListener: "tls", wantBootstrap: "other-bootstrap.apps.svc.cluster.local:9092",
		},
		"a hostname exposed by a LoadBalancer takes the listener port": {
			edit:         func(in *RouteInput) { in.RequestedHostname = "my-cluster-%.example.org" },
			wantListener: "tls", wantBootstrap: "my-cluster-bootstrap.example.org:9092",
		},
		"a hostname under an ingress domain takes the OpenShift router's port": {
			edit:         func(in *RouteInput) { in.RequestedHostname = "my-cluster-%.apps.example.com" },
			wantListener: "tls", wantBootstrap: "my-cluster-bootstrap.apps.example.com:443",
		},
		"with a Gateway API parent, an external hostname takes the parent's port": {
			edit: func(in *RouteInput) {
				port := kroxyliciousv1alpha1.PortNumber(8443)
				in.Parameters["params"].Spec.IngressDomains = nil
				in.Parameters["params"].Spec.ParentRefs = []kroxyliciousv1alpha1.GatewayParentReference{{Name: "public", Port: &port}}
				in.RequestedHostname = "my-cluster-%.example.org"
			},
			wantListener: "tls", wantBootstrap: "my-cluster-bootstrap.example.org:8443",
		},
		"a custom cluster domain decides what is in-cluster": {
			edit:         func(in *RouteInput) { in.ClusterDomain = "example.org" },
			wantListener: "tls", wantBootstrap: "my-cluster-bootstrap.apps.example.org:9092",
		},
		"without an in-cluster hostname the first one is bound": {
			edit: func(in *RouteInput) {
				in.Route.Spec.ParentRefs[0].Hostnames = []kroxyliciousv1alpha1.PercentHostname{"my-cluster-%.apps.example.com", "my-cluster-%.example.org"}
			},
			wantListener: "tls", wantBootstrap: "my-cluster-bootstrap.apps.example.com:443",
		},
		"without a sectionName the gateway's first listener by name is bound": {
			edit:         func(in *RouteInput) { in.Route.Spec.ParentRefs[0].SectionName = nil },
			wantListener: "alpha", wantBootstrap: "my-cluster-bootstrap.apps.svc.cluster.local:9192",
		},
		"without a sectionName a requested listener is bound": {
			edit: func(in *RouteInput) {
				in.Route.Spec.ParentRefs[0].SectionName = nil
				in.RequestedListener = "tls"
			},
			wantListener: "tls", wantBootstrap: "my-cluster-bootstrap.apps.svc.cluster.local:9092",
		},
		"a requested listener picks the parentRef that attaches to it": {
			edit: func(in *RouteInput) {
				second := in.Route.Spec.ParentRefs[0].DeepCopy()
				alpha := kroxyliciousv1alpha1.SectionName("alpha")
				second.SectionName = &alpha
				second.Hostnames = []kroxyliciousv1alpha1.PercentHostname{"alpha-%.svc.cluster.local"}
				in.Route.Spec.ParentRefs = append(in.Route.Spec.ParentRefs, *second)
				in.RequestedListener = "alpha"
			},
			wantListener: "alpha", wantBootstrap: "alpha-bootstrap.apps.svc.cluster.local:9192",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := routeFixture(t, p)
			if tc.edit != nil {
				tc.edit(&in)
			}
			rc, f := ChooseRoute(in)
			if f != nil {
				t.Fatalf("ChooseRoute failed: %v", f)
			}
			if string(rc.Listener.Name) != tc.wantListener || rc.BootstrapServers() != tc.wantBootstrap {
				t.Errorf("got listener %q bootstrap %q, want %q %q", rc.Listener.Name, rc.BootstrapServers(), tc.wantListener, tc.wantBootstrap)
			}
		})
	}
}

func TestBuildRouteFailures(t *testing.T) {
	p := loadPKI(t)
	tests := map[string]struct {
		edit        func(in *RouteInput)
		wantReason  string
		wantMessage string
	}{
		"a missing route": {
			edit:       func(in *RouteInput) { in.Route = nil },
			wantReason: ReasonRouteNotFound, wantMessage: "KafkaRoute apps/my-route does not exist",
		},
		"a missing gateway": {
			edit:       func(in *RouteInput) { delete(in.Gateways, "simple") },
			wantReason: ReasonGatewayNotFound, wantMessage: "KafkaGateway apps/simple named by KafkaRoute apps/my-route does not exist",
		},
		"a route whose parents are no KafkaGateway": {
			edit: func(in *RouteInput) {
				kind := "Gateway"
				in.Route.Spec.ParentRefs[0].Kind = &kind
			},
			wantReason: ReasonGatewayNotFound, wantMessage: "has no KafkaGateway in its parentRefs",
		},
		"a requested listener the route does not attach to": {
			edit:       func(in *RouteInput) { in.RequestedListener = "alpha" },
			wantReason: ReasonListenerNotFound, wantMessage: `attaches to no gateway listener "alpha" (it attaches to simple/tls)`,
		},
		"a sectionName the gateway does not have": {
			edit: func(in *RouteInput) {
				gone := kroxyliciousv1alpha1.SectionName("gone")
				in.Route.Spec.ParentRefs[0].SectionName = &gone
			},
			wantReason: ReasonListenerNotFound, wantMessage: `has no listener "gone"`,
		},
		"a listener that requires client certificates": {
			edit: func(in *RouteInput) {
				in.Gateways["simple"].Spec.Listeners[0].TLS.FrontendValidation = &kroxyliciousv1alpha1.FrontendTLSValidation{
					CACertificateRefs: []kroxyliciousv1alpha1.SecretObjectReference{{Name: "clients-ca"}}}
			},
			wantReason: ReasonListenerIncompatible, wantMessage: "requires client certificates",
		},
		"a listener of another protocol": {
			edit:       func(in *RouteInput) { in.Gateways["simple"].Spec.Listeners[0].Protocol = "kroxylicious.io/kafka" },
			wantReason: ReasonListenerIncompatible, wantMessage: `has protocol "kroxylicious.io/kafka"`,
		},
		"a requested hostname the route does not list": {
			edit:       func(in *RouteInput) { in.RequestedHostname = "my-cluster-bootstrap.apps.svc.cluster.local" },
			wantReason: ReasonHostnameNotFound, wantMessage: `has no hostname "my-cluster-bootstrap.apps.svc.cluster.local"`,
		},
		"an in-cluster hostname naming another namespace": {
			edit: func(in *RouteInput) {
				in.Route.Spec.ParentRefs[0].Hostnames = []kroxyliciousv1alpha1.PercentHostname{"my-cluster-%.kafka.svc.cluster.local"}
			},
			wantReason: ReasonHostnameInvalid, wantMessage: `names namespace "kafka"`,
		},
		"a route the gateway has not accepted yet": {
			edit:       func(in *RouteInput) { in.Route.Status.Parents = nil },
			wantReason: ReasonRouteNotAccepted, wantMessage: "has not yet accepted KafkaRoute apps/my-route",
		},
		"a route accepted for an older generation": {
			edit:       func(in *RouteInput) { in.Route.Generation = 4 },
			wantReason: ReasonRouteNotAccepted, wantMessage: "has not yet accepted generation 4",
		},
		"a route the gateway refused": {
			edit: func(in *RouteInput) {
				c := &in.Route.Status.Parents[0].Conditions[0]
				c.Status, c.Reason, c.Message = "False", "HostnameConflict", "route other holds my-cluster-bootstrap"
			},
			wantReason: ReasonRouteNotAccepted, wantMessage: "does not accept KafkaRoute apps/my-route: HostnameConflict: route other holds my-cluster-bootstrap",
		},
		"status for another section does not count": {
			edit: func(in *RouteInput) {
				alpha := kroxyliciousv1alpha1.SectionName("alpha")
				in.Route.Status.Parents[0].ParentRef.SectionName = &alpha
			},
			wantReason: ReasonRouteNotAccepted, wantMessage: "no Accepted condition",
		},
		"a missing certificate Secret": {
			edit:       func(in *RouteInput) { delete(in.Secrets, "apps/my-cert") },
			wantReason: ReasonCACertificateMissing, wantMessage: `the certificate Secret of listener "tls" of KafkaGateway apps/simple (apps/my-cert) does not exist, or is in another namespace and no ReferenceGrant lets the KafkaGateway use it`,
		},
		"a certificate Secret without ca.crt": {
			edit:       func(in *RouteInput) { delete(in.Secrets["apps/my-cert"].Data, "ca.crt") },
			wantReason: ReasonCACertificateMissing, wantMessage: "has no ca.crt (cert-manager writes it for CA and self-signed issuers); name a Secret holding the CA in spec.kafka.caSecret",
		},
		"a missing CA Secret": {
			edit:       func(in *RouteInput) { in.CASecretName = "nope" },
			wantReason: ReasonCACertificateMissing, wantMessage: "Secret apps/nope (spec.kafka.caSecret) does not exist",
		},
		"a ca.crt that is not PEM": {
			edit:       func(in *RouteInput) { in.Secrets["apps/my-cert"].Data["ca.crt"] = []byte("not a certificate") },
			wantReason: ReasonCertificateNotPEM,
		},
		"a tls user, whose certificate the gateway would not pass on": {
			edit:       func(in *RouteInput) { in.User, in.UserSecret = parseUserYAML(t, tlsUser), p.tlsSecret() },
			wantReason: ReasonUserAuthenticationUnsupported, wantMessage: "the gateway terminates TLS, so the client certificate never reaches the Kafka cluster",
		},
		"a tls-external user": {
			edit:       func(in *RouteInput) { in.User = parseUserYAML(t, tlsExternalUser) },
			wantReason: ReasonUserAuthenticationUnsupported, wantMessage: "uses tls-external authentication",
		},
		"a SCRAM user Strimzi has not reconciled": {
			edit: func(in *RouteInput) {
				in.User, in.UserSecret = parseUserYAML(t, scramUser), p.scramSecret()
				in.User.Generation = 2
			},
			wantReason: ReasonUserNotReady,
		},
		"a SCRAM user without its Secret": {
			edit:       func(in *RouteInput) { in.User = parseUserYAML(t, scramUser) },
			wantReason: ReasonUserSecretMissing,
		},
		"an unknown store format": {
			edit:       func(in *RouteInput) { in.StoreFormats = []string{"P7B"} },
			wantReason: ReasonStoreFormatUnknown,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := routeFixture(t, p)
			tc.edit(&in)
			res, f := BuildRoute(in)
			if f == nil {
				t.Fatalf("BuildRoute succeeded with %s", res.Choice.BootstrapServers)
			}
			if f.Reason != tc.wantReason || !strings.Contains(f.Message, tc.wantMessage) {
				t.Errorf("got %s: %s\nwant %s containing %q", f.Reason, f.Message, tc.wantReason, tc.wantMessage)
			}
			if res.Data != nil {
				t.Errorf("a failure returned data")
			}
		})
	}
}

// With several certificates on a listener the proxy presents, per host, the one whose names
// cover it; the truststore holds that certificate's CA.
func TestRouteTrustFollowsTheCertificateForTheHost(t *testing.T) {
	p := loadPKI(t)
	now := time.Now().Add(-time.Hour)
	caA, caB := bindingtest.NewCA(t, "issuer a", now), bindingtest.NewCA(t, "issuer b", now)
	certA, _, _ := caA.Issue(t, "a", []string{"my-cluster-bootstrap.apps.svc.cluster.local"}, false, false)
	certB, _, _ := caB.Issue(t, "b", []string{"elsewhere.example.org"}, false, false)
	in := routeFixture(t, p)
	in.Gateways["simple"].Spec.Listeners[0].TLS.CertificateRefs = []kroxyliciousv1alpha1.SecretObjectReference{{Name: "b"}, {Name: "a"}}
	in.Secrets["apps/a"] = &SecretData{Name: "a", Data: map[string][]byte{"ca.crt": caA.CertPEM, "tls.crt": certA}}
	in.Secrets["apps/b"] = &SecretData{Name: "b", Data: map[string][]byte{"ca.crt": caB.CertPEM, "tls.crt": certB}}
	in.StoreFormats = []string{FormatPEM}

	res, f := BuildRoute(in)
	if f != nil {
		t.Fatal(f)
	}
	got := bindingtest.PEMCertificates(res.Data[KeyTruststoreCRT])
	if len(got) != 1 || !bytes.Equal(got[0], caA.Cert.Raw) {
		t.Errorf("truststore holds %d certificates, want issuer a's only", len(got))
	}

	// When no certificate covers the host, every listener CA is trusted rather than none.
	in.Secrets["apps/a"].Data["tls.crt"] = certB
	res, f = BuildRoute(in)
	if f != nil {
		t.Fatal(f)
	}
	if got := bindingtest.PEMCertificates(res.Data[KeyTruststoreCRT]); len(got) != 2 {
		t.Errorf("truststore holds %d certificates, want both CAs", len(got))
	}
}

// Equal inputs give byte-identical data, so an unchanged route connection is never rewritten.
func TestBuildRouteIsStable(t *testing.T) {
	p := loadPKI(t)
	build := func() map[string][]byte {
		in := routeFixture(t, p)
		in.User, in.UserSecret = parseUserYAML(t, scramUser), p.scramSecret()
		in.StoreFormats = []string{FormatPEM, FormatPKCS12, FormatJKS}
		res, f := BuildRoute(in)
		if f != nil {
			t.Fatal(f)
		}
		return res.Data
	}
	a, b := build(), build()
	if len(a) != len(b) {
		t.Fatalf("%d entries, then %d", len(a), len(b))
	}
	for k := range a {
		if !bytes.Equal(a[k], b[k]) {
			t.Errorf("%s differs between two builds", k)
		}
	}
}
