package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	"sigs.k8s.io/yaml"

	filterv1alpha1 "github.com/kafkalink/kafkalink/apis/filter/v1alpha1"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/internal/golden"
	"github.com/kafkalink/kafkalink/pkg/strimzi"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
	"github.com/kafkalink/kafkalink/proxy/config"
	filterall "github.com/kafkalink/kafkalink/proxy/filter/all"
)

// testEnvironment is the optional "kind: Environment" document of a case.
type testEnvironment struct {
	ClusterDomain     string      `json:"clusterDomain"`
	OpenShiftRoutes   *bool       `json:"openShiftRoutes"`
	TLSRoutes         *bool       `json:"tlsRoutes"`
	StrimziKafkas     *bool       `json:"strimziKafkas"`
	VisibleNamespaces []string    `json:"visibleNamespaces"`
	TLSRouteTimeout   string      `json:"tlsRouteTimeout"`
	Now               string      `json:"now"`
	Foreign           []ObjectKey `json:"foreign"`
	Gateway           string      `json:"gateway"`
	FilterTypes       []string    `json:"filterTypes"`
	// CheckFilters runs kafkalink-proxy's own check of filter configurations, as the operator does.
	CheckFilters bool `json:"checkFilters"`
	// AllowedMetadataPrefixes and AllowedIngressDomains are the operator's restriction flags.
	AllowedMetadataPrefixes []string `json:"allowedMetadataPrefixes"`
	AllowedIngressDomains   []string `json:"allowedIngressDomains"`
	// MaxGeneratedObjects is --max-generated-objects-per-gateway.
	MaxGeneratedObjects int `json:"maxGeneratedObjects"`
}

