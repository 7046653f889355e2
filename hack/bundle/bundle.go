// Command bundle writes kafkalink's OLM bundle (registry+v1) from the manifests the other
// installs are built from: manifests/crds, manifests/rbac, manifests/operator and
// manifests/examples. Nothing of the RBAC or the Deployment is kept by hand here.
//
//	go run . -root ../.. -out ../../_output/bundle -version 1.2.3 -registry ghcr.io/kafkalink
//
// It lives in its own module, as hack/image does, so operator-framework's API and validation
// library (and its dependencies) stay out of kafkalink's go.mod.
package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Package facts of the bundle.
const (
	packageName = "kafkalink"
	// channel follows OLM's channel naming (candidate, fast, stable): kafkalink is pre-1.0.
	channel = "candidate"
	// minKubeVersion is the oldest Kubernetes docs/install.md ("Before you start") supports;
	// the control-plane tests run 1.36.
	minKubeVersion = "1.30.0"
	// serviceAccount is the operator's ServiceAccount in manifests/rbac and the Deployment.
	serviceAccount = "kafkalink-operator"
	// targetNamespacesEnv carries OLM's olm.targetNamespaces annotation (the OperatorGroup's
	// namespaces, comma-separated; empty for all) into --watch-namespaces.
	targetNamespacesEnv = "OLM_TARGET_NAMESPACES"
)

// rbacFiles says what becomes of each file of manifests/rbac. A new file must be added here:
// Generate refuses one it does not know, as hack/render-namespaced.sh does.
var rbacFiles = map[string]rbacUse{
	// The operator's own rules: the CSV's permissions, which OLM grants in each target namespace
	// (Roles) or cluster-wide (ClusterRoles) in AllNamespaces mode, as install-namespaced.yaml
	// and install.yaml do. The leader election Lease rules come along: OLM creates them in the
	// operator's namespace too.
	"binding.yaml":         operatorRules,
	"gateway.yaml":         operatorRules,
	"operator.yaml":        operatorRules,
	"leader-election.yaml": operatorRules,
	// Roles for others (Service Binding implementations, the aggregated edit and view roles):
	// bundle manifests as they are.
	"servicebinding.yaml": asManifest,
	"user-roles.yaml":     asManifest,
	// OLM creates the namespace (the OperatorGroup's) and the ServiceAccount of the CSV; it does
	// not install FlowSchemas (docs/install.md says how to apply flowcontrol.yaml).
	"00-namespace.yaml": dropped,
	"flowcontrol.yaml":  dropped,
}

type rbacUse int

const (
	dropped rbacUse = iota
	operatorRules
	asManifest
)

// icon is the CSV's icon, shown by OperatorHub.
//
//go:embed icon.svg
var icon []byte

// Options say where the manifests are and what to stamp.
type Options struct {
	Root, Out, Version, Registry string
}

