package gatewaycontroller

// Fast sync tests: a thin fake-clientset harness in the sample-controller style. Objects are built
// with option funcs, put straight into the indexers the listers read (through the same cache
// transform the informers use) and into the fake clientsets, one sync runs, and the test asserts
// the actions recorded by the fakes. No informer, queue or API server runs; the control-plane
// suites in test/gateway cover those.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	kafkalinkfake "github.com/kafkalink/kafkalink/generated/clientset/versioned/fake"
	filterlisters "github.com/kafkalink/kafkalink/generated/listers/filter/v1alpha1"
	kroxyliciouslisters "github.com/kafkalink/kafkalink/generated/listers/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/binding/bindingtest"
	"github.com/kafkalink/kafkalink/pkg/controller"
	"github.com/kafkalink/kafkalink/pkg/gateway"
	"github.com/kafkalink/kafkalink/pkg/secretcache"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

const testNamespace = "apps"

// fixture is one controller over indexers filled by hand and fake clientsets that record actions.
type fixture struct {
	t         *testing.T
	kube      *kubefake.Clientset
	kafkalink *kafkalinkfake.Clientset
	dynamic   *dynamicfake.FakeDynamicClient
	recorder  *record.FakeRecorder
	c         *Controller

	gateways, routes, policies, filters, params      cache.Indexer
	services, secrets, configMaps, deployments, pdbs cache.Indexer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		t:    t,
		kube: kubefake.NewClientset(),
		// The field-managed tracker of NewClientset does not know CRDs; status updates need only
		// the plain one.
		kafkalink: kafkalinkfake.NewSimpleClientset(),
		dynamic:   dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()),
		recorder:  record.NewFakeRecorder(100),
	}
	// The dynamic fake's tracker cannot apply; record the apply and answer with the object sent,
	// as the API server would for a create.
	f.dynamic.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(a.(clienttesting.PatchAction).GetPatch(), &u.Object); err != nil {
			return true, nil, err
		}
		return true, u, nil
	})
	f.dynamic.PrependReactor("delete", "*", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	ns := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	with := func(more cache.Indexers) cache.Indexer {
		all := cache.Indexers{}
		for k, v := range ns {
			all[k] = v
		}
		for k, v := range more {
			all[k] = v
		}
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, all)
	}
	f.gateways = with(cache.Indexers{indexGatewaySecret: gatewaySecrets, indexGatewayParams: gatewayParams})
	f.routes = with(cache.Indexers{indexRouteGateway: routeGateways, indexRouteBackend: routeBackends, indexRouteFilter: routeFilters})
	f.policies = with(cache.Indexers{indexPolicySecret: policySecrets})
	f.filters = with(cache.Indexers{indexFilterSecret: filterSecrets, indexFilterConfigMap: filterConfigMaps})
	f.params, f.services, f.secrets, f.configMaps, f.deployments, f.pdbs = with(nil), with(nil), with(nil), with(nil), with(nil), with(nil)

	env := controller.Env{
		Clients:   controller.Clients{Kube: f.kube, KafkaLink: f.kafkalink, Dynamic: f.dynamic},
		Informers: controller.Informers{Namespace: ""},
		Recorder:  f.recorder,
		Options:   controller.Options{ClusterDomain: "svc.cluster.local", ProxyImage: "proxy:test", TLSRouteAttachTimeout: 5 * time.Minute},
	}
	c := &Controller{
		env: env, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), dynamic: f.dynamic,
		waiters: newNameWaiters(), secretData: newSecretData(f.kube), configMapData: newConfigMapData(f.kube),
		members:  newMemberProxies(t.Context(), f.kube, func(cache.ObjectName) {}, nil),
		gateways: kroxyliciouslisters.NewKafkaGatewayLister(f.gateways), gatewayIdx: f.gateways,
		params: kroxyliciouslisters.NewKafkaGatewayParametersLister(f.params),
		routes: kroxyliciouslisters.NewKafkaRouteLister(f.routes), routeIdx: f.routes,
		policies: kroxyliciouslisters.NewKafkaBackendTLSPolicyLister(f.policies), policyIdx: f.policies,
		filters: filterlisters.NewKafkaFilterLister(f.filters), filterIdx: f.filters,
		services: corelisters.NewServiceLister(f.services), secrets: corelisters.NewSecretLister(f.secrets),
		configMaps: corelisters.NewConfigMapLister(f.configMaps), deployments: appslisters.NewDeploymentLister(f.deployments),
		pdbs: policylisters.NewPodDisruptionBudgetLister(f.pdbs),
		// The optional APIs (OpenShift Route, TLSRoute, ReferenceGrant) are not served.
	}
	c.ctrl = controller.New("gateway-sync-test", c.sync)
	f.c = c
	return f
}

