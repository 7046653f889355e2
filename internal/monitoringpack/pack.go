// Package monitoringpack reads the monitoring pack in manifests/monitoring (the PrometheusRule and
// the Grafana dashboards) and lists the metrics its expressions name. The scrape tests of the
// proxy (proxy/server) and of the operator (test/operator) check that a running binary exposes
// every one of them, so the list lives in the pack files alone. The real PromQL parser checks the
// same expressions in hack/verify-monitoring.sh (it is too heavy for the main module).
package monitoringpack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// RulesFile and DashboardsDir are the pack's files, relative to manifests/monitoring.
const (
	RulesFile     = "prometheusrule.yaml"
	DashboardsDir = "dashboards"
)

// ProxyPrefix starts the name of every proxy metric; the operator's metrics do not start with it.
const ProxyPrefix = "kafkalink_proxy_"

// Expr is one PromQL expression of the pack and where it is.
type Expr struct {
	Where, Expr string
}

// Exprs reads every alert and recording rule expression and every dashboard panel target of the
// pack in dir (manifests/monitoring).
func Exprs(dir string) ([]Expr, error) {
	var out []Expr
	b, err := os.ReadFile(filepath.Join(dir, RulesFile))
	if err != nil {
		return nil, err
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Alert  string `json:"alert"`
					Record string `json:"record"`
					Expr   string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &rule); err != nil {
		return nil, fmt.Errorf("%s: %w", RulesFile, err)
	}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			out = append(out, Expr{Where: fmt.Sprintf("%s: %s/%s%s", RulesFile, g.Name, r.Alert, r.Record), Expr: r.Expr})
		}
	}
	dashboards, err := filepath.Glob(filepath.Join(dir, DashboardsDir, "*.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range dashboards {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var d dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, p := range d.Panels {
			for _, t := range p.Targets {
				out = append(out, Expr{Where: fmt.Sprintf("%s: panel %q target %s", filepath.Base(f), p.Title, t.RefID), Expr: t.Expr})
			}
		}
	}
	return out, nil
}

type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// Metrics lists, sorted, the metric names the pack's expressions use.
func Metrics(dir string) ([]string, error) {
	exprs, err := Exprs(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, e := range exprs {
		for _, n := range MetricNames(e.Expr) {
			seen[n] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// keywords are PromQL's words that are never metric names: operators, modifiers and the
// aggregation operators (which may be followed by "by (...)" rather than "(").
var keywords = map[string]bool{"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true,
	"Inf": true, "NaN": true, "sum": true, "avg": true, "count": true, "min": true, "max": true, "group": true, "stddev": true,
	"stdvar": true, "topk": true, "bottomk": true, "quantile": true, "count_values": true, "limitk": true, "limit_ratio": true}

// grouping are the words followed by a list of label names in parentheses.
var grouping = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// MetricNames returns the metric names in a PromQL expression, in order of appearance: the
// identifiers outside strings, label matchers ({...}) and ranges ([...]) that are neither
// keywords nor function or aggregation names (followed by "("). Grafana's $variables sit inside
// strings and ranges, so dashboard expressions work too.
func MetricNames(expr string) []string {
	var out []string
	isStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isPart := func(c byte) bool { return isStart(c) || c >= '0' && c <= '9' }
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '{' || c == '[':
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			for i++; i < len(expr) && expr[i] != closer; {
				if q := expr[i]; q == '"' || q == '\'' || q == '`' {
					i = skipString(expr, i)
				} else {
					i++
				}
			}
			i++
		case c >= '0' && c <= '9' || c == '.':
			for i++; i < len(expr) && (isPart(expr[i]) || expr[i] == '.'); i++ {
			}
		case isStart(c):
			j := i
			for j < len(expr) && isPart(expr[j]) {
				j++
			}
			word := expr[i:j]
			k := j
			for k < len(expr) && (expr[k] == ' ' || expr[k] == '\n' || expr[k] == '\t') {
				k++
			}
			switch {
			case grouping[word]:
				// Skip the label list.
				if k < len(expr) && expr[k] == '(' {
					if end := strings.IndexByte(expr[k:], ')'); end >= 0 {
						j = k + end + 1
					}
				}
			case !keywords[word] && (k == len(expr) || expr[k] != '('):
				out = append(out, word)
			}
			i = j
		default:
			i++
		}
	}
	return out
}

// skipString returns the index after the string literal that starts at i.
func skipString(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		if s[i] == '\\' && q != '`' {
			i++
			continue
		}
		if s[i] == q {
			return i + 1
		}
	}
	return i
}

// Dir is manifests/monitoring of the repository that holds the working directory.
func Dir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/kafkalink/kafkalink\n") {
				return filepath.Join(dir, "manifests", "monitoring"), nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no kafkalink go.mod above the working directory")
		}
		dir = parent
	}
}

// Missing returns the names that a Prometheus text exposition lacks: a name is there when a
// sample line starts with it followed by "{" or " ".
func Missing(exposition string, names []string) []string {
	have := map[string]bool{}
	for _, l := range strings.Split(exposition, "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		if i := strings.IndexAny(l, "{ "); i > 0 {
			have[l[:i]] = true
		}
	}
	var missing []string
	for _, n := range names {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	return missing
}
