package gateway_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The namespaces of TestSeedScenarioExplainsItself: the seed's my-namespace and kafka, renamed
// so that TestSeedScenarios' ReferenceGrant does not hide the missing one.
const (
	diagApps  = "seed-diag"
	diagKafka = "seed-diag-kafka"
)

var gvrNodePool = schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1", Resource: "kafkanodepools"}

// diagKafkaYAML is a Strimzi cluster behind the seed's Service my-cluster, as a new user has it:
// a tls listener on 9093, a node pool whose brokers are numbered from 0, its cluster CA, and a
// Service of the seed's name selecting its broker pods.
const diagKafkaYAML = `
apiVersion: kafka.strimzi.io/v1
kind: Kafka
metadata: {name: my-cluster, namespace: seed-diag-kafka}
spec:
  kafka:
    listeners:
      - {name: tls, port: 9093, type: internal, tls: true}
---
apiVersion: kafka.strimzi.io/v1
kind: KafkaNodePool
metadata: {name: dual-role, namespace: seed-diag-kafka, labels: {strimzi.io/cluster: my-cluster}}
spec: {replicas: 3, roles: [controller, broker], storage: {type: ephemeral}}
---
apiVersion: v1
kind: Secret
metadata: {name: my-cluster-cluster-ca-cert, namespace: seed-diag-kafka, labels: {strimzi.io/cluster: my-cluster, strimzi.io/kind: Kafka}}
stringData: {ca.crt: CERT}
---
apiVersion: v1
kind: Service
metadata: {name: my-cluster, namespace: seed-diag-kafka}
spec:
  selector: {strimzi.io/cluster: my-cluster, strimzi.io/kind: Kafka, strimzi.io/broker-role: "true"}
  ports: [{name: tls, port: 9093, targetPort: 9093}]
---
apiVersion: v1
kind: Secret
metadata: {name: my-cert, namespace: seed-diag}
stringData: {tls.crt: CERT, tls.key: KEY}
`