// loadCase reads a case: Kubernetes objects, "kind: Include" documents (path relative to the
// file, to use the seed examples as written) and one optional Environment.
func loadCase(t *testing.T, path string) *Snapshot {
	t.Helper()
	s := &Snapshot{Env: Environment{
		ClusterDomain: "svc.cluster.local", ProxyImage: "ghcr.io/kafkalink/kafkalink-proxy:test",
		OpenShiftRoutes: true, TLSRoutes: true, ReferenceGrants: true, StrimziKafkas: true, TLSRouteTimeout: 5 * time.Minute,
		Now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC),
		// A fixed "fresh" key, so cases of the hash mapping without a key Secret are stable.
		FreshBrokerKey: bytes.Repeat([]byte{1}, 32),
	}}
	var gateways []*kroxyliciousv1alpha1.KafkaGateway
	var params []*kroxyliciousv1alpha1.KafkaGatewayParameters
	var env testEnvironment
	var read func(path string)
	read = func(path string) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			j, err := yaml.YAMLToJSON(doc)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			var head struct {
				Kind string `json:"kind"`
				Path string `json:"path"`
			}
			if err := json.Unmarshal(j, &head); err != nil || head.Kind == "" {
				continue // empty document
			}
			into := func(v any) {
				if err := json.Unmarshal(j, v); err != nil {
					t.Fatalf("%s: %s: %v", path, head.Kind, err)
				}
			}
			switch head.Kind {
			case "Include":
				read(filepath.Join(filepath.Dir(path), head.Path))
			case "Environment":
				into(&env)
			case "KafkaGateway":
				o := &kroxyliciousv1alpha1.KafkaGateway{}
				into(o)
				gateways = append(gateways, o)
			case "KafkaGatewayParameters":
				o := &kroxyliciousv1alpha1.KafkaGatewayParameters{}
				into(o)
				params = append(params, o)
			case "KafkaRoute":
				o := &kroxyliciousv1alpha1.KafkaRoute{}
				into(o)
				s.Routes = append(s.Routes, o)
			case "KafkaFilter":
				o := &filterv1alpha1.KafkaFilter{}
				into(o)
				s.Filters = append(s.Filters, o)
			case "KafkaBackendTLSPolicy":
				o := &kroxyliciousv1alpha1.KafkaBackendTLSPolicy{}
				into(o)
				s.Policies = append(s.Policies, o)
			case "Secret":
				o := &corev1.Secret{}
				into(o)
				for k, v := range o.StringData {
					if o.Data == nil {
						o.Data = map[string][]byte{}
					}
					o.Data[k] = []byte(v)
				}
				// CERT and KEY stand for a valid key pair (testdata/common/tls.crt and tls.key),
				// as the translator checks that listener and client certificates parse.
				for k, v := range o.Data {
					switch string(v) {
					case "CERT":
						o.Data[k] = goldenFile(t, "common/tls.crt")
					case "KEY":
						o.Data[k] = goldenFile(t, "common/tls.key")
					}
				}
				o.StringData = nil
				s.Secrets = append(s.Secrets, o)
			case "Service":
				o := &corev1.Service{}
				into(o)
				s.Services = append(s.Services, o)
			case "ReferenceGrant":
				o := &gatewayv1beta1.ReferenceGrant{}
				into(o)
				s.ReferenceGrants = append(s.ReferenceGrants, o)
			case "ConfigMap":
				o := &corev1.ConfigMap{}
				into(o)
				s.ConfigMaps = append(s.ConfigMaps, o)
			case "Deployment":
				o := &appsv1.Deployment{}
				into(o)
				s.Deployment = o
			case "Gateway":
				o := &gatewayv1.Gateway{}
				into(o)
				s.ParentGateways = append(s.ParentGateways, o)
			case "TLSRoute":
				o := &gatewayv1.TLSRoute{}
				into(o)
				s.TLSRoutes = append(s.TLSRoutes, o)
			case strimzi.KindKafka:
				var obj map[string]any
				into(&obj)
				k, err := strimzi.ParseKafka(obj)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				s.Kafkas = append(s.Kafkas, k)
			case strimzi.KindKafkaNodePool:
				var obj map[string]any
				into(&obj)
				p, err := strimzi.ParseKafkaNodePool(obj)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				s.NodePools = append(s.NodePools, p)
			default:
				t.Fatalf("%s: unexpected kind %q", path, head.Kind)
			}
		}
	}
	read(path)
	if env.ClusterDomain != "" {
		s.Env.ClusterDomain = env.ClusterDomain
	}
	if env.OpenShiftRoutes != nil {
		s.Env.OpenShiftRoutes = *env.OpenShiftRoutes
	}
	if env.TLSRoutes != nil {
		s.Env.TLSRoutes = *env.TLSRoutes
	}
	if env.StrimziKafkas != nil {
		s.Env.StrimziKafkas = *env.StrimziKafkas
	}
	s.Env.VisibleNamespaces = env.VisibleNamespaces
	s.Env.FilterTypes = env.FilterTypes
	if env.CheckFilters {
		s.Env.CheckFilter = filterall.Check
	}
	s.Env.AllowedMetadataPrefixes = env.AllowedMetadataPrefixes
	s.Env.AllowedIngressDomains = env.AllowedIngressDomains
	s.Env.MaxGeneratedObjects = env.MaxGeneratedObjects
	if env.TLSRouteTimeout != "" {
		d, err := time.ParseDuration(env.TLSRouteTimeout)
		if err != nil {
			t.Fatal(err)
		}
		s.Env.TLSRouteTimeout = d
	}
	if env.Now != "" {
		now, err := time.Parse(time.RFC3339, env.Now)
		if err != nil {
			t.Fatal(err)
		}
		s.Env.Now = now
	}
	s.Foreign = env.Foreign
	for _, g := range gateways {
		if env.Gateway == "" || g.Name == env.Gateway {
			s.Gateway = g
			break
		}
	}
	if s.Gateway == nil {
		t.Fatalf("%s: no KafkaGateway", path)
	}
	if inf := s.Gateway.Spec.Infrastructure; inf != nil && inf.ParametersRef != nil {
		for _, p := range params {
			if p.Name == inf.ParametersRef.Name && p.Namespace == s.Gateway.Namespace {
				s.Parameters = p
			}
		}
	}
	return s
}

// goldenResult is the .out.yaml form of a Result.
type goldenResult struct {
	Hold             bool                                                  `json:"hold,omitempty"`
	RequeueAfter     string                                                `json:"requeueAfter,omitempty"`
	PruneKinds       []string                                              `json:"pruneKinds,omitempty"`
	GatewayStatus    kroxyliciousv1alpha1.KafkaGatewayStatus               `json:"gatewayStatus"`
	RouteParents     map[string][]kroxyliciousv1alpha1.RouteParentStatus   `json:"routeParents,omitempty"`
	PolicyAncestors  map[string]*kroxyliciousv1alpha1.PolicyAncestorStatus `json:"policyAncestors,omitempty"`
	RecreateServices []string                                              `json:"recreateServices,omitempty"`
	Objects          []map[string]any                                      `json:"objects,omitempty"`
}