// add puts objects into the caches (through the informers' transform) and into the clientsets.
func (f *fixture) add(objs ...runtime.Object) {
	f.t.Helper()
	for _, o := range objs {
		var idx cache.Indexer
		var err error
		switch o.(type) {
		// Tracker().Add would guess the resource "kafkagatewaies" from the kind.
		case *kroxyliciousv1alpha1.KafkaGateway:
			idx, err = f.gateways, f.kafkalink.Tracker().Create(kroxyliciousv1alpha1.SchemeGroupVersion.WithResource("kafkagateways"), o, testNamespace)
		case *kroxyliciousv1alpha1.KafkaRoute:
			idx, err = f.routes, f.kafkalink.Tracker().Create(kroxyliciousv1alpha1.SchemeGroupVersion.WithResource("kafkaroutes"), o, testNamespace)
		case *corev1.Secret:
			idx, err = f.secrets, f.kube.Tracker().Add(o)
		case *corev1.Service:
			idx = f.services
		case *corev1.ConfigMap:
			idx = f.configMaps
		case *appsv1.Deployment:
			idx = f.deployments
		default:
			f.t.Fatalf("the harness does not know %T", o)
		}
		if err != nil {
			f.t.Fatal(err)
		}
		transform := slimObject
		if _, ok := o.(*corev1.Secret); ok {
			transform = secretcache.Slim
		}
		cached, err := transform(o.DeepCopyObject())
		if err != nil {
			f.t.Fatal(err)
		}
		if err := idx.Update(cached); err != nil {
			f.t.Fatal(err)
		}
	}
}

