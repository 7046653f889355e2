package gatewaycontroller

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kroxyliciousv1alpha1 "github.com/kafkalink/kafkalink/apis/kroxylicious/v1alpha1"
	"github.com/kafkalink/kafkalink/pkg/gateway"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

func object(kind, name string, extra map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"kind": kind}}
	for k, v := range extra {
		u.Object[k] = v
	}
	u.SetName(name)
	return u
}

// A member gets the proxy's own kinds, labelled with the gateway's UID, Secrets before the
// Deployment that mounts them; OpenShift Routes and TLSRoutes stay central; the Secrets the pods
// mount that the gateway did not generate are named for copying.
func TestMemberObjects(t *testing.T) {
	gw := &kroxyliciousv1alpha1.KafkaGateway{}
	gw.UID = "uid-1"
	deployment := object(gateway.KindDeployment, "proxy", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"volumes": []any{
			map[string]any{"name": "cert", "secret": map[string]any{"secretName": "my-gateway-tls"}},
			map[string]any{"name": "ca", "secret": map[string]any{"secretName": "generated-ca"}},
			map[string]any{"name": "config", "configMap": map[string]any{"name": "proxy-config"}},
		}}}}})
	res := &gateway.Result{Objects: []*unstructured.Unstructured{
		deployment, object(gateway.KindRoute, "route", nil), object(gateway.KindConfigMap, "proxy-config", nil),
		object(gateway.KindSecret, "generated-ca", nil), object(gateway.KindService, "svc", nil),
	}}
	objects, mounted := memberObjects(gw, res)
	var kinds []string
	for _, o := range objects {
		kinds = append(kinds, o.GetKind())
		if o.GetLabels()[wellknown.LabelMemberOf] != "uid-1" {
			t.Errorf("%s %s is not labelled with the gateway's UID", o.GetKind(), o.GetName())
		}
	}
	want := []string{gateway.KindSecret, gateway.KindConfigMap, gateway.KindService, gateway.KindDeployment}
	if !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if !slices.Equal(mounted, []string{"my-gateway-tls"}) {
		t.Errorf("mounted %v, want [my-gateway-tls]", mounted)
	}
	if res.Objects[0].GetLabels()[wellknown.LabelMemberOf] != "" {
		t.Error("the central objects were changed")
	}
	v1 := objectsDigest(objects, mounted, func(string) string { return "1" })
	v2 := objectsDigest(objects, mounted, func(string) string { return "2" })
	if v1 == v2 {
		t.Error("a changed mounted Secret does not change the digest")
	}
}
