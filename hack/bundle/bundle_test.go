package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// root is the kafkalink checkout, from this module's folder.
const root = "../.."

// generate writes a bundle of version 1.2.3 to a temporary folder and loads it with
// operator-framework's own loader.
func generate(t *testing.T) (string, *manifests.Bundle) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bundle")
	if err := Generate(Options{Root: root, Out: out, Version: "1.2.3", Registry: "registry.example.com/kafkalink"}); err != nil {
		t.Fatal(err)
	}
	b, err := manifests.GetBundleFromDir(out)
	if err != nil {
		t.Fatalf("operator-framework cannot load the bundle: %v", err)
	}
	return out, b
}

// acceptedWarnings are validator warnings the bundle keeps: a part of the warning, and why.
// (MultipleArchitecturesValidator is not run: it pulls the images with a Docker daemon; the CSV
// carries the operatorframework.io/arch labels of the images hack/image builds.)
var acceptedWarnings = map[string]string{
	// RBAC rules name no API version: the rule for policy/v1 PodDisruptionBudgets (the proxy's,
	// pkg/gateway/pods.go) matches the check for the removed policy/v1beta1.
	"Migrate the API(s) for poddisruptionbudgets": "RBAC rules are version-less; kafkalink writes policy/v1",
}

// accepted is whether a warning is one acceptedWarnings explains.
func accepted(warning string) bool {
	for part := range acceptedWarnings {
		if strings.Contains(warning, part) {
			return true
		}
	}
	return false
}

// TestBundleValidates runs every validator of operator-framework/api that applies to a bundle
// (CSV, CRDs, bundle, OperatorHub, categories and capabilities, objects, deprecated APIs, good
// practices) with Kubernetes 1.36 and needs no error and no warning
// but those acceptedWarnings explains.
func TestBundleValidates(t *testing.T) {
	_, b := generate(t)
	objs := append(b.ObjectsToValidate(), map[string]string{"k8s-version": minKubeVersion})
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.OperatorHubV2Validator,
		validation.StandardCategoriesValidator,
		validation.StandardCapabilitiesValidator,
		validation.ObjectValidator,
		validation.AlphaDeprecatedAPIsValidator,
		validation.GoodPracticesValidator,
	)
	results := validators.Validate(objs...)
	if len(results) == 0 {
		t.Fatal("the validators returned no results: they did not run")
	}
	for _, r := range results {
		for _, e := range r.Errors {
			t.Errorf("%s: error: %v", r.Name, e)
		}
		for _, w := range r.Warnings {
			if !accepted(w.Error()) {
				t.Errorf("%s: warning: %v", r.Name, w)
			}
		}
	}
}

