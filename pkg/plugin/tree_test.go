package plugin

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	kafkav1beta2 "github.com/kafkalink/kafkalink/apis/kafka/v1beta2"
	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current code")

func cond(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message}
}

func strimziObject(kind, ns, name string, ready bool) *unstructured.Unstructured {
	status := "True"
	if !ready {
		status = "False"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"kind": kind, "metadata": map[string]any{"namespace": ns, "name": name},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": status}, "not a condition"}},
	}}
}

func connection(ready bool, reason, message string) *kafkav1beta2.KafkaConnection {
	status := metav1.ConditionTrue
	if !ready {
		status = metav1.ConditionFalse
	}
	c := &kafkav1beta2.KafkaConnection{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "orders"},
		Spec: kafkav1beta2.KafkaConnectionSpec{
			Kafka: kafkav1beta2.KafkaReference{Kind: "Kafka", Name: "my-cluster", Namespace: "kafka"},
			User:  &kafkav1beta2.UserReference{Kind: "KafkaUser", Name: "orders"},
		},
		Status: kafkav1beta2.KafkaConnectionStatus{Conditions: []metav1.Condition{cond("Ready", status, reason, message)}},
	}
	if ready {
		c.Status.Binding = &kafkav1beta2.BindingReference{Name: "orders"}
		c.Status.Listener, c.Status.BootstrapServers = "scram", "my-cluster-kafka-bootstrap.kafka.svc:9094"
		c.Status.Targets = []kafkav1beta2.TargetStatus{
			{Name: "member-a", Namespace: "team-a", Reachable: true, Synced: true},
			{Name: "member-b", Namespace: "team-a", Message: "dial tcp 10.0.0.9:6443: connection refused"},
		}
	}
	return c
}

func route(parents ...kroxyliciousv1alpha1.RouteParentStatus) *kroxyliciousv1alpha1.KafkaRoute {
	listener := kroxyliciousv1alpha1.SectionName("tls")
	return &kroxyliciousv1alpha1.KafkaRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "orders"},
		Spec: kroxyliciousv1alpha1.KafkaRouteSpec{ParentRefs: []kroxyliciousv1alpha1.KafkaRouteParentReference{{
			Name: "proxy", SectionName: &listener, Hostnames: []kroxyliciousv1alpha1.PercentHostname{"orders-%.kafka.example.com"},
			Rules: []kroxyliciousv1alpha1.KafkaRouteRule{{Name: "all", BackendRefs: []kroxyliciousv1alpha1.BackendReference{{Name: "nowhere", Port: 9092}}}},
		}}},
		Status: kroxyliciousv1alpha1.RouteStatus{Parents: parents},
	}
}

func gatewayWorld() GatewayWorld {
	listener := kroxyliciousv1alpha1.SectionName("tls")
	g := &kroxyliciousv1alpha1.KafkaGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "proxy"},
		Spec: kroxyliciousv1alpha1.KafkaGatewaySpec{Listeners: []kroxyliciousv1alpha1.Listener{
			{Name: "tls", Port: 9092, Protocol: "kroxylicious.io/kafka-tls"},
		}},
		Status: kroxyliciousv1alpha1.KafkaGatewayStatus{
			Conditions: []metav1.Condition{cond("Accepted", "True", "Accepted", ""), cond("Programmed", "True", "Programmed", "")},
			Listeners: []kroxyliciousv1alpha1.ListenerStatus{{Name: "tls", Conditions: []metav1.Condition{
				cond("Accepted", "True", "Accepted", ""), cond("Programmed", "True", "Programmed", ""), cond("Conflicted", "False", "NoConflicts", ""),
			}}},
			Members: []kroxyliciousv1alpha1.GatewayMemberStatus{{Name: "member-a", Reachable: true, Programmed: true}},
		},
	}
	r := route(kroxyliciousv1alpha1.RouteParentStatus{
		ParentRef: kroxyliciousv1alpha1.ParentReference{Name: "proxy", SectionName: &listener},
		Conditions: []metav1.Condition{
			cond("Accepted", "True", "Accepted", ""),
			cond("ResolvedRefs", "False", "BackendNotFound", "Service team-a/nowhere does not exist"),
		},
	})
	svc := func(name, routeName string) corev1.Service {
		return corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, Labels: map[string]string{wellknown.LabelGateway: "proxy", wellknown.LabelRoute: routeName}},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Port: 9092}}},
		}
	}
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "proxy-7d4b9-x2x8k"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	return GatewayWorld{Gateway: g, Routes: []*kroxyliciousv1alpha1.KafkaRoute{r}, Services: []corev1.Service{svc("proxy", ""), svc("orders-bootstrap", "orders")}, Pods: []corev1.Pod{pod}}
}

