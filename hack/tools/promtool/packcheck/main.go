// Command packcheck prepares manifests/monitoring for promtool and checks its dashboards with the
// real PromQL parser: it writes the groups of the PrometheusRule as a plain Prometheus rules file
// (what promtool check rules and test rules read), and parses every dashboard target after
// replacing Grafana's variables. hack/verify-monitoring.sh runs it.
//
// Usage: packcheck <manifests/monitoring> <rules file to write>
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: packcheck <manifests/monitoring> <rules file to write>")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "packcheck:", err)
		os.Exit(1)
	}
}

func run(dir, rulesOut string) error {
	b, err := os.ReadFile(filepath.Join(dir, "prometheusrule.yaml"))
	if err != nil {
		return err
	}
	var rule struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			Groups []any `yaml:"groups"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &rule); err != nil {
		return fmt.Errorf("prometheusrule.yaml: %w", err)
	}
	if rule.APIVersion != "monitoring.coreos.com/v1" || rule.Kind != "PrometheusRule" || len(rule.Spec.Groups) == 0 {
		return fmt.Errorf("prometheusrule.yaml: want a monitoring.coreos.com/v1 PrometheusRule with groups")
	}
	out, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		return err
	}
	if err := os.WriteFile(rulesOut, out, 0o644); err != nil {
		return err
	}

	files, err := filepath.Glob(filepath.Join(dir, "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no dashboards in %s/dashboards", dir)
	}
	// Grafana replaces these before the query reaches Prometheus; any valid value parses the same.
	vars := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")
	promql := parser.NewParser(parser.Options{})
	var problems []string
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var d struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, p := range d.Panels {
			for _, t := range p.Targets {
				n++
				if _, err := promql.ParseExpr(vars.Replace(t.Expr)); err != nil {
					problems = append(problems, fmt.Sprintf("%s: panel %q: %v", filepath.Base(f), p.Title, err))
				}
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("dashboard expressions do not parse:\n%s", strings.Join(problems, "\n"))
	}
	fmt.Printf("packcheck: %d rule groups written to %s; %d dashboard expressions parse\n", len(rule.Spec.Groups), rulesOut, n)
	return nil
}