// TestBundleContents checks what the validators do not know about kafkalink: every served
// version of every CRD of manifests/crds is owned and shipped byte for byte, the permissions are
// exactly the rules of the operator's roles in manifests/rbac, every install mode is supported,
// the images are at the version, the Deployment watches the OperatorGroup's namespaces, and
// alm-examples has an example of every kind.
func TestBundleContents(t *testing.T) {
	out, b := generate(t)
	csv := b.CSV

	crdFiles, _ := filepath.Glob(filepath.Join(root, "manifests/crds/*.yaml"))
	if len(b.V1CRDs) != len(crdFiles) {
		t.Errorf("bundle has %d CRDs, manifests/crds %d", len(b.V1CRDs), len(crdFiles))
	}
	for _, f := range crdFiles {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join(out, "manifests", filepath.Base(f)))
		if err != nil || !bytes.Equal(want, got) {
			t.Errorf("%s is not shipped as it is (%v)", f, err)
		}
	}
	owned := map[string]bool{}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		owned[d.Name+"/"+d.Version] = true
		if len(d.SpecDescriptors) == 0 || d.Description == "" {
			t.Errorf("owned %s %s has no description or spec descriptors", d.Kind, d.Version)
		}
	}
	var kinds []string
	for _, crd := range b.V1CRDs {
		kinds = append(kinds, crd.Spec.Names.Kind)
		for _, v := range crd.Spec.Versions {
			if v.Served && !owned[crd.Name+"/"+v.Name] {
				t.Errorf("%s %s is served but not owned by the CSV", crd.Name, v.Name)
			}
		}
	}

	if got, want := rulesOfOperatorRoles(t), csv.Spec.InstallStrategy.StrategySpec.Permissions; len(want) != 1 || !reflect.DeepEqual(got, want[0].Rules) || want[0].ServiceAccountName != serviceAccount {
		t.Errorf("permissions are not the operator's rules of manifests/rbac:\n got %+v\nwant %+v", want, got)
	}
	if n := len(csv.Spec.InstallStrategy.StrategySpec.ClusterPermissions); n != 0 {
		t.Errorf("%d clusterPermissions: the operator needs none beyond its permissions", n)
	}

	supported := map[operatorsv1alpha1.InstallModeType]bool{}
	for _, m := range csv.Spec.InstallModes {
		supported[m.Type] = m.Supported
	}
	for _, m := range []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorsv1alpha1.InstallModeTypeSingleNamespace, operatorsv1alpha1.InstallModeTypeMultiNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces} {
		if !supported[m] {
			t.Errorf("install mode %s is not supported", m)
		}
	}

	deploys := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deploys) != 1 {
		t.Fatalf("%d deployments, want the operator's", len(deploys))
	}
	c := deploys[0].Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	if c.Image != "registry.example.com/kafkalink/kafkalink-operator:1.2.3" || !strings.Contains(args, "--proxy-image=registry.example.com/kafkalink/kafkalink-proxy:1.2.3") {
		t.Errorf("images are not at the version: %s, %s", c.Image, args)
	}
	if !strings.Contains(args, "--watch-namespaces=$(OLM_TARGET_NAMESPACES)") || !strings.Contains(envString(c.Env), "metadata.annotations['olm.targetNamespaces']") {
		t.Errorf("the operator does not watch the OperatorGroup's namespaces: %s %s", args, envString(c.Env))
	}

	var examples []struct{ Kind string }
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatal(err)
	}
	var exampleKinds []string
	for _, e := range examples {
		exampleKinds = append(exampleKinds, e.Kind)
	}
	sort.Strings(kinds)
	sort.Strings(exampleKinds)
	if !reflect.DeepEqual(kinds, exampleKinds) {
		t.Errorf("alm-examples has kinds %v, want one of each of %v", exampleKinds, kinds)
	}
	if csv.Annotations["olm.skipRange"] != "<1.2.3" {
		t.Errorf("olm.skipRange %q, want <1.2.3: older releases upgrade to this one", csv.Annotations["olm.skipRange"])
	}
	if csv.Spec.MinKubeVersion == "" || csv.Spec.Version.String() != "1.2.3" || csv.Name != "kafkalink.v1.2.3" {
		t.Errorf("CSV %s version %s minKubeVersion %q", csv.Name, csv.Spec.Version, csv.Spec.MinKubeVersion)
	}
}

// rulesOfOperatorRoles are the rules of the roles rbacFiles marks as the operator's, read here
// independently of Generate's reader.
func rulesOfOperatorRoles(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	var names []string
	for name, use := range rbacFiles {
		if use == operatorRules {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var rules []rbacv1.PolicyRule
	for _, name := range names {
		docs, err := documents(filepath.Join(root, "manifests/rbac", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range docs {
			var role rbacv1.ClusterRole
			if err := yaml.Unmarshal(doc, &role); err != nil {
				t.Fatal(err)
			}
			if role.Kind == "ClusterRole" || role.Kind == "Role" {
				rules = append(rules, role.Rules...)
			}
		}
	}
	return rules
}

// envString shows a container's environment for messages.
func envString(env any) string {
	b, _ := json.Marshal(env)
	return string(b)
}

// TestUnknownRBACFileRefused: a file in manifests/rbac the generator does not know stops it,
// so a new role is never left out of (or let into) the bundle unnoticed.
func TestUnknownRBACFileRefused(t *testing.T) {
	fake := t.TempDir()
	for _, dir := range []string{"manifests/crds", "manifests/rbac", "manifests/operator", "manifests/examples"} {
		if err := os.CopyFS(filepath.Join(fake, dir), os.DirFS(filepath.Join(root, dir))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(fake, "manifests/rbac/new.yaml"), []byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Generate(Options{Root: fake, Out: filepath.Join(fake, "out"), Version: "1.2.3", Registry: "r"})
	if err == nil || !strings.Contains(err.Error(), "new.yaml") {
		t.Fatalf("Generate = %v, want a refusal naming new.yaml", err)
	}
}