// TestGoldenTrees pins the status tree and the why text of each world in testdata/<name>.golden.
func TestGoldenTrees(t *testing.T) {
	worlds := map[string]*Node{
		"connection-ready": ConnectionTree(ConnectionWorld{
			Connection: connection(true, "Bound", "the binding Secret holds the current binding"),
			Kafka:      strimziObject("Kafka", "kafka", "my-cluster", true), User: strimziObject("KafkaUser", "team-a", "orders", true),
			Secret: &corev1.Secret{Type: "servicebinding.io/kafka", Data: map[string][]byte{"a": nil, "b": nil}},
		}),
		"connection-user-missing": ConnectionTree(ConnectionWorld{
			Connection: connection(false, "UserNotFound", "KafkaUser team-a/orders does not exist"),
			Kafka:      strimziObject("Kafka", "kafka", "my-cluster", true),
		}),
		"connection-strimzi-missing": ConnectionTree(ConnectionWorld{
			Connection: connection(false, "StrimziNotInstalled", "the cluster serves no Kafka"),
			Unreadable: map[string]string{"Kafka": "Strimzi is not installed", "KafkaUser": "Strimzi is not installed"},
		}),
		"gateway-backend-missing": GatewayTree(gatewayWorld()),
		"route-unprocessed":       RouteTree(route()),
		// Both of a route parent's failing conditions are explained, not only the line's key one.
		"route-two-failing": RouteTree(route(kroxyliciousv1alpha1.RouteParentStatus{
			ParentRef: kroxyliciousv1alpha1.ParentReference{Name: "proxy", SectionName: ptr.To(kroxyliciousv1alpha1.SectionName("tls"))},
			Conditions: []metav1.Condition{
				cond("Accepted", "True", "Accepted", ""),
				cond("ResolvedRefs", "True", "ResolvedRefs", ""),
				cond("BrokerIDsMatch", "False", "BrokerIDsMismatch", "advertised ids with no broker: [3]"),
				cond("BackendTLS", "False", "BackendTLSPolicyMissing", "port 9093 looks like TLS"),
			},
		})),
	}
	for name, tree := range worlds {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := Render(&out, []*Node{tree}, false); err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join("testdata", name+".golden"), out.String()+"---- why\n"+Why(tree))
		})
	}
}

func TestColourOnlyWhenAsked(t *testing.T) {
	tree := GatewayTree(gatewayWorld())
	var plain, coloured bytes.Buffer
	if err := Render(&plain, []*Node{tree}, false); err != nil {
		t.Fatal(err)
	}
	if err := Render(&coloured, []*Node{tree}, true); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") {
		t.Fatalf("plain output holds escape codes:\n%q", plain.String())
	}
	for _, want := range []string{colourGreen + "Programmed=True Programmed" + colourReset, colourRed + "ResolvedRefs=False BackendNotFound"} {
		if !strings.Contains(coloured.String(), want) {
			t.Errorf("coloured output lacks %q:\n%q", want, coloured.String())
		}
	}
}

func TestParseRef(t *testing.T) {
	tests := map[string]struct{ in, kind, name, err string }{
		"a plural kind":          {in: "kafkaconnections/orders", kind: KindConnection, name: "orders"},
		"a short name":           {in: "kgw/proxy", kind: KindGateway, name: "proxy"},
		"a kind with its group":  {in: "KafkaRoute.kroxylicious.io/orders", kind: KindRoute, name: "orders"},
		"no name":                {in: "kafkaroute/", err: "is not KIND/NAME"},
		"no kind":                {in: "orders", err: "is not KIND/NAME"},
		"a kind kafkalink lacks": {in: "kafka/my-cluster", err: `unknown kind "kafka"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			kind, n, err := ParseRef(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || kind != tt.kind || n != tt.name {
				t.Fatalf("got %s %s %v, want %s %s", kind, n, err, tt.kind, tt.name)
			}
		})
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestDocsShowTheRealOutput: the samples of docs/kubectl-plugin.md are test/plugin's golden
// files, which the plugin produced against a real control plane; regenerate the page's samples
// when those change.
func TestDocsShowTheRealOutput(t *testing.T) {
	doc, err := os.ReadFile("../../docs/kubectl-plugin.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"connection-ready-status", "connection-user-missing-status", "gateway-backend-missing-status",
		"connection-user-missing-why", "route-backend-missing-why", "connection-ready-why", "connection-ready-config-kcat",
	} {
		sample, err := os.ReadFile(filepath.Join("../../test/plugin/testdata", name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), string(sample)) {
			t.Errorf("docs/kubectl-plugin.md does not show test/plugin/testdata/%s.golden as it is", name)
		}
	}
}
