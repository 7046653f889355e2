package gateway_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kafkalink/kafkalink/test/framework"
)

// support is what the seed scenarios take for granted.
const support = `
apiVersion: v1
kind: Secret
metadata: {name: my-cert, namespace: my-namespace}
stringData: {tls.crt: CERT, tls.key: KEY}
---
apiVersion: v1
kind: Secret
metadata: {name: my-cert-in-cluster, namespace: my-namespace}
stringData: {tls.crt: CERT, tls.key: KEY}
---
apiVersion: v1
kind: Secret
metadata: {name: my-cert-off-cluster, namespace: my-namespace}
stringData: {tls.crt: CERT, tls.key: KEY}
---
apiVersion: v1
kind: Service
metadata: {name: my-cluster, namespace: kafka}
spec: {ports: [{name: tls, port: 9093}]}
---
apiVersion: v1
kind: Service
metadata: {name: my-cluster-2, namespace: kafka}
spec: {ports: [{name: tls, port: 9093}]}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: routes-from-my-namespace, namespace: kafka}
spec:
  from: [{group: kroxylicious.io, kind: KafkaRoute, namespace: my-namespace}]
  to: [{group: "", kind: Service}]
`

func seed(t *testing.T, name string) string {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "manifests", "examples", "seeds", name)
}