// sync runs one sync of the gateway, after clearing the actions recorded so far.
func (f *fixture) sync(name string) {
	f.t.Helper()
	f.kube.ClearActions()
	f.kafkalink.ClearActions()
	f.dynamic.ClearActions()
	if err := f.c.sync(context.Background(), cache.NewObjectName(testNamespace, name)); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// writes lists the writes recorded by every fake as "verb resource[/subresource] namespace/name",
// in order; reads (get, list, watch) are left out.
func (f *fixture) writes() []string {
	var out []string
	for _, a := range slices.Concat(f.dynamic.Actions(), f.kafkalink.Actions(), f.kube.Actions()) {
		if a.Matches("get", a.GetResource().Resource) || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		res := a.GetResource().Resource
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		out = append(out, fmt.Sprintf("%s %s %s/%s", a.GetVerb(), res, a.GetNamespace(), actionName(a)))
	}
	return out
}

func actionName(a clienttesting.Action) string {
	switch a := a.(type) {
	case clienttesting.PatchAction:
		return a.GetName()
	case clienttesting.DeleteAction:
		return a.GetName()
	case clienttesting.UpdateAction: // creates too: every CreateAction has GetObject
		m, _ := meta.Accessor(a.GetObject())
		return m.GetName()
	}
	return ""
}

// applied returns the objects applied through the dynamic client.
func (f *fixture) applied() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, a := range f.dynamic.Actions() {
		p, ok := a.(clienttesting.PatchAction)
		if !ok || p.GetPatchType() != types.ApplyPatchType {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(p.GetPatch(), &u.Object); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// settle feeds what the last sync wrote back into the caches, as the informers would: the
// applied objects and the gateway's and routes' new status.
func (f *fixture) settle() {
	f.t.Helper()
	for _, u := range f.applied() {
		var typed runtime.Object
		switch u.GetKind() {
		case gateway.KindDeployment:
			typed = &appsv1.Deployment{}
		case gateway.KindConfigMap:
			typed = &corev1.ConfigMap{}
		case gateway.KindService:
			typed = &corev1.Service{}
		case gateway.KindSecret:
			typed = &corev1.Secret{}
		default:
			f.t.Fatalf("applied an unexpected kind %s", u.GetKind())
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			f.t.Fatal(err)
		}
		f.add(typed)
	}
	gws, _ := f.kafkalink.KroxyliciousV1alpha1().KafkaGateways(testNamespace).List(context.Background(), metav1.ListOptions{})
	for i := range gws.Items {
		_ = f.gateways.Update(&gws.Items[i])
	}
	routes, _ := f.kafkalink.KroxyliciousV1alpha1().KafkaRoutes(testNamespace).List(context.Background(), metav1.ListOptions{})
	for i := range routes.Items {
		_ = f.routes.Update(&routes.Items[i])
	}
}

// Objects, built with option funcs.

func newGateway(name string, opts ...func(*kroxyliciousv1alpha1.KafkaGateway)) *kroxyliciousv1alpha1.KafkaGateway {
	g := &kroxyliciousv1alpha1.KafkaGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name, UID: types.UID(name + "-uid"), Generation: 1},
		Spec: kroxyliciousv1alpha1.KafkaGatewaySpec{Listeners: []kroxyliciousv1alpha1.Listener{{
			Name: "tls", Port: 9092, Protocol: kroxyliciousv1alpha1.ProtocolKafkaTLS,
			TLS: &kroxyliciousv1alpha1.ListenerTLSConfig{CertificateRefs: []kroxyliciousv1alpha1.SecretObjectReference{{Name: "cert"}}},
		}}},
	}
	for _, o := range opts {
		o(g)
	}
	return g
}

func newRoute(name, gatewayName string, opts ...func(*kroxyliciousv1alpha1.KafkaRoute)) *kroxyliciousv1alpha1.KafkaRoute {
	r := &kroxyliciousv1alpha1.KafkaRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name, UID: types.UID(name + "-uid"), Generation: 1},
		Spec: kroxyliciousv1alpha1.KafkaRouteSpec{ParentRefs: []kroxyliciousv1alpha1.KafkaRouteParentReference{{
			Name:      kroxyliciousv1alpha1.ObjectName(gatewayName),
			Brokers:   []kroxyliciousv1alpha1.BrokerTopology{{AdvertisedBrokerIds: []int32{0, 1}}},
			Hostnames: []kroxyliciousv1alpha1.PercentHostname{"kafka-%." + testNamespace + ".svc.cluster.local"},
			Rules: []kroxyliciousv1alpha1.KafkaRouteRule{{Name: "all", BackendRefs: []kroxyliciousv1alpha1.BackendReference{{
				Name: "kafka", Port: 9092,
			}}}},
		}}},
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

func newService(name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name, UID: types.UID(name + "-uid")},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "kafka", Port: 9092}}}}
}

// newCertSecret is a listener certificate for the hostnames of newRoute.
func newCertSecret(t *testing.T, name string) *corev1.Secret {
	ca := bindingtest.NewCA(t, "test-ca", time.Now().Add(-time.Hour))
	cert, key, _ := ca.Issue(t, "kafka", []string{"*." + testNamespace + ".svc.cluster.local"}, false, false)
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name, UID: types.UID(name + "-uid"), ResourceVersion: "1"},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}}
}

// ownedBy marks a generated object as controlled by the gateway, with the gateway's label.
func ownedBy(gw *kroxyliciousv1alpha1.KafkaGateway) func(metav1.Object) {
	return func(m metav1.Object) {
		m.SetLabels(map[string]string{wellknown.LabelGateway: gw.Name})
		m.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: kroxyliciousv1alpha1.SchemeGroupVersion.String(), Kind: "KafkaGateway",
			Name: gw.Name, UID: gw.UID, Controller: ptr.To(true)}})
	}
}

