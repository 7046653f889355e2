package plugin_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kafkalink/kafkalink/test/framework"
)

var gvrNodePool = schema.GroupVersionResource{Group: "kafka.strimzi.io", Version: "v1", Resource: "kafkanodepools"}

// seedStrimziCluster is a Strimzi cluster behind a Service of the seed's backend name, as a new
// user has it: a tls listener on 9093 and a node pool whose brokers are numbered from 0.
const seedStrimziCluster = `
apiVersion: kafka.strimzi.io/v1
kind: Kafka
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  kafka:
    listeners:
      - {name: tls, port: 9093, type: internal, tls: true}
---
apiVersion: kafka.strimzi.io/v1
kind: KafkaNodePool
metadata: {name: %[1]s-pool, namespace: %[2]s, labels: {strimzi.io/cluster: %[1]s}}
spec: {replicas: 3, roles: [controller, broker], storage: {type: ephemeral}}
---
apiVersion: v1
kind: Secret
metadata: {name: %[1]s-cluster-ca-cert, namespace: %[2]s, labels: {strimzi.io/cluster: %[1]s, strimzi.io/kind: Kafka}}
stringData: {ca.crt: CERT}
---
apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  selector: {strimzi.io/cluster: %[1]s, strimzi.io/kind: Kafka, strimzi.io/broker-role: "true"}
  ports: [{name: tls, port: 9093, targetPort: 9093}]
`

// TestSeedScenariosExplainThemselves applies each of the seed's five gateway scenarios
// (manifests/examples/seeds) as written, in front of the Strimzi clusters they name, and needs
// kubectl kafkalink why to show every route's failing condition with what to do: first the
// ReferenceGrant the seed never mentions (its YAML in the message, applied here as written), then
// port 9093 served with TLS and no KafkaBackendTLSPolicy, and advertised broker ids [1,2,3]
// against Strimzi's 0, 1, 2. The gateway's own failing condition is explained too.
func TestSeedScenariosExplainThemselves(t *testing.T) {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		files, _ := filepath.Glob(filepath.Join(root, "manifests", "examples", "seeds", fmt.Sprintf("scenario-%d-*.yaml", i)))
		if len(files) != 1 {
			t.Fatalf("scenario %d: %v", i, files)
		}
		t.Run(filepath.Base(files[0]), func(t *testing.T) { seedScenarioExplainsItself(t, i, files[0]) })
	}
}

func seedScenarioExplainsItself(t *testing.T, i int, file string) {
	apps, kafkaNS := fmt.Sprintf("seed%d", i), fmt.Sprintf("seed%d-kafka", i)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// The seed's namespaces, renamed so that each scenario has its own and
	// TestGatewayBackendMissing's ReferenceGrant does not hide the missing one.
	scenario := strings.NewReplacer("namespace: my-namespace", "namespace: "+apps, "namespace: kafka", "namespace: "+kafkaNS).Replace(string(raw))
	routes := seedRoutes(t, scenario)

	apply(t, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n"+
		"apiVersion: v1\nkind: Secret\nmetadata: {name: my-cert, namespace: %s}\nstringData: {tls.crt: CERT, tls.key: KEY}\n", apps, kafkaNS, apps))
	for _, r := range routes {
		apply(t, fmt.Sprintf(seedStrimziCluster, r.backend, kafkaNS))
		setPoolNodeIDs(t, kafkaNS, r.backend+"-pool", 0, 1, 2)
	}
	apply(t, scenario)

	for _, r := range routes {
		why := waitWhy(t, apps, "kafkaroute/"+r.name, "RefNotPermitted", "kind: ReferenceGrant", "to do:")
		apply(t, grantFromStatus(t, apps, r.name))
		if !strings.Contains(why, "namespace: "+kafkaNS) {
			t.Errorf("route %s: the proposed ReferenceGrant is not in the backend's namespace:\n%s", r.name, why)
		}
	}
	for _, r := range routes {
		waitWhy(t, apps, "kafkaroute/"+r.name, "BackendTLSPolicyMissing", "kind: KafkaBackendTLSPolicy", r.backend+"-cluster-ca-cert")
		if r.advertisesFromOne {
			waitWhy(t, apps, "kafkaroute/"+r.name, "BrokerIDsMismatch", "advertised ids with no broker: [3]")
		}
	}
	// The proxy pods never run here (no kubelet): the gateway says so, with what to check.
	gw := waitWhy(t, apps, "kafkagateway/simple", "Programmed=False", "to do:")
	if i == 3 && !strings.Contains(gw, "OpenShiftRoutesUnavailable") {
		t.Errorf("scenario 3's hostnames need OpenShift Routes, which this cluster lacks; why does not say so:\n%s", gw)
	}
	status := kafkalink(t, "status", "kafkagateway/simple", "-n", apps)
	for _, r := range routes {
		if !strings.Contains(status, "KafkaRoute "+apps+"/"+r.name) {
			t.Errorf("status of the gateway does not show route %s:\n%s", r.name, status)
		}
	}
}

