package gatewaycontroller

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kafkalink/kafkalink/pkg/gateway"
	"github.com/kafkalink/kafkalink/pkg/wellknown"
)

// TestApplyToMemberRecreatesOnlyAClusterIPFormChange: a member's API server refuses a Service
// whose clusterIP form changed; applyToMember deletes and applies it again then, and only then.
func TestApplyToMemberRecreatesOnlyAClusterIPFormChange(t *testing.T) {
	tests := map[string]struct {
		kind, desiredIP, liveIP string
		liveOwner               string // the live object's member label; "uid-1" when empty
		want                    string // the calls made, in order
		wantErr                 bool
	}{
		"a ClusterIP Service that is to become headless is deleted and applied again": {
			kind: gateway.KindService, desiredIP: "None", liveIP: "10.96.0.10", want: "patch get delete patch",
		},
		"a headless Service that is to get an address is deleted and applied again": {
			kind: gateway.KindService, desiredIP: "", liveIP: "None", want: "patch get delete patch",
		},
		"a Service refused for another reason is left alone and the error returned": {
			kind: gateway.KindService, desiredIP: "None", liveIP: "None", want: "patch get", wantErr: true,
		},
		"a Service of the same name that is not this gateway's copy is never deleted": {
			kind: gateway.KindService, desiredIP: "None", liveIP: "10.96.0.10", liveOwner: "someone-else", want: "patch get", wantErr: true,
		},
		"another kind refused is never deleted": {
			kind: gateway.KindConfigMap, want: "patch", wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
			var calls []string
			applies := 0
			dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
				calls = append(calls, a.GetVerb())
				switch a.GetVerb() {
				case "patch":
					if applies++; applies == 1 {
						return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: tc.kind}, "x", field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), tc.desiredIP, "may not change once set")})
					}
					return true, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": tc.kind}}, nil
				case "get":
					live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": tc.kind, "spec": map[string]any{"clusterIP": tc.liveIP}}}
					live.SetName("x")
					live.SetUID("live-uid")
					owner := tc.liveOwner
					if owner == "" {
						owner = "uid-1"
					}
					live.SetLabels(map[string]string{wellknown.LabelMemberOf: owner})
					return true, live, nil
				case "delete":
					return true, nil, nil
				}
				return false, nil, nil
			})
			desired := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": tc.kind}}
			desired.SetName("x")
			desired.SetLabels(map[string]string{wellknown.LabelMemberOf: "uid-1"})
			if tc.desiredIP != "" {
				desired.Object["spec"] = map[string]any{"clusterIP": tc.desiredIP}
			}
			err := applyToMember(context.Background(), dyn, "ns", desired)
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, want an error: %v", err, tc.wantErr)
			}
			if got := strings.Join(calls, " "); got != tc.want {
				t.Errorf("calls %q, want %q", got, tc.want)
			}
		})
	}
}