func TestSeedScenarios(t *testing.T) {
	namespace(t, "my-namespace")
	namespace(t, "kafka")
	apply(t, support)
	tests := []struct {
		file     string
		services map[string]string
		routes   []string
		address  string // the LoadBalancer to give an address, for the Programmed transition
	}{
		{file: "scenario-1-in-cluster.yaml", services: map[string]string{
			"my-cluster-bootstrap": "ClusterIP 9092->9092", "my-cluster-broker-1": "ClusterIP 9092->9092",
			"my-cluster-broker-2": "ClusterIP 9092->9092", "my-cluster-broker-3": "ClusterIP 9092->9092",
		}},
		{file: "scenario-2-off-cluster.yaml", services: map[string]string{"my-route": "LoadBalancer 9092->9092"}, address: "my-route"},
		{file: "scenario-3-openshift-routes.yaml", services: map[string]string{
			"my-ingress-route-bootstrap": "ClusterIP 9092->9092", "my-ingress-route-broker-0": "ClusterIP 9092->9092",
			"my-ingress-route-broker-1": "ClusterIP 9092->9092", "my-ingress-route-broker-2": "ClusterIP 9092->9092",
		}, routes: []string{
			"my-ingress-route-bootstrap.apps.example.com", "my-ingress-route-broker-0.apps.example.com",
			"my-ingress-route-broker-1.apps.example.com", "my-ingress-route-broker-2.apps.example.com",
		}},
		{file: "scenario-4-in-and-off-cluster.yaml", services: map[string]string{
			"my-cluster-bootstrap": "ClusterIP 9092->9092", "my-cluster-broker-1": "ClusterIP 9092->9092",
			"my-cluster-broker-2": "ClusterIP 9092->9092", "my-cluster-broker-3": "ClusterIP 9092->9092",
			"my-route": "LoadBalancer 9092->9092",
		}, address: "my-route"},
		{file: "scenario-5-multiple-routes.yaml", services: map[string]string{"my-route": "LoadBalancer 9092->9092", "my-route-2": "LoadBalancer 9092->9092"}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			ctx := context.Background()
			kubectl(t, "apply", "-f", seed(t, tc.file))
			waitServices(t, op, "my-namespace", "simple", tc.services)
			cm, err := kube.CoreV1().ConfigMaps("my-namespace").Get(ctx, "simple-proxy-config", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(cm.Data["proxy-config.yaml"], "targetBootstrap: my-cluster.kafka.svc.cluster.local.:9093") {
				t.Errorf("the proxy configuration lacks the target bootstrap:\n%s", cm.Data["proxy-config.yaml"])
			}
			dep, err := kube.AppsV1().Deployments("my-namespace").Get(ctx, "simple", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ref := metav1.GetControllerOf(dep); ref == nil || ref.Kind != "KafkaGateway" || ref.Name != "simple" {
				t.Errorf("the Deployment is not controlled by the gateway: %v", dep.OwnerReferences)
			}
			if len(tc.routes) > 0 {
				poll(t, op, "OpenShift Routes", func() (bool, error) {
					list, err := dyn.Resource(gvrRoute).Namespace("my-namespace").List(ctx, metav1.ListOptions{LabelSelector: "kafkalink.io/gateway=simple"})
					if err != nil {
						return false, err
					}
					var hosts []string
					for _, r := range list.Items {
						host, _, _ := unstructured.NestedString(r.Object, "spec", "host")
						term, _, _ := unstructured.NestedString(r.Object, "spec", "tls", "termination")
						if term != "passthrough" {
							return false, fmt.Errorf("route %s termination %q", r.GetName(), term)
						}
						hosts = append(hosts, host)
					}
					sort.Strings(hosts)
					if fmt.Sprint(hosts) != fmt.Sprint(tc.routes) {
						return false, fmt.Errorf("hosts %v", hosts)
					}
					return true, nil
				})
			}
			waitGatewayCondition(t, op, "my-namespace", "simple", "Accepted", metav1.ConditionTrue, "Accepted")
			waitGatewayCondition(t, op, "my-namespace", "simple", "Programmed", metav1.ConditionFalse, "")
			if tc.address != "" {
				// Accepted -> Programmed once the Deployment is available and the LB has an address.
				markPodsReady(t, op, "my-namespace", "simple")
				waitGatewayCondition(t, op, "my-namespace", "simple", "Programmed", metav1.ConditionFalse, "AddressNotAssigned")
				assignAddress(t, op, "my-namespace", tc.address, "203.0.113.10")
				gw := waitGatewayCondition(t, op, "my-namespace", "simple", "Programmed", metav1.ConditionTrue, "Programmed")
				if len(gw.Status.Addresses) != 1 || gw.Status.Addresses[0].Value != "203.0.113.10" {
					t.Errorf("addresses: %+v", gw.Status.Addresses)
				}
				if l := gw.Status.Listeners; len(l) != 1 || l[0].AttachedRoutes != 1 {
					t.Errorf("listener status: %+v", l)
				}
			}
			for _, r := range []string{"my-route", "my-route-2"} {
				if strings.Contains(tc.file, "multiple") || r == "my-route" {
					waitRouteCondition(t, op, "my-namespace", r, "Accepted", metav1.ConditionTrue, "Accepted")
					waitRouteCondition(t, op, "my-namespace", r, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")
				}
			}
			// A deleted gateway leaves nothing behind: the garbage collector follows the owner references.
			kubectl(t, "delete", "-f", seed(t, tc.file), "--wait=true")
			waitServices(t, op, "my-namespace", "simple", map[string]string{})
			poll(t, op, "the Deployment and ConfigMap to be collected", func() (bool, error) {
				_, err1 := kube.AppsV1().Deployments("my-namespace").Get(ctx, "simple", metav1.GetOptions{})
				_, err2 := kube.CoreV1().ConfigMaps("my-namespace").Get(ctx, "simple-proxy-config", metav1.GetOptions{})
				return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2), nil
			})
		})
	}
}

const gatewayYAML = `
kind: KafkaGateway
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  listeners:
    - {name: one, port: 9092, protocol: kroxylicious.io/kafka-tls, tls: {certificateRefs: [{name: %[3]s}]}}
`

const routeYAML = `
kind: KafkaRoute
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  parentRefs:
    - name: %[3]s
      brokers: [{advertisedBrokerIds: [0, 1]}]
      hostnames: [%[4]s]
      rules: [{name: r, backendRefs: [{name: backend, port: 9093}]}]
`

const backendYAML = `
apiVersion: v1
kind: Service
metadata: {name: backend, namespace: %[1]s}
spec: {ports: [{port: 9093}]}
---
apiVersion: v1
kind: Secret
metadata: {name: cert, namespace: %[1]s}
stringData: {tls.crt: CERT, tls.key: KEY}
`

func TestConflictingRoutesTheLaterLoses(t *testing.T) {
	ns := "conflict"
	namespace(t, ns)
	apply(t, fmt.Sprintf(backendYAML, ns)+"---"+fmt.Sprintf(gatewayYAML, ns, "gw", "cert"))
	apply(t, fmt.Sprintf(routeYAML, ns, "first", "gw", "team-%.svc.cluster.local"))
	waitRouteCondition(t, op, ns, "first", "Accepted", metav1.ConditionTrue, "Accepted")
	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
	apply(t, fmt.Sprintf(routeYAML, ns, "second", "gw", "team-%."+ns+".svc.cluster.local"))
	waitRouteCondition(t, op, ns, "second", "Accepted", metav1.ConditionFalse, "HostnameConflict")
	waitRouteCondition(t, op, ns, "first", "Accepted", metav1.ConditionTrue, "Accepted")
	gw := waitGatewayCondition(t, op, ns, "gw", "Accepted", metav1.ConditionTrue, "Accepted")
	poll(t, op, "listener Conflicted=True HostnameConflict", func() (bool, error) {
		g, err := kl.KroxyliciousV1alpha1().KafkaGateways(ns).Get(context.Background(), "gw", metav1.GetOptions{})
		if err != nil || len(g.Status.Listeners) == 0 {
			return false, err
		}
		gw = g
		for _, c := range g.Status.Listeners[0].Conditions {
			if c.Type == "Conflicted" {
				return c.Status == metav1.ConditionTrue && c.Reason == "HostnameConflict", nil
			}
		}
		return false, nil
	})
	if gw.Status.Listeners[0].AttachedRoutes != 1 {
		t.Errorf("attachedRoutes = %d, want 1", gw.Status.Listeners[0].AttachedRoutes)
	}
	// The earlier route keeps its Services.
	waitServices(t, op, ns, "gw", map[string]string{
		"team-bootstrap": "ClusterIP 9092->9092", "team-broker-0": "ClusterIP 9092->9092", "team-broker-1": "ClusterIP 9092->9092",
	})
	// Deleting the winner lets the other route in.
	kubectl(t, "delete", "kafkaroute", "-n", ns, "first")
	waitRouteCondition(t, op, ns, "second", "Accepted", metav1.ConditionTrue, "Accepted")
}

func TestMissingSecretThenCreated(t *testing.T) {
	ns := "missing-secret"
	namespace(t, ns)
	apply(t, fmt.Sprintf(gatewayYAML, ns, "gw", "late-cert"))
	poll(t, op, "listener ResolvedRefs=False InvalidCertificateRef", func() (bool, error) {
		g, err := kl.KroxyliciousV1alpha1().KafkaGateways(ns).Get(context.Background(), "gw", metav1.GetOptions{})
		if err != nil || len(g.Status.Listeners) == 0 {
			return false, err
		}
		for _, c := range g.Status.Listeners[0].Conditions {
			if c.Type == "ResolvedRefs" {
				return c.Status == metav1.ConditionFalse && c.Reason == "InvalidCertificateRef" && strings.Contains(c.Message, "late-cert"), nil
			}
		}
		return false, nil
	})
	poll(t, op, "a Warning event naming the missing Secret", func() (bool, error) {
		events, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == "gw" && strings.Contains(e.Message, "late-cert") {
				return true, nil
			}
		}
		return false, nil
	})
	cert, key := framework.TestKeyPair()
	_, err := kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "late-cert"}, Data: map[string][]byte{"tls.crt": cert, "tls.key": key},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	poll(t, op, "listener ResolvedRefs=True once the Secret exists", func() (bool, error) {
		g, err := kl.KroxyliciousV1alpha1().KafkaGateways(ns).Get(context.Background(), "gw", metav1.GetOptions{})
		if err != nil || len(g.Status.Listeners) == 0 {
			return false, err
		}
		for _, c := range g.Status.Listeners[0].Conditions {
			if c.Type == "ResolvedRefs" {
				return c.Status == metav1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	poll(t, op, "the Secret mounted in the Deployment", func() (bool, error) {
		d, err := kube.AppsV1().Deployments(ns).Get(context.Background(), "gw", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == "late-cert" {
				return true, nil
			}
		}
		return false, nil
	})
}

func TestDeletedRouteServicesArePruned(t *testing.T) {
	ns := "prune"
	namespace(t, ns)
	apply(t, fmt.Sprintf(backendYAML, ns)+"---"+fmt.Sprintf(gatewayYAML, ns, "gw", "cert"))
	apply(t, fmt.Sprintf(routeYAML, ns, "inside", "gw", "in-%.svc.cluster.local"))
	apply(t, fmt.Sprintf(routeYAML, ns, "outside", "gw", "out-%.example.com"))
	waitServices(t, op, ns, "gw", map[string]string{
		"in-bootstrap": "ClusterIP 9092->9092", "in-broker-0": "ClusterIP 9092->9092", "in-broker-1": "ClusterIP 9092->9092",
		"outside": "LoadBalancer 9092->9092",
	})
	kubectl(t, "delete", "kafkaroute", "-n", ns, "inside")
	waitServices(t, op, ns, "gw", map[string]string{"outside": "LoadBalancer 9092->9092"})
	// Detaching (pointing the route elsewhere) prunes too, and clears the old gateway's status entry.
	apply(t, fmt.Sprintf(routeYAML, ns, "outside", "elsewhere", "out-%.example.com"))
	waitServices(t, op, ns, "gw", map[string]string{})
	poll(t, op, "the detached route's status entry to be removed", func() (bool, error) {
		r, err := kl.KroxyliciousV1alpha1().KafkaRoutes(ns).Get(context.Background(), "outside", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(r.Status.Parents) == 0, nil
	})
}

// TestHandEditedObjectsAreRestored: generated objects belong to the gateway; a hand edit of a
// field kafkalink sets is put back, while what others add (a label here) is left alone.
func TestHandEditedObjectsAreRestored(t *testing.T) {
	ctx := context.Background()
	ns := "drift"
	namespace(t, ns)
	apply(t, fmt.Sprintf(backendYAML, ns)+"---"+fmt.Sprintf(gatewayYAML, ns, "gw", "cert"))
	apply(t, fmt.Sprintf(routeYAML, ns, "inside", "gw", "in-%.svc.cluster.local"))
	want := map[string]string{
		"in-bootstrap": "ClusterIP 9092->9092", "in-broker-0": "ClusterIP 9092->9092", "in-broker-1": "ClusterIP 9092->9092",
	}
	waitServices(t, op, ns, "gw", want)
	settle(t)

	kubectl(t, "patch", "service", "-n", ns, "in-broker-0", "--type=json",
		"-p", `[{"op":"replace","path":"/spec/ports/0/targetPort","value":1234}]`)
	kubectl(t, "label", "service", "-n", ns, "in-broker-0", "team=kafka")
	kubectl(t, "patch", "configmap", "-n", ns, "gw-proxy-config", "--type=merge", "-p", `{"data":{"proxy-config.yaml":"edited"}}`)
	kubectl(t, "delete", "deployment", "-n", ns, "gw")

	waitServices(t, op, ns, "gw", want)
	poll(t, op, "the ConfigMap and the Deployment to be restored", func() (bool, error) {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "gw-proxy-config", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for k, v := range cm.Data {
			if v == "edited" {
				return false, fmt.Errorf("%s is still edited", k)
			}
		}
		_, err = kube.AppsV1().Deployments(ns).Get(ctx, "gw", metav1.GetOptions{})
		return err == nil, err
	})
	svc, err := kube.CoreV1().Services(ns).Get(ctx, "in-broker-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Labels["team"] != "kafka" {
		t.Errorf("the label added by hand was removed: %v", svc.Labels)
	}
	poll(t, op, "a Restored event", func() (bool, error) {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "Restored" && e.InvolvedObject.Name == "gw" {
				return true, nil
			}
		}
		return false, nil
	})
	// Restoring converges: the operator stops writing.
	settle(t)
}

// TestForeignObjectsAreNeverTakenOver: a ConfigMap someone else owns under the name the gateway
// wants is reported (Programmed=False NameInUse) and left as it is. The controller caches only
// the metadata of such objects (see cache.go), which is all this check needs.
func TestForeignObjectsAreNeverTakenOver(t *testing.T) {
	ctx := context.Background()
	ns := "foreign"
	namespace(t, ns)
	_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "gw-proxy-config"}, Data: map[string]string{"mine": "yes"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, fmt.Sprintf(backendYAML, ns)+"---"+fmt.Sprintf(gatewayYAML, ns, "gw", "cert"))
	g := waitGatewayCondition(t, op, ns, "gw", "Programmed", metav1.ConditionFalse, "NameInUse")
	for _, c := range g.Status.Conditions {
		if c.Type == "Programmed" && !strings.Contains(c.Message, "ConfigMap gw-proxy-config") {
			t.Errorf("Programmed message does not name the ConfigMap: %q", c.Message)
		}
	}
	settle(t)
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "gw-proxy-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["mine"] != "yes" || len(cm.Data) != 1 || len(cm.OwnerReferences) != 0 {
		t.Errorf("the foreign ConfigMap was changed: %+v", cm)
	}
	// Once the name is free, the gateway creates its own.
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "gw-proxy-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, op, "the gateway's own ConfigMap", func() (bool, error) {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "gw-proxy-config", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && len(cm.OwnerReferences) == 1, err
	})
}