// seedRoute is what the test needs of a scenario's KafkaRoute.
type seedRoute struct {
	name, backend     string
	advertisesFromOne bool // advertisedBrokerIds [1,2,3], where Strimzi numbers brokers from 0
}

func seedRoutes(t *testing.T, scenario string) []seedRoute {
	t.Helper()
	var out []seedRoute
	for _, doc := range strings.Split(scenario, "\n---") {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				ParentRefs []struct {
					Brokers []struct {
						AdvertisedBrokerIDs []int `json:"advertisedBrokerIds"`
					} `json:"brokers"`
					Rules []struct {
						BackendRefs []struct {
							Name string `json:"name"`
						} `json:"backendRefs"`
					} `json:"rules"`
				} `json:"parentRefs"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if obj.Kind != "KafkaRoute" {
			continue
		}
		if len(obj.Spec.ParentRefs) == 0 || len(obj.Spec.ParentRefs[0].Rules) == 0 || len(obj.Spec.ParentRefs[0].Rules[0].BackendRefs) == 0 || len(obj.Spec.ParentRefs[0].Brokers) == 0 {
			t.Fatalf("KafkaRoute %s is not in the seed's shape", obj.Metadata.Name)
		}
		parent := obj.Spec.ParentRefs[0]
		r := seedRoute{name: obj.Metadata.Name, backend: parent.Rules[0].BackendRefs[0].Name}
		ids := parent.Brokers[0].AdvertisedBrokerIDs
		r.advertisesFromOne = len(ids) > 0 && ids[0] == 1
		out = append(out, r)
	}
	if len(out) == 0 {
		t.Fatal("the scenario has no KafkaRoute")
	}
	return out
}

// waitWhy waits until kubectl kafkalink why on the object shows every one of the texts, and
// returns its output.
func waitWhy(t *testing.T, ns, object string, texts ...string) string {
	t.Helper()
	var out string
	poll(t, fmt.Sprintf("kubectl kafkalink why %s to show %q", object, texts), func() (bool, error) {
		out = kafkalink(t, "why", object, "-n", ns)
		for _, s := range texts {
			if !strings.Contains(out, s) {
				return false, fmt.Errorf("missing %q in:\n%s", s, out)
			}
		}
		return true, nil
	})
	return out
}

// grantFromStatus is the ReferenceGrant a route's RefNotPermitted message proposes.
func grantFromStatus(t *testing.T, ns, route string) string {
	t.Helper()
	r, err := kl.KroxyliciousV1alpha1().KafkaRoutes(ns).Get(context.Background(), route, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Status.Parents {
		for _, c := range p.Conditions {
			if _, grant, ok := strings.Cut(c.Message, "create this ReferenceGrant:\n"); ok && c.Reason == "RefNotPermitted" {
				return grant
			}
		}
	}
	t.Fatalf("route %s/%s proposes no ReferenceGrant: %+v", ns, route, r.Status.Parents)
	return ""
}

// setPoolNodeIDs writes a node pool's status.nodeIds, as Strimzi does.
func setPoolNodeIDs(t *testing.T, ns, name string, ids ...int64) {
	t.Helper()
	poll(t, "node pool status", func() (bool, error) {
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
