package monitoringpack

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMetricNames(t *testing.T) {
	tests := map[string]struct {
		expr string
		want []string
	}{
		"a selector with matchers": {
			expr: `kafkalink_proxy_connections_active{virtual_cluster=~"$vc", x="a{b}"}`,
			want: []string{"kafkalink_proxy_connections_active"},
		},
		"aggregations, functions, ranges and Grafana variables": {
			expr: `histogram_quantile(0.99, sum by (api, le) (rate(kafkalink_proxy_request_duration_seconds_bucket{a="b"}[$__rate_interval])))`,
			want: []string{"kafkalink_proxy_request_duration_seconds_bucket"},
		},
		"binary operators, keywords and numbers": {
			expr: "sum by (ns) (rate(a_total[5m])) / on (ns) group_left (b) sum(b_total offset 1h) > bool 1e3 and c",
			want: []string{"a_total", "b_total", "c"},
		},
		"an aggregation with by after the body": {
			expr: "sum(kafkalink_object_conditions) by (kind) > 0",
			want: []string{"kafkalink_object_conditions"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, MetricNames(tc.expr)); diff != "" {
				t.Errorf("MetricNames (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMissing(t *testing.T) {
	exposition := "# HELP a_total x\n# TYPE a_total counter\na_total{x=\"1\"} 2\nb 1\nc_bucket{le=\"1\"} 0\n"
	if diff := cmp.Diff([]string{"a", "c"}, Missing(exposition, []string{"a", "a_total", "b", "c", "c_bucket"})); diff != "" {
		t.Errorf("Missing (-want +got):\n%s", diff)
	}
}

// TestPackNamesMetrics guards the parsing itself: the pack must name metrics of both binaries,
// or a scrape test that checks them would pass on nothing.
func TestPackNamesMetrics(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	names, err := Metrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	var proxy, operator int
	for _, n := range names {
		if strings.HasPrefix(n, ProxyPrefix) {
			proxy++
		} else {
			operator++
		}
	}
	if proxy < 5 || operator < 2 {
		t.Errorf("pack names %d proxy and %d operator metrics: %v", proxy, operator, names)
	}
}

// TestDashboardsAreValid checks what Grafana needs to import a dashboard and what the pack
// promises: a uid and title, unique panel ids, panels inside the 24-column grid, every target with
// an expression on the dashboard's data source variable, and only proxy metrics.
func TestDashboardsAreValid(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, DashboardsDir, "*.json"))
	if len(files) == 0 {
		t.Fatal("no dashboards")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var d struct {
				UID, Title string
				Templating struct {
					List []struct{ Name, Type string }
				}
				Panels []struct {
					ID         int
					Type       string
					Title      string
					Datasource struct{ UID string }
					GridPos    struct{ X, Y, W, H int }
					Targets    []struct {
						RefID      string
						Expr       string
						Datasource struct{ UID string }
					}
				}
			}
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			if d.UID == "" || d.Title == "" {
				t.Error("dashboard without uid or title")
			}
			vars := map[string]bool{}
			for _, v := range d.Templating.List {
				vars[v.Name] = true
			}
			if !vars["datasource"] {
				t.Error("no datasource variable")
			}
			ids := map[int]bool{}
			for _, p := range d.Panels {
				if ids[p.ID] {
					t.Errorf("panel id %d twice", p.ID)
				}
				ids[p.ID] = true
				if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
					t.Errorf("panel %q outside the grid: %+v", p.Title, p.GridPos)
				}
				if p.Type == "row" {
					continue
				}
				if len(p.Targets) == 0 || p.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q has no targets or does not use ${datasource}", p.Title)
				}
				for _, tg := range p.Targets {
					if tg.Expr == "" || tg.RefID == "" || tg.Datasource.UID != "${datasource}" {
						t.Errorf("panel %q target %q: empty expression or refId, or another data source", p.Title, tg.RefID)
					}
					for _, n := range MetricNames(tg.Expr) {
						if !strings.HasPrefix(n, ProxyPrefix) {
							t.Errorf("panel %q names %s, not a proxy metric", p.Title, n)
						}
					}
					for _, v := range []string{"$namespace", "$gateway"} {
						if !strings.Contains(tg.Expr, v) {
							t.Errorf("panel %q target %s ignores %s", p.Title, tg.RefID, v)
						}
					}
				}
			}
		})
	}
}