func render(t *testing.T, res *Result) []byte {
	t.Helper()
	g := goldenResult{Hold: res.Hold, PruneKinds: res.PruneKinds, GatewayStatus: res.GatewayStatus, RouteParents: res.RouteParents, RecreateServices: res.RecreateServices}
	if res.RequeueAfter > 0 {
		g.RequeueAfter = res.RequeueAfter.String()
	}
	if len(res.PolicyAncestors) > 0 {
		g.PolicyAncestors = map[string]*kroxyliciousv1alpha1.PolicyAncestorStatus{}
		for k, v := range res.PolicyAncestors {
			g.PolicyAncestors[k.String()] = v
		}
	}
	for _, o := range res.Objects {
		g.Objects = append(g.Objects, o.Object)
	}
	out, err := yaml.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGolden(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, in := range cases {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			s := loadCase(t, in)
			res := Translate(s)
			checkInvariants(t, res)
			got := render(t, res)
			// Translate must be deterministic: a second run gives the same bytes.
			if again := render(t, Translate(loadCase(t, in))); !bytes.Equal(got, again) {
				t.Fatal("two translations of one snapshot differ")
			}
			golden.Check(t, filepath.Join("testdata", name+".out.yaml"), got)
		})
	}
}

// checkInvariants holds for every result: the ConfigMap holds a configuration the proxy loads,
// and every generated object is labelled for pruning.
func checkInvariants(t *testing.T, res *Result) {
	t.Helper()
	if res.Hold {
		return
	}
	found := false
	for _, o := range res.Objects {
		if o.GetLabels()[wellknown.LabelGateway] == "" {
			t.Errorf("%s %s has no %s label", o.GetKind(), o.GetName(), wellknown.LabelGateway)
		}
		if o.GetKind() != KindConfigMap {
			continue
		}
		found = true
		data, _, _ := unstructuredString(o.Object, "data", ConfigKey)
		if _, err := config.Parse([]byte(data)); err != nil {
			t.Errorf("the proxy would refuse the generated configuration: %v\n%s", err, data)
		}
	}
	if !found {
		t.Error("no ConfigMap generated")
	}
}