// Generate writes the bundle to o.Out: manifests/ (the CSV, the CRDs, the ClusterRoles for
// others), metadata/annotations.yaml and bundle.Dockerfile.
func Generate(o Options) error {
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`).MatchString(o.Version) {
		return fmt.Errorf("version %q is not a semantic version such as 1.2.3", o.Version)
	}
	files := map[string][]byte{}
	crds, err := readCRDs(o.Root, files)
	if err != nil {
		return err
	}
	rules, err := readRBAC(o.Root, files)
	if err != nil {
		return err
	}
	deploy, err := readDeployment(o.Root, o.Registry, o.Version)
	if err != nil {
		return err
	}
	examples, err := readExamples(o.Root, crds)
	if err != nil {
		return err
	}
	csv := clusterServiceVersion(o, crds, rules, deploy, examples)
	data, err := yaml.Marshal(csv)
	if err != nil {
		return err
	}
	files["manifests/"+packageName+".clusterserviceversion.yaml"] = data
	files["metadata/annotations.yaml"] = annotationsFile()
	files["bundle.Dockerfile"] = dockerfile()
	if err := os.RemoveAll(o.Out); err != nil {
		return err
	}
	for name, data := range files {
		p := filepath.Join(o.Out, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// documents splits a YAML file into its non-empty documents.
func documents(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var probe map[string]any
		if err := yaml.Unmarshal(doc, &probe); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(probe) > 0 {
			docs = append(docs, doc)
		}
	}
}

// readCRDs copies manifests/crds into the bundle as they are and returns them parsed.
func readCRDs(root string, files map[string][]byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	paths, err := filepath.Glob(filepath.Join(root, "manifests/crds/*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no CRDs under %s/manifests/crds", root)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		docs, err := documents(p)
		if err != nil {
			return nil, err
		}
		if len(docs) != 1 {
			return nil, fmt.Errorf("%s: %d documents, want one CRD", p, len(docs))
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(docs[0], &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		crds = append(crds, &crd)
		if files["manifests/"+filepath.Base(p)], err = os.ReadFile(p); err != nil {
			return nil, err
		}
	}
	return crds, nil
}

// readRBAC gathers the operator's rules from manifests/rbac (the ClusterRoles and Roles bound
// to its ServiceAccount) and copies the roles for others into the bundle.
func readRBAC(root string, files map[string][]byte) ([]rbacv1.PolicyRule, error) {
	paths, err := filepath.Glob(filepath.Join(root, "manifests/rbac/*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no RBAC under %s/manifests/rbac", root)
	}
	var rules []rbacv1.PolicyRule
	for _, p := range paths {
		use, ok := rbacFiles[filepath.Base(p)]
		if !ok {
			return nil, fmt.Errorf("manifests/rbac/%s is not in hack/bundle's rbacFiles: say what the bundle does with it", filepath.Base(p))
		}
		docs, err := documents(p)
		if err != nil {
			return nil, err
		}
		for _, doc := range docs {
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				return nil, err
			}
			switch {
			case use == dropped:
			case use == asManifest && meta.Kind == "ClusterRole":
				var role rbacv1.ClusterRole
				if err := yaml.UnmarshalStrict(doc, &role); err != nil {
					return nil, fmt.Errorf("%s: %w", p, err)
				}
				files["manifests/"+role.Name+"_rbac.authorization.k8s.io_v1_clusterrole.yaml"] = doc
			case use == operatorRules && (meta.Kind == "ClusterRole" || meta.Kind == "Role"):
				var role rbacv1.ClusterRole
				if err := yaml.Unmarshal(doc, &role); err != nil {
					return nil, fmt.Errorf("%s: %w", p, err)
				}
				rules = append(rules, role.Rules...)
			case use == operatorRules && (meta.Kind == "ClusterRoleBinding" || meta.Kind == "RoleBinding"):
				if err := checkBinding(doc); err != nil {
					return nil, fmt.Errorf("%s: %w", p, err)
				}
			default:
				return nil, fmt.Errorf("%s: a %s, which hack/bundle does not expect in this file", p, meta.Kind)
			}
		}
	}
	return rules, nil
}

// checkBinding makes sure a binding the bundle leaves to OLM binds the operator's ServiceAccount
// and nothing else: OLM binds the CSV's permissions to that account only.
func checkBinding(doc []byte) error {
	var b rbacv1.RoleBinding
	if err := yaml.Unmarshal(doc, &b); err != nil {
		return err
	}
	if len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != serviceAccount {
		return fmt.Errorf("binding %s has subjects %v; the bundle grants its rules to ServiceAccount %s only", b.Name, b.Subjects, serviceAccount)
	}
	return nil
}

// readDeployment is manifests/operator's Deployment with images at version, watching the
// OperatorGroup's target namespaces.
func readDeployment(root, registry, version string) (*appsv1.Deployment, error) {
	p := filepath.Join(root, "manifests/operator/deployment.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	// As hack/update-manifests.sh stamps install.yaml.
	data = regexp.MustCompile(`ghcr\.io/kafkalink/(kafkalink-[a-z]*):@VERSION@`).ReplaceAll(data, []byte(registry+"/${1}:"+version))
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if d.Spec.Template.Spec.ServiceAccountName != serviceAccount || len(d.Spec.Template.Spec.Containers) != 1 {
		return nil, fmt.Errorf("%s: want one container run as ServiceAccount %s", p, serviceAccount)
	}
	c := &d.Spec.Template.Spec.Containers[0]
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--watch-namespaces") {
			return nil, fmt.Errorf("%s: sets %s, which the bundle sets from the OperatorGroup", p, a)
		}
	}
	// OpenShift's restricted SCC gives each namespace its own uid range and refuses a fixed one;
	// the images run as 65532 by themselves (hack/image), which plain Kubernetes keeps.
	if sc := d.Spec.Template.Spec.SecurityContext; sc != nil {
		sc.RunAsUser, sc.RunAsGroup = nil, nil
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: targetNamespacesEnv, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['olm.targetNamespaces']"},
	}})
	c.Args = append(c.Args, "--watch-namespaces=$("+targetNamespacesEnv+")")
	return &d, nil
}

// readExamples are alm-examples: the first object of each owned kind in manifests/examples,
// the Strimzi walk-through first (a set that works together), then the seed's scenarios, then
// the seed's other examples; without namespace, as OLM's console creates them in the one the
// user is in.
func readExamples(root string, crds []*apiextensionsv1.CustomResourceDefinition) ([]map[string]any, error) {
	var paths []string
	for _, pattern := range []string{"strimzi/*.yaml", "seeds/scenario-*.yaml", "seeds/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, "manifests/examples", pattern))
		if err != nil {
			return nil, err
		}
		paths = append(paths, m...)
	}
	byKind := map[string]map[string]any{}
	for _, p := range paths {
		docs, err := documents(p)
		if err != nil {
			return nil, err
		}
		for _, doc := range docs {
			var obj map[string]any
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			kind, _ := obj["kind"].(string)
			if _, seen := byKind[kind]; seen || !owns(crds, obj) {
				continue
			}
			if meta, ok := obj["metadata"].(map[string]any); ok {
				delete(meta, "namespace")
			}
			byKind[kind] = obj
		}
	}
	var out []map[string]any
	for _, crd := range crds {
		if ex, ok := byKind[crd.Spec.Names.Kind]; ok {
			out = append(out, ex)
		}
	}
	return out, nil
}

// owns is whether an object is of a kind and version one of the CRDs serves.
func owns(crds []*apiextensionsv1.CustomResourceDefinition, obj map[string]any) bool {
	apiVersion, _ := obj["apiVersion"].(string)
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if v.Served && apiVersion == crd.Spec.Group+"/"+v.Name && obj["kind"] == crd.Spec.Names.Kind {
				return true
			}
		}
	}
	return false
}

// clusterServiceVersion is the CSV.
func clusterServiceVersion(o Options, crds []*apiextensionsv1.CustomResourceDefinition, rules []rbacv1.PolicyRule, d *appsv1.Deployment, examples []map[string]any) *operatorsv1alpha1.ClusterServiceVersion {
	almExamples, _ := json.MarshalIndent(examples, "", "  ")
	image := d.Spec.Template.Spec.Containers[0].Image
	csv := &operatorsv1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: operatorsv1alpha1.SchemeGroupVersion.String(), Kind: operatorsv1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: packageName + ".v" + o.Version,
			Annotations: map[string]string{
				"alm-examples":   string(almExamples),
				"capabilities":   "Basic Install",
				"categories":     "Streaming & Messaging,Networking",
				"containerImage": image,
				"description":    "Service Binding Secrets for Strimzi Kafka clusters, and a Gateway-API-shaped Kafka SNI proxy.",
				"repository":     "https://github.com/kafkalink/kafkalink",
				"support":        "kafkalink",
				"operatorframework.io/suggested-namespace": "kafkalink-system",
				// Any older kafkalink upgrades to this one directly, so a catalog needs no
				// replaces chain.
				"olm.skipRange":                          "<" + o.Version,
				"operators.operatorframework.io/builder": "kafkalink-hack-bundle",
			},
			Labels: map[string]string{
				"operatorframework.io/arch.amd64": "supported",
				"operatorframework.io/arch.arm64": "supported",
				"operatorframework.io/os.linux":   "supported",
			},
		},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{
			DisplayName:    "kafkalink",
			Description:    description,
			Version:        version.OperatorVersion{Version: semver.MustParse(o.Version)},
			MinKubeVersion: minKubeVersion,
			Maturity:       "alpha",
			Provider:       operatorsv1alpha1.AppLink{Name: "kafkalink", URL: "https://github.com/kafkalink/kafkalink"},
			Maintainers:    []operatorsv1alpha1.Maintainer{{Name: "kafkalink", Email: "kafkalink@users.noreply.github.com"}},
			Links:          []operatorsv1alpha1.AppLink{{Name: "Documentation", URL: "https://github.com/kafkalink/kafkalink/tree/main/docs"}},
			Icon:           []operatorsv1alpha1.Icon{{Data: base64.StdEncoding.EncodeToString(icon), MediaType: "image/svg+xml"}},
			Keywords:       []string{"kafka", "strimzi", "service-binding", "gateway-api", "proxy"},
			InstallModes: []operatorsv1alpha1.InstallMode{
				{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: true},
				{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Supported: true},
				{Type: operatorsv1alpha1.InstallModeTypeMultiNamespace, Supported: true},
				{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true},
			},
			InstallStrategy: operatorsv1alpha1.NamedInstallStrategy{
				StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment,
				StrategySpec: operatorsv1alpha1.StrategyDetailsDeployment{
					Permissions: []operatorsv1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: serviceAccount, Rules: rules}},
					DeploymentSpecs: []operatorsv1alpha1.StrategyDeploymentSpec{{
						Name: d.Name, Label: labels.Set(d.Labels), Spec: d.Spec,
					}},
				},
			},
			CustomResourceDefinitions: operatorsv1alpha1.CustomResourceDefinitions{Owned: ownedCRDs(crds)},
			RelatedImages:             relatedImages(d),
		},
	}
	return csv
}

// relatedImages are the images the operator runs and deploys (its --proxy-image), so mirrored
// (disconnected) installs copy both.
func relatedImages(d *appsv1.Deployment) []operatorsv1alpha1.RelatedImage {
	c := d.Spec.Template.Spec.Containers[0]
	out := []operatorsv1alpha1.RelatedImage{{Name: "kafkalink-operator", Image: c.Image}}
	for _, a := range c.Args {
		if img, ok := strings.CutPrefix(a, "--proxy-image="); ok {
			out = append(out, operatorsv1alpha1.RelatedImage{Name: "kafkalink-proxy", Image: img})
		}
	}
	return out
}

// ownedResources are the kinds kafkalink creates for an object of each kind, shown by the console.
var ownedResources = map[string][]operatorsv1alpha1.APIResourceReference{
	"KafkaConnection": {{Kind: "Secret", Name: "", Version: "v1"}},
	"KafkaGateway":    {{Kind: "Deployment", Version: "v1"}, {Kind: "ConfigMap", Version: "v1"}, {Kind: "Service", Version: "v1"}},
	"KafkaRoute":      {{Kind: "Service", Version: "v1"}},
}

// extraStatusDescriptors point the console at objects kafkalink writes.
var extraStatusDescriptors = map[string][]operatorsv1alpha1.StatusDescriptor{
	"KafkaConnection": {{Path: "binding.name", DisplayName: "Binding Secret", Description: "The servicebinding.io/kafka Secret kafkalink writes.",
		XDescriptors: []string{"urn:alm:descriptor:io.kubernetes:Secret"}}},
}

// ownedCRDs describes every served version of every CRD, its spec and status fields from the
// CRD's own schema.
func ownedCRDs(crds []*apiextensionsv1.CustomResourceDefinition) []operatorsv1alpha1.CRDDescription {
	var out []operatorsv1alpha1.CRDDescription
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			d := operatorsv1alpha1.CRDDescription{
				Name: crd.Name, Version: v.Name, Kind: crd.Spec.Names.Kind,
				DisplayName: words(crd.Spec.Names.Kind),
				Resources:   ownedResources[crd.Spec.Names.Kind],
			}
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				root := v.Schema.OpenAPIV3Schema
				d.Description = firstSentence(root.Description)
				if spec, ok := root.Properties["spec"]; ok {
					d.SpecDescriptors = specDescriptors(spec)
				}
				if status, ok := root.Properties["status"]; ok {
					d.StatusDescriptors = append(statusDescriptors(status), extraStatusDescriptors[d.Kind]...)
				}
			}
			out = append(out, d)
		}
	}
	return out
}

// specDescriptors describe the top-level spec fields.
func specDescriptors(s apiextensionsv1.JSONSchemaProps) []operatorsv1alpha1.SpecDescriptor {
	var out []operatorsv1alpha1.SpecDescriptor
	for _, name := range sortedProps(s) {
		out = append(out, operatorsv1alpha1.SpecDescriptor{Path: name, DisplayName: words(name), Description: firstSentence(s.Properties[name].Description)})
	}
	return out
}

// statusDescriptors describe the top-level status fields, and the conditions as conditions, at
// the top (KafkaConnection, KafkaGateway) or in each parent or ancestor entry.
func statusDescriptors(s apiextensionsv1.JSONSchemaProps) []operatorsv1alpha1.StatusDescriptor {
	var out []operatorsv1alpha1.StatusDescriptor
	for _, name := range sortedProps(s) {
		d := operatorsv1alpha1.StatusDescriptor{Path: name, DisplayName: words(name), Description: firstSentence(s.Properties[name].Description)}
		if name == "conditions" {
			d.XDescriptors = []string{"urn:alm:descriptor:io.kubernetes.conditions"}
		}
		out = append(out, d)
		if items := s.Properties[name].Items; items != nil && items.Schema != nil {
			if c, ok := items.Schema.Properties["conditions"]; ok {
				out = append(out, operatorsv1alpha1.StatusDescriptor{
					Path: name + "[0].conditions", DisplayName: words(name) + " Conditions",
					Description: firstSentence(c.Description), XDescriptors: []string{"urn:alm:descriptor:io.kubernetes.conditions"},
				})
			}
		}
	}
	return out
}

// sortedProps are a schema's property names in order.
func sortedProps(s apiextensionsv1.JSONSchemaProps) []string {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// words turns a Go or JSON name into display words: KafkaGateway -> Kafka Gateway,
// bootstrapServers -> Bootstrap Servers.
func words(name string) string {
	var b strings.Builder
	runes := []rune(name)
	for i, r := range runes {
		if i == 0 {
			b.WriteRune(unicode.ToUpper(r))
			continue
		}
		if unicode.IsUpper(r) && (unicode.IsLower(runes[i-1]) || (i+1 < len(runes) && unicode.IsLower(runes[i+1]))) {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// firstSentence is a schema description's first sentence, on one line.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// annotationsFile is metadata/annotations.yaml.
func annotationsFile() []byte {
	var b bytes.Buffer
	b.WriteString("annotations:\n")
	for _, kv := range bundleAnnotations() {
		fmt.Fprintf(&b, "  %s: %s\n", kv[0], kv[1])
	}
	return b.Bytes()
}

// dockerfile is bundle.Dockerfile, built from the bundle's own folder.
func dockerfile() []byte {
	var b bytes.Buffer
	b.WriteString("# kafkalink's OLM bundle image: docker build -f bundle.Dockerfile -t <registry>/kafkalink-bundle:<version> .\nFROM scratch\n")
	for _, kv := range bundleAnnotations() {
		fmt.Fprintf(&b, "LABEL %s=%s\n", kv[0], kv[1])
	}
	b.WriteString("COPY manifests /manifests/\nCOPY metadata /metadata/\n")
	return b.Bytes()
}

// bundleAnnotations are the bundle's annotations and image labels, in order.
func bundleAnnotations() [][2]string {
	return [][2]string{
		{"operators.operatorframework.io.bundle.mediatype.v1", "registry+v1"},
		{"operators.operatorframework.io.bundle.manifests.v1", "manifests/"},
		{"operators.operatorframework.io.bundle.metadata.v1", "metadata/"},
		{"operators.operatorframework.io.bundle.package.v1", packageName},
		{"operators.operatorframework.io.bundle.channels.v1", channel},
		{"operators.operatorframework.io.bundle.channel.default.v1", channel},
	}
}

// description is the CSV's long description (Markdown).
const description = `kafkalink connects applications on Kubernetes to Apache Kafka.

* **Binding.** A KafkaConnection names a Strimzi Kafka, or a KafkaRoute in front of one (and
  optionally a KafkaUser); the operator writes one servicebinding.io/kafka Secret with bootstrap
  servers, security protocol, truststores and credentials.
* **Gateway.** KafkaGateway, KafkaGatewayParameters, KafkaBackendTLSPolicy, KafkaRoute and
  KafkaFilter become a running SNI proxy with per-broker Services, LoadBalancers, OpenShift Routes
  or Gateway API TLSRoutes.

Strimzi's CRDs, Gateway API's ReferenceGrant and TLSRoute, and OpenShift Routes are optional: the
operator picks them up when they are installed, without a restart.

Install modes: AllNamespaces watches every namespace; OwnNamespace, SingleNamespace and
MultiNamespace watch the OperatorGroup's namespaces only (--watch-namespaces), with Roles there and
no cluster-wide access to Secrets.
`
