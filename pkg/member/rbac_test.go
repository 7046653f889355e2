package member

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// decodeManifest splits a multi-document YAML stream into objects.
func decodeManifest(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var o unstructured.Unstructured
		err := d.Decode(&o.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("decoding: %v", err)
		}
		if len(o.Object) > 0 {
			objs = append(objs, &o)
		}
	}
}

// hack/member-rbac.sh gives a tenant its own ServiceAccount, bound in the tenant's namespaces
// only, with the ClusterRoles of manifests/member/rbac.yaml: no ClusterRoleBinding, no token
// Secret, and no binding in another namespace.
func TestMemberRBACScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	run := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command("bash", append([]string{"../../hack/member-rbac.sh"}, args...)...).Output()
		if err != nil {
			t.Fatalf("member-rbac.sh %v: %v", args, err)
		}
		return out
	}
	single, err := os.ReadFile("../../manifests/member/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clusterRoles := map[string]*unstructured.Unstructured{}
	for _, o := range decodeManifest(t, single) {
		if o.GetKind() == "ClusterRole" {
			clusterRoles[o.GetName()] = o
		}
	}
	for _, tc := range []struct {
		args  []string
		roles []string
	}{
		{[]string{"team-a", "apps", "orders"}, []string{"kafkalink-member", "kafkalink-member-proxy"}},
		{[]string{"--copies-only", "team-a", "apps", "orders"}, []string{"kafkalink-member"}},
	} {
		var bound []string
		var sa int
		for _, o := range decodeManifest(t, run(tc.args...)) {
			switch o.GetKind() {
			case "Namespace":
				if o.GetName() != "kafkalink-member" {
					t.Errorf("%v: Namespace %s", tc.args, o.GetName())
				}
			case "ClusterRole":
				want := clusterRoles[o.GetName()]
				if want == nil || !equalRules(t, o, want) {
					t.Errorf("%v: ClusterRole %s differs from manifests/member/rbac.yaml's", tc.args, o.GetName())
				}
			case "ServiceAccount":
				sa++
				if o.GetName() != "kafkalink-member-team-a" || o.GetNamespace() != "kafkalink-member" {
					t.Errorf("%v: ServiceAccount %s/%s", tc.args, o.GetNamespace(), o.GetName())
				}
			case "RoleBinding":
				var rb rbacv1.RoleBinding
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &rb); err != nil {
					t.Fatal(err)
				}
				if rb.RoleRef.Kind != "ClusterRole" || clusterRoles[rb.RoleRef.Name] == nil ||
					len(rb.Subjects) != 1 || rb.Subjects[0].Kind != "ServiceAccount" ||
					rb.Subjects[0].Name != "kafkalink-member-team-a" || rb.Subjects[0].Namespace != "kafkalink-member" {
					t.Errorf("%v: RoleBinding %s/%s: %+v %+v", tc.args, rb.Namespace, rb.Name, rb.RoleRef, rb.Subjects)
				}
				bound = append(bound, rb.Namespace+"/"+rb.RoleRef.Name)
			default:
				t.Errorf("%v: a %s %s: the script prints no other kind", tc.args, o.GetKind(), o.GetName())
			}
		}
		var want []string
		for _, ns := range []string{"apps", "orders"} {
			for _, role := range tc.roles {
				want = append(want, ns+"/"+role)
			}
		}
		slices.Sort(bound)
		if sa != 1 || !slices.Equal(bound, want) {
			t.Errorf("%v: %d ServiceAccounts, bindings %v, want 1 and %v", tc.args, sa, bound, want)
		}
	}
	for _, args := range [][]string{{"team-a"}, {"Team-A", "apps"}, {"team-a", "apps", "apps"}, {"team-a", "no_such"}} {
		if err := exec.Command("bash", append([]string{"../../hack/member-rbac.sh"}, args...)...).Run(); err == nil {
			t.Errorf("member-rbac.sh %v succeeded", args)
		}
	}
}

func equalRules(t *testing.T, a, b *unstructured.Unstructured) bool {
	t.Helper()
	ra, _, _ := unstructured.NestedSlice(a.Object, "rules")
	rb, _, _ := unstructured.NestedSlice(b.Object, "rules")
	return len(ra) > 0 && equality.Semantic.DeepEqual(ra, rb)
}
