package apis_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/kafkalink/kafkalink/pkg/gatewaycompat"
)

// TestScenarioGatewaysAreValidGateways converts every seed scenario's KafkaGateway to a Gateway
// and creates it against Gateway API v1.6.3's own CRDs.
func TestScenarioGatewaysAreValidGateways(t *testing.T) {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	gateways := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	files, _ := filepath.Glob(seedFile(t, "scenario-*.yaml"))
	if len(files) != 5 {
		t.Fatalf("expected five scenario files, found %d", len(files))
	}
	for i, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ns := "gateway-compat-" + string(rune('a'+i))
			ensureNamespaces(t, ns)
			var converted int
			for _, obj := range readObjects(t, file) {
				if obj.GetKind() != "KafkaGateway" {
					continue
				}
				gw, err := gatewaycompat.ToGateway(obj, "kafkalink")
				if err != nil {
					t.Fatal(err)
				}
				gw.SetNamespace(ns)
				if _, err := dyn.Resource(gateways).Namespace(ns).Create(context.Background(), gw, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
					t.Fatalf("Gateway API refused the converted %s: %v", obj.GetName(), err)
				}
				converted++
			}
			if converted != 1 {
				t.Fatalf("converted %d KafkaGateways, want 1", converted)
			}
		})
	}
}

// TestGatewayConversionCoversEveryDeviation converts a gateway that uses backendTLS,
// frontendValidation and TLS options, and has Gateway API accept it.
func TestGatewayConversionCoversEveryDeviation(t *testing.T) {
	ensureNamespaces(t, "gateway-compat-full")
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	obj := readObjects(t, seedFile(t, "kafkagateway-field-template.yaml"))[0]
	// Fill the template's empty names and drop its empty namespaces, which Gateway refuses too.
	tmpl := obj.Object["spec"].(map[string]any)
	listener := tmpl["listeners"].([]any)[0].(map[string]any)
	tls := listener["tls"].(map[string]any)
	tls["certificateRefs"] = []any{map[string]any{"group": "", "kind": "Secret", "name": "server-cert"}}
	fv := tls["frontendValidation"].(map[string]any)
	fv["caCertificateRefs"] = []any{map[string]any{"group": "", "kind": "Secret", "name": "client-ca"}}
	tmpl["backendTLS"] = map[string]any{"clientCertificateRef": map[string]any{"group": "", "kind": "Secret", "name": "client-cert"}}
	delete(tmpl, "infrastructure") // parametersRef kinds differ by design: Gateway points at its own kinds
	gw, err := gatewaycompat.ToGateway(obj, "kafkalink")
	if err != nil {
		t.Fatal(err)
	}
	gw.SetNamespace("gateway-compat-full")
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}).
		Namespace("gateway-compat-full").Create(context.Background(), gw, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatalf("Gateway API refused the converted gateway: %v", err)
	}
}

func readObjects(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatal(err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
