package monitoringpack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// ksmConfig is the part of kube-state-metrics' custom-resource-state configuration the pack uses.
type ksmConfig struct {
	Kind string `json:"kind"`
	Spec struct {
		Resources []struct {
			GroupVersionKind struct{ Group, Version, Kind string } `json:"groupVersionKind"`
			MetricNamePrefix string                                `json:"metricNamePrefix"`
			LabelsFromPath   map[string][]string                   `json:"labelsFromPath"`
			Metrics          []struct {
				Name string `json:"name"`
				Help string `json:"help"`
				Each struct {
					Type string `json:"type"`
					Info *struct {
						LabelsFromPath map[string][]string `json:"labelsFromPath"`
					} `json:"info"`
					Gauge *struct {
						Path           []string            `json:"path"`
						LabelsFromPath map[string][]string `json:"labelsFromPath"`
						ValueFrom      []string            `json:"valueFrom"`
						NilIsZero      bool                `json:"nilIsZero"`
					} `json:"gauge"`
				} `json:"each"`
			} `json:"metrics"`
		} `json:"resources"`
	} `json:"spec"`
}

// TestKubeStateMetricsPathsExistInTheCRDs resolves every path of kube-state-metrics.yaml in the
// schema of the CRD it names (manifests/crds), so a renamed or mistyped field fails here rather
// than as a silently missing series.
func TestKubeStateMetricsPathsExistInTheCRDs(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "kube-state-metrics.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg ksmConfig
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Kind != "CustomResourceStateMetrics" || len(cfg.Spec.Resources) != 3 {
		t.Fatalf("want a CustomResourceStateMetrics for the three main kinds, got kind %q with %d resources", cfg.Kind, len(cfg.Spec.Resources))
	}
	crds := map[string]*apiextensionsv1.JSONSchemaProps{}
	files, _ := filepath.Glob(filepath.Join(dir, "..", "crds", "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			crds[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = v.Schema.OpenAPIV3Schema
		}
	}
	for _, r := range cfg.Spec.Resources {
		gvk := r.GroupVersionKind
		schema := crds[gvk.Group+"/"+gvk.Version+"/"+gvk.Kind]
		if schema == nil {
			t.Errorf("no CRD serves %s/%s %s", gvk.Group, gvk.Version, gvk.Kind)
			continue
		}
		check := func(what string, base *apiextensionsv1.JSONSchemaProps, path []string) {
			if len(path) > 0 && path[0] == "metadata" {
				return // ObjectMeta, not in the CRD schema
			}
			if resolve(base, path) == nil {
				t.Errorf("%s %s: %s does not exist in the CRD", gvk.Kind, what, strings.Join(path, "."))
			}
		}
		for l, p := range r.LabelsFromPath {
			check("label "+l, schema, p)
		}
		for _, m := range r.Metrics {
			switch {
			case m.Each.Info != nil:
				for l, p := range m.Each.Info.LabelsFromPath {
					check(m.Name+" label "+l, schema, p)
				}
			case m.Each.Gauge != nil:
				g := m.Each.Gauge
				check(m.Name+" path", schema, g.Path)
				elem := resolve(schema, g.Path)
				if elem != nil && elem.Items != nil && elem.Items.Schema != nil {
					elem = elem.Items.Schema // the path is a list: the rest is relative to its items
				}
				if elem == nil {
					continue
				}
				for l, p := range g.LabelsFromPath {
					check(m.Name+" label "+l, elem, p)
				}
				if len(g.ValueFrom) > 0 {
					check(m.Name+" value", elem, g.ValueFrom)
				}
			default:
				t.Errorf("%s %s: neither info nor gauge", gvk.Kind, m.Name)
			}
		}
	}
}

// resolve walks an object schema along path; nil when a field does not exist.
func resolve(s *apiextensionsv1.JSONSchemaProps, path []string) *apiextensionsv1.JSONSchemaProps {
	for _, p := range path {
		if s == nil {
			return nil
		}
		prop, ok := s.Properties[p]
		if !ok {
			return nil
		}
		s = &prop
	}
	return s
}