const tlsRouteYAML = `
kind: KafkaGatewayParameters
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: params, namespace: %[1]s}
spec:
  parentRefs: [{name: kafka-gateway, sectionName: kafka}]
---
kind: KafkaGateway
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  listeners:
    - {name: one, port: 9092, protocol: kroxylicious.io/kafka-tls, tls: {certificateRefs: [{name: cert}]}}
  infrastructure:
    parametersRef: {group: kroxylicious.io, kind: KafkaGatewayParameters, name: params}
`

func TestTLSRoutesWaitForTheirParent(t *testing.T) {
	ctx := context.Background()
	ns := "tlsroute"
	namespace(t, ns)
	apply(t, fmt.Sprintf(backendYAML, ns)+"---"+fmt.Sprintf(tlsRouteYAML, ns, "gw")+"---"+fmt.Sprintf(routeYAML, ns, "ext", "gw", "kafka-%.example.com"))
	want := []string{"kafka-bootstrap", "kafka-broker-0", "kafka-broker-1"}
	waitServices(t, op, ns, "gw", map[string]string{
		"kafka-bootstrap": "ClusterIP 9092->9092", "kafka-broker-0": "ClusterIP 9092->9092", "kafka-broker-1": "ClusterIP 9092->9092",
	})
	var routes []unstructured.Unstructured
	poll(t, op, "TLSRoutes per host", func() (bool, error) {
		list, err := dyn.Resource(gvrTLSRoute).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		routes = list.Items
		var names []string
		for _, r := range list.Items {
			names = append(names, r.GetName())
		}
		sort.Strings(names)
		if fmt.Sprint(names) != fmt.Sprint(want) {
			return false, fmt.Errorf("TLSRoutes %v", names)
		}
		return true, nil
	})
	markPodsReady(t, op, ns, "gw")
	// Nobody accepts them: after the 4s timeout the gateway says so.
	waitGatewayCondition(t, op, ns, "gw", "Programmed", metav1.ConditionFalse, "TLSRouteNotAccepted")
	// The test acts as the Gateway API implementation and accepts every TLSRoute.
	for _, r := range routes {
		poll(t, op, "accepting TLSRoute "+r.GetName(), func() (bool, error) {
			cur, err := dyn.Resource(gvrTLSRoute).Namespace(ns).Get(ctx, r.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			parents := []any{map[string]any{
				"parentRef":      map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "kafka-gateway", "sectionName": "kafka"},
				"controllerName": "example.com/gateway",
				"conditions": []any{map[string]any{
					"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "observedGeneration": cur.GetGeneration(),
					"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
				}},
			}}
			if err := unstructured.SetNestedSlice(cur.Object, parents, "status", "parents"); err != nil {
				return false, err
			}
			_, err = dyn.Resource(gvrTLSRoute).Namespace(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err == nil, err
		})
	}
	waitGatewayCondition(t, op, ns, "gw", "Programmed", metav1.ConditionTrue, "Programmed")
	// Check one TLSRoute's shape against the tlsroute proposal.
	r, err := dyn.Resource(gvrTLSRoute).Namespace(ns).Get(ctx, "kafka-broker-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hosts, _, _ := unstructured.NestedStringSlice(r.Object, "spec", "hostnames")
	rules, _, _ := unstructured.NestedSlice(r.Object, "spec", "rules")
	if fmt.Sprint(hosts) != "[kafka-broker-1.example.com]" || len(rules) != 1 {
		t.Errorf("TLSRoute kafka-broker-1: hosts %v rules %v", hosts, rules)
	}
}

// TestRestartMakesNoWrites runs last: it restarts the shared operator.
func TestRestartMakesNoWrites(t *testing.T) {
	ns := "restart"
	namespace(t, ns)
	apply(t, fmt.Sprintf(backendYAML, ns)+"---"+fmt.Sprintf(gatewayYAML, ns, "gw", "cert"))
	apply(t, fmt.Sprintf(routeYAML, ns, "inside", "gw", "in-%.svc.cluster.local"))
	apply(t, fmt.Sprintf(routeYAML, ns, "outside", "gw", "out-%.example.com"))
	waitRouteCondition(t, op, ns, "outside", "Accepted", metav1.ConditionTrue, "Accepted")
	waitServices(t, op, ns, "gw", map[string]string{
		"in-bootstrap": "ClusterIP 9092->9092", "in-broker-0": "ClusterIP 9092->9092", "in-broker-1": "ClusterIP 9092->9092",
		"outside": "LoadBalancer 9092->9092",
	})
	// Let everything settle: no write for two seconds.
	settle(t)
	if err := op.p.Stop(15 * time.Second); err != nil {
		t.Fatalf("operator did not stop cleanly: %v", err)
	}
	before := len(writesSince(t, 0))
	next, err := startOperator("operator-restarted")
	if err != nil {
		t.Fatal(err)
	}
	op = next
	time.Sleep(5 * time.Second) // every gateway and route is reconciled well within this
	if writes := writesSince(t, before); len(writes) > 0 {
		var lines []string
		for _, w := range writes {
			lines = append(lines, w.Verb+" "+w.RequestURI)
		}
		t.Errorf("the restarted operator wrote %d times although nothing changed:\n%s\n%s", len(writes), strings.Join(lines, "\n"), op.tail())
	}
}

// settle waits until the operator has made no write for two seconds.
func settle(t *testing.T) {
	t.Helper()
	last := len(writesSince(t, 0))
	quiet := time.Now()
	deadline := time.Now().Add(waitLimit)
	for time.Since(quiet) < 2*time.Second {
		if time.Now().After(deadline) {
			t.Fatal("the operator never stopped writing")
		}
		time.Sleep(200 * time.Millisecond)
		if n := len(writesSince(t, 0)); n != last {
			last, quiet = n, time.Now()
		}
	}
}