func newConfigMap(name string, opts ...func(metav1.Object)) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name, UID: types.UID(name + "-uid")}}
	for _, o := range opts {
		o(cm)
	}
	return cm
}

// readyGateway is a gateway with a route, its backend Service and its listener certificate.
func readyGateway(t *testing.T, f *fixture) *kroxyliciousv1alpha1.KafkaGateway {
	gw := newGateway("gw")
	f.add(gw, newRoute("route", "gw"), newService("kafka"), newCertSecret(t, "cert"))
	return gw
}

// withVerb keeps the writes of one verb and resource (such as "patch deployments").
func withVerb(writes []string, verbResource string) []string {
	var out []string
	for _, w := range writes {
		if strings.HasPrefix(w, verbResource+" ") {
			out = append(out, w)
		}
	}
	return out
}

func TestSyncAppliesAGatewaysObjectsAndWritesItsStatus(t *testing.T) {
	f := newFixture(t)
	gw := readyGateway(t, f)
	f.sync("gw")

	// Applies the gateway's own objects in the order the translator lists them, then the
	// per-host Services (concurrently, so in any order), then the gateway's status, then its
	// routes'; nothing is deleted.
	want := []string{
		"patch configmaps apps/gw-proxy-config",
		"patch deployments apps/gw",
		"patch services apps/kafka-bootstrap",
		"patch services apps/kafka-broker-0",
		"patch services apps/kafka-broker-1",
		"update kafkagateways/status apps/gw",
		"update kafkaroutes/status apps/route",
	}
	writes := f.writes()
	if len(writes) == len(want) {
		slices.Sort(writes[2:5]) // the Services
	}
	if !slices.Equal(writes, want) {
		t.Errorf("writes:\n%s\nwant:\n%s", strings.Join(writes, "\n"), strings.Join(want, "\n"))
	}
	for _, a := range f.dynamic.Actions() {
		p, ok := a.(clienttesting.PatchActionImpl)
		if !ok {
			continue
		}
		if p.GetPatchType() != types.ApplyPatchType || p.PatchOptions.FieldManager != controller.FieldManager || !ptr.Deref(p.PatchOptions.Force, false) {
			t.Errorf("%s %s: not a forced server-side apply by %s: %s %+v", p.GetResource().Resource, p.GetName(), controller.FieldManager, p.GetPatchType(), p.PatchOptions)
		}
	}
	for _, u := range f.applied() {
		if !controlledBy(u, gw) || u.GetAnnotations()[wellknown.AnnotationAppliedHash] == "" {
			t.Errorf("%s %s: not controlled by the gateway, or no applied hash: %v %v", u.GetKind(), u.GetName(), u.GetOwnerReferences(), u.GetAnnotations())
		}
	}
	got, err := f.kafkalink.KroxyliciousV1alpha1().KafkaGateways(testNamespace).Get(context.Background(), "gw", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, gateway.ConditionAccepted); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Accepted = %+v, want True; conditions %+v", c, got.Status.Conditions)
	}
}

func TestSyncOfAnUnchangedGatewayWritesNothing(t *testing.T) {
	f := newFixture(t)
	readyGateway(t, f)
	f.sync("gw")
	f.settle()
	f.sync("gw")
	if w := f.writes(); len(w) > 0 {
		t.Errorf("an unchanged gateway wrote:\n%s", strings.Join(w, "\n"))
	}
}