// The seed's in-cluster scenario, applied as written in front of a Strimzi cluster, says in
// status what is wrong and what to apply, and applying exactly that fixes it: the missing
// ReferenceGrant (RefNotPermitted, with the grant as YAML), then port 9093 served with TLS but no
// KafkaBackendTLSPolicy (BackendTLS=False, with the policy as YAML, and a Warning event), and
// advertisedBrokerIds [1, 2, 3] against the Kafka's brokers 0, 1, 2 (BrokerIDsMatch=False). The
// gateway's Ready condition, which the seed's status example uses, follows Accepted and
// Programmed, so `kubectl wait --for=condition=Ready` returns.
func TestSeedScenarioExplainsItself(t *testing.T) {
	ctx := context.Background()
	namespace(t, diagApps)
	namespace(t, diagKafka)
	apply(t, diagKafkaYAML)
	setPoolNodeIDs(t, diagKafka, "dual-role", 0, 1, 2)

	raw, err := os.ReadFile(seed(t, "scenario-1-in-cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	scenario := strings.NewReplacer("namespace: my-namespace", "namespace: "+diagApps, "namespace: kafka", "namespace: "+diagKafka).Replace(string(raw))
	apply(t, scenario)

	// 1. The ReferenceGrant the seed never mentions.
	c := waitRouteConditionMessage(t, diagApps, "my-route", "ResolvedRefs", "RefNotPermitted")
	_, grant, ok := strings.Cut(c.Message, "create this ReferenceGrant:\n")
	if !ok || !strings.Contains(grant, "namespace: "+diagKafka) {
		t.Fatalf("RefNotPermitted proposes no ReferenceGrant: %s", c.Message)
	}
	apply(t, grant)
	waitRouteCondition(t, op, diagApps, "my-route", "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")

	// 2. Port 9093 is the Kafka's TLS listener, and nothing makes the proxy use TLS.
	c = waitRouteConditionMessage(t, diagApps, "my-route", "BackendTLS", "BackendTLSPolicyMissing")
	_, policy, ok := strings.Cut(c.Message, "create a policy such as:\n")
	if !ok || !strings.Contains(policy, "name: my-cluster-cluster-ca-cert") {
		t.Fatalf("BackendTLS proposes no policy trusting the cluster CA: %s", c.Message)
	}
	waitEvent(t, diagApps, "my-route", "BackendTLSPolicyMissing")

	// 3. The advertised ids are not the Kafka's.
	c = waitRouteConditionMessage(t, diagApps, "my-route", "BrokerIDsMatch", "BrokerIDsMismatch")
	for _, want := range []string{"advertised ids with no broker: [3]", "brokers not advertised (clients sent to them fail): [0]"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("BrokerIDsMatch message lacks %q: %s", want, c.Message)
		}
	}

	// Applying the proposed policy as written: the proxy connects with TLS, trusting the CA.
	apply(t, policy)
	waitRouteCondition(t, op, diagApps, "my-route", "BackendTLS", metav1.ConditionTrue, "BackendTLSPolicyFound")
	poll(t, op, "the proxy configuration to trust the cluster CA", func() (bool, error) {
		cm, err := kube.CoreV1().ConfigMaps(diagApps).Get(ctx, "simple-proxy-config", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if cfg := cm.Data["proxy-config.yaml"]; !strings.Contains(cfg, "serverName: my-cluster-kafka-bootstrap."+diagKafka+".svc") {
			return false, fmt.Errorf("no upstream TLS in:\n%s", cfg)
		}
		return true, nil
	})

	// Ready follows Programmed until the proxy is available, then is True: the seed's
	// kubectl wait returns.
	waitGatewayCondition(t, op, diagApps, "simple", "Ready", metav1.ConditionFalse, "DeploymentNotAvailable")
	markPodsReady(t, op, diagApps, "simple")
	kubectl(t, "wait", "--for=condition=Ready", "-n", diagApps, "kafkagateway/simple", "--timeout=90s")
	out := kubectl(t, "get", "-n", diagApps, "kafkagateway", "simple")
	if !strings.Contains(out, "READY") {
		t.Errorf("kubectl get kafkagateway shows no Ready column:\n%s", out)
	}
}

// waitRouteConditionMessage waits for a False route parent condition of a reason and returns it.
func waitRouteConditionMessage(t *testing.T, ns, route, condType, reason string) metav1.Condition {
	t.Helper()
	waitRouteCondition(t, op, ns, route, condType, metav1.ConditionFalse, reason)
	c, err := routeParentCondition(ns, route, condType)
	if err != nil || c == nil {
		t.Fatalf("route %s/%s %s: %v", ns, route, condType, err)
	}
	return *c
}

// setPoolNodeIDs writes a node pool's status.nodeIds, as Strimzi does.
func setPoolNodeIDs(t *testing.T, ns, name string, ids ...int64) {
	t.Helper()
	poll(t, op, "node pool status", func() (bool, error) {
		pool, err := dyn.Resource(gvrNodePool).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		list := make([]any, len(ids))
		for i, id := range ids {
			list[i] = id
		}
		pool.Object["status"] = map[string]any{"nodeIds": list, "replicas": int64(len(ids)), "roles": []any{"controller", "broker"}}
		_, err = dyn.Resource(gvrNodePool).Namespace(ns).UpdateStatus(context.Background(), pool, metav1.UpdateOptions{})
		return err == nil, err
	})
}

// brokerIdentityYAML is a gateway whose route names brokers by the hash mapping, on an
// in-cluster hostname (per-broker Services), and on one TLSRoutes expose under a Gateway API
// Gateway whose TLS listener terminates TLS.
const brokerIdentityYAML = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: terminating, namespace: %[1]s}
spec:
  gatewayClassName: example
  listeners:
    - {name: kafka, port: 443, protocol: TLS, tls: {mode: Terminate, certificateRefs: [{name: cert}]}}
---
kind: KafkaGatewayParameters
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: params, namespace: %[1]s}
spec:
  parentRefs: [{name: terminating, sectionName: kafka}]