func unstructuredString(m map[string]any, path ...string) (string, bool, error) {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = mm[p]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// Services as the seed's "Network Exposition" section names them.
func TestSeedScenariosGiveTheServicesTheSeedNames(t *testing.T) {
	type svc struct {
		typ   string
		ports string
	}
	tests := map[string]struct {
		in       string
		services map[string]svc
		routes   []string
		vcs      map[string]string // bootstrap -> broker pattern
		targets  []string
	}{
		"in-cluster access gives a ClusterIP Service per bootstrap and broker": {
			in: "scenario-1-in-cluster",
			services: map[string]svc{
				"my-cluster-bootstrap": {"ClusterIP", "9092"}, "my-cluster-broker-1": {"ClusterIP", "9092"},
				"my-cluster-broker-2": {"ClusterIP", "9092"}, "my-cluster-broker-3": {"ClusterIP", "9092"},
			},
			vcs:     map[string]string{"my-cluster-bootstrap.my-namespace.svc.cluster.local": "my-cluster-broker-$(nodeId).my-namespace.svc.cluster.local"},
			targets: []string{"my-cluster.kafka.svc.cluster.local.:9093"},
		},
		"off-cluster access gives one LoadBalancer named after the route": {
			in:       "scenario-2-off-cluster",
			services: map[string]svc{"my-route": {"LoadBalancer", "9092"}},
			vcs:      map[string]string{"my-cluster-bootstrap.example.com": "my-cluster-broker-$(nodeId).example.com"},
			targets:  []string{"my-cluster.kafka.svc.cluster.local.:9093"},
		},
		"OpenShift ingress domains give per-host Services and passthrough Routes": {
			in: "scenario-3-openshift-routes",
			services: map[string]svc{
				"my-ingress-route-bootstrap": {"ClusterIP", "9092"}, "my-ingress-route-broker-0": {"ClusterIP", "9092"},
				"my-ingress-route-broker-1": {"ClusterIP", "9092"}, "my-ingress-route-broker-2": {"ClusterIP", "9092"},
			},
			routes:  []string{"my-ingress-route-bootstrap.apps.example.com", "my-ingress-route-broker-0.apps.example.com", "my-ingress-route-broker-1.apps.example.com", "my-ingress-route-broker-2.apps.example.com"},
			vcs:     map[string]string{"my-ingress-route-bootstrap.apps.example.com": "my-ingress-route-broker-$(nodeId).apps.example.com"},
			targets: []string{"my-cluster.kafka.svc.cluster.local.:9093"},
		},
		"in-cluster and off-cluster access together give both kinds": {
			in: "scenario-4-in-and-off-cluster",
			services: map[string]svc{
				"my-cluster-bootstrap": {"ClusterIP", "9092"}, "my-cluster-broker-1": {"ClusterIP", "9092"},
				"my-cluster-broker-2": {"ClusterIP", "9092"}, "my-cluster-broker-3": {"ClusterIP", "9092"},
				"my-route": {"LoadBalancer", "9092"},
			},
			vcs: map[string]string{
				"my-cluster-bootstrap.my-namespace.svc.cluster.local": "my-cluster-broker-$(nodeId).my-namespace.svc.cluster.local",
				"my-cluster-bootstrap.example.com":                    "my-cluster-broker-$(nodeId).example.com",
			},
			targets: []string{"my-cluster.kafka.svc.cluster.local.:9093", "my-cluster.kafka.svc.cluster.local.:9093"},
		},
		"multiple routes give a LoadBalancer and a virtual cluster each": {
			in:       "scenario-5-multiple-routes",
			services: map[string]svc{"my-route": {"LoadBalancer", "9092"}, "my-route-2": {"LoadBalancer", "9092"}},
			vcs: map[string]string{
				"my-cluster-bootstrap.example.com":   "my-cluster-broker-$(nodeId).example.com",
				"my-cluster-2-bootstrap.example.com": "my-cluster-2-broker-$(nodeId).example.com",
			},
			targets: []string{"my-cluster-2.kafka.svc.cluster.local.:9093", "my-cluster.kafka.svc.cluster.local.:9093"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := Translate(loadCase(t, filepath.Join("testdata", tc.in+".in.yaml")))
			got := map[string]svc{}
			var routes []string
			for _, o := range res.Objects {
				switch o.GetKind() {
				case KindService:
					var s corev1.Service
					b, _ := json.Marshal(o.Object)
					_ = json.Unmarshal(b, &s)
					var ports []string
					for _, p := range s.Spec.Ports {
						ports = append(ports, fmt.Sprint(p.Port))
						if p.TargetPort.IntValue() != int(p.Port) {
							t.Errorf("Service %s port %d targets %s, want the listener port", s.Name, p.Port, p.TargetPort.String())
						}
					}
					got[s.Name] = svc{string(s.Spec.Type), strings.Join(ports, ",")}
					if s.Spec.Selector[wellknown.LabelGateway] != "simple" {
						t.Errorf("Service %s does not select the proxy pods: %v", s.Name, s.Spec.Selector)
					}
				case KindRoute:
					host, _, _ := unstructuredString(o.Object, "spec", "host")
					routes = append(routes, host)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.services) {
				t.Errorf("Services:\n got %v\nwant %v", got, tc.services)
			}
			sort.Strings(routes)
			if fmt.Sprint(routes) != fmt.Sprint(tc.routes) {
				t.Errorf("Routes: got %v, want %v", routes, tc.routes)
			}
			vcs := map[string]string{}
			var targets []string
			for _, vc := range res.Config.VirtualClusters {
				vcs[vc.BootstrapHost] = vc.BrokerPattern
				targets = append(targets, vc.TargetBootstrap)
			}
			if fmt.Sprint(vcs) != fmt.Sprint(tc.vcs) {
				t.Errorf("virtual clusters:\n got %v\nwant %v", vcs, tc.vcs)
			}
			if fmt.Sprint(targets) != fmt.Sprint(tc.targets) {
				t.Errorf("targets: got %v, want %v", targets, tc.targets)
			}
		})
	}
}

func goldenFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