func TestSyncPrunesOnlyUndesiredObjectsTheGatewayControls(t *testing.T) {
	f := newFixture(t)
	gw := readyGateway(t, f)
	other := newGateway("other")
	f.add(
		newConfigMap("stale", ownedBy(gw)),
		newConfigMap("someone-elses"),
		newConfigMap("other-gateways", ownedBy(other)),
	)
	f.sync("gw")
	if got, want := withVerb(f.writes(), "delete"), []string{"delete configmaps apps/stale"}; !slices.Equal(got, want) {
		t.Errorf("deletes = %v, want %v", got, want)
	}
	for _, a := range f.dynamic.Actions() {
		if d, ok := a.(clienttesting.DeleteActionImpl); ok {
			if pre := d.DeleteOptions.Preconditions; pre == nil || ptr.Deref(pre.UID, "") != "stale-uid" {
				t.Errorf("delete of %s without the UID precondition: %+v", d.Name, d.DeleteOptions)
			}
		}
	}
}

func TestWriteStatus(t *testing.T) {
	accepted := metav1.Condition{Type: gateway.ConditionAccepted, Status: metav1.ConditionTrue, Reason: "Accepted", Message: "ok", ObservedGeneration: 1}
	refused := metav1.Condition{Type: gateway.ConditionAccepted, Status: metav1.ConditionFalse, Reason: "Invalid", Message: "bad", ObservedGeneration: 1}
	then := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	withStatus := func(conds ...metav1.Condition) func(*kroxyliciousv1alpha1.KafkaGateway) {
		return func(g *kroxyliciousv1alpha1.KafkaGateway) { g.Status.Conditions = conds }
	}
	stamped := func(c metav1.Condition) metav1.Condition { c.LastTransitionTime = then; return c }
	cases := map[string]struct {
		gw          *kroxyliciousv1alpha1.KafkaGateway
		desired     []metav1.Condition
		wantWrites  []string
		wantEvents  int
		wantOldTime bool
	}{
		"an unchanged status is not written": {
			gw: newGateway("gw", withStatus(stamped(accepted))), desired: []metav1.Condition{accepted},
		},
		"a new condition is written with the clock's time": {
			gw: newGateway("gw"), desired: []metav1.Condition{accepted},
			wantWrites: []string{"update kafkagateways/status apps/gw"},
		},
		"a condition turning bad is written with an event": {
			gw: newGateway("gw", withStatus(stamped(accepted))), desired: []metav1.Condition{refused},
			wantWrites: []string{"update kafkagateways/status apps/gw"}, wantEvents: 1,
		},
		"a changed message keeps the transition time": {
			gw: newGateway("gw", withStatus(stamped(accepted))), desired: []metav1.Condition{{Type: gateway.ConditionAccepted, Status: metav1.ConditionTrue, Reason: "Accepted", Message: "still ok", ObservedGeneration: 1}},
			wantWrites: []string{"update kafkagateways/status apps/gw"}, wantOldTime: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.add(tc.gw)
			f.kafkalink.ClearActions()
			res := &gateway.Result{GatewayStatus: kroxyliciousv1alpha1.KafkaGatewayStatus{Conditions: tc.desired}}
			if err := f.c.writeStatus(context.Background(), tc.gw, res); err != nil {
				t.Fatal(err)
			}
			if got := f.writes(); !slices.Equal(got, tc.wantWrites) {
				t.Errorf("writes = %v, want %v", got, tc.wantWrites)
			}
			if got := len(f.recorder.Events); got != tc.wantEvents {
				t.Errorf("%d events, want %d", got, tc.wantEvents)
			}
			if len(tc.wantWrites) == 0 {
				return
			}
			got, _ := f.kafkalink.KroxyliciousV1alpha1().KafkaGateways(testNamespace).Get(context.Background(), "gw", metav1.GetOptions{})
			c := meta.FindStatusCondition(got.Status.Conditions, gateway.ConditionAccepted)
			if c == nil {
				t.Fatalf("no Accepted condition in %+v", got.Status)
			}
			if want := f.c.clock.Now(); tc.wantOldTime {
				want = then.Time
				if !c.LastTransitionTime.Time.Equal(want) {
					t.Errorf("lastTransitionTime %v, want %v", c.LastTransitionTime, want)
				}
			} else if !c.LastTransitionTime.Time.Equal(want) {
				t.Errorf("lastTransitionTime %v, want %v", c.LastTransitionTime, want)
			}
		})
	}
}