---
kind: KafkaGateway
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: gw, namespace: %[1]s}
spec:
  listeners:
    - {name: one, port: 9092, protocol: kroxylicious.io/kafka-tls, tls: {certificateRefs: [{name: cert}]}}
  infrastructure:
    parametersRef: {group: kroxylicious.io, kind: KafkaGatewayParameters, name: params}
---
kind: KafkaRoute
apiVersion: kroxylicious.io/v1alpha1
metadata: {name: hashed, namespace: %[1]s}
spec:
  parentRefs:
    - name: gw
      brokers: [{advertisedBrokerIds: [0, 1], brokerIdentityMapping: hash}]
      hostnames: [hashed-%%.svc.cluster.local, ext-%%.example.com]
      rules: [{name: r, backendRefs: [{name: backend, port: 9093}]}]
`

// brokerIdentityMapping hash through the operator: per-broker Services named by tokens, the key
// in a generated Secret the proxy mounts, the same names after the gateway is reconciled again;
// and a parent Gateway that terminates TLS is refused with ParentTerminatesTLS.
func TestHashedBrokerNamesAndTerminatingParent(t *testing.T) {
	ctx := context.Background()
	ns := "hashed"
	namespace(t, ns)
	apply(t, fmt.Sprintf(backendYAML, ns)+"---"+fmt.Sprintf(brokerIdentityYAML, ns))
	names := waitHashedServices(t, ns)
	key, err := kube.CoreV1().Secrets(ns).Get(ctx, "gw-broker-identity", metav1.GetOptions{})
	if err != nil || len(key.Data["key"]) != 32 || metav1.GetControllerOf(key) == nil {
		t.Fatalf("key Secret: %v %+v", err, key)
	}
	dep, err := kube.AppsV1().Deployments(ns).Get(ctx, "gw", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mounted := false
	for _, v := range dep.Spec.Template.Spec.Volumes {
		mounted = mounted || v.Secret != nil && v.Secret.SecretName == "gw-broker-identity"
	}
	if !mounted {
		t.Error("the proxy does not mount the key Secret")
	}
	waitGatewayCondition(t, op, ns, "gw", "Programmed", metav1.ConditionFalse, "ParentTerminatesTLS")
	poll(t, op, "TLSRoutes that name no terminating parent", func() (bool, error) {
		list, err := dyn.Resource(gvrTLSRoute).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(list.Items) != 3 {
			return false, fmt.Errorf("%d TLSRoutes, want 3", len(list.Items))
		}
		for _, r := range list.Items {
			if parents, _, _ := unstructured.NestedSlice(r.Object, "spec", "parentRefs"); len(parents) != 0 {
				return false, fmt.Errorf("TLSRoute %s names %v", r.GetName(), parents)
			}
		}
		return true, nil
	})

	// Reconciled again (the gateway changes): the same names.
	kubectl(t, "annotate", "-n", ns, "kafkagateway/gw", "example.com/touch=1")
	kubectl(t, "label", "-n", ns, "kafkaroute/hashed", "example.com/touch=1")
	settle(t)
	if again := waitHashedServices(t, ns); fmt.Sprint(again) != fmt.Sprint(names) {
		t.Errorf("hashed Services changed from %v to %v", names, again)
	}
}

// waitHashedServices waits for the route's bootstrap and two hashed per-broker Services and
// returns the broker Services' names.
func waitHashedServices(t *testing.T, ns string) []string {
	t.Helper()
	var brokers []string
	poll(t, op, "hashed per-broker Services", func() (bool, error) {
		got, err := services(ns, "gw")
		if err != nil {
			return false, err
		}
		brokers = nil
		for name := range got {
			if token, ok := strings.CutPrefix(name, "hashed-broker-"); ok {
				if len(token) != 26 || strings.Trim(token, "abcdefghijklmnopqrstuvwxyz234567") != "" {
					return false, fmt.Errorf("Service %s is not a hashed name", name)
				}
				brokers = append(brokers, name)
			}
		}
		_, boot := got["hashed-bootstrap"]
		if !boot || len(brokers) != 2 {
			return false, fmt.Errorf("Services %v", got)
		}
		return true, nil
	})
	sort.Strings(brokers)
	return brokers
}
