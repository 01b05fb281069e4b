package monitoring

import (
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

var update = flag.Bool("update", false, "rewrite metrics.txt from the dashboard and the alert rules")

const (
	dashboardFile = "../../deploy/chart/files/dashboards/loom.json"
	rulesFile     = "../../deploy/chart/files/alerts/loom-rules.yaml"
	// runbookDir holds one page per alert, docs/runbooks/<alert>.md.
	runbookDir = "../../docs/runbooks"
	// metricsFile lists the metrics the dashboard and the alerts read;
	// test/e2e checks that a running Loom exports each of them.
	metricsFile = "metrics.txt"
	// runbookBase is where each alert's runbook_url points, before its
	// page's file name.
	runbookBase = "https://github.com/loom-operator/loom/blob/main/docs/runbooks/"
)

// notLooms are metrics Prometheus makes itself, not Loom.
var notLooms = map[string]bool{"up": true}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// allExprs returns the dashboard's and the rules' expressions.
func allExprs(t *testing.T) ([]Expr, []Rule) {
	t.Helper()
	exprs, err := DashboardExprs(read(t, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := Rules(read(t, rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(exprs) == 0 || len(rules) == 0 {
		t.Fatalf("%d dashboard expressions and %d rules; want some of each", len(exprs), len(rules))
	}
	for _, r := range rules {
		exprs = append(exprs, Expr{Where: "alert " + r.Alert, PromQL: r.Expr})
	}
	return exprs, rules
}

// Every expression of the dashboard and the rules is PromQL that
// Prometheus's own parser accepts, and each panel's selectors honour the
// dashboard's job, namespace and pod variables.
func TestExpressionsParse(t *testing.T) {
	exprs, _ := allExprs(t)
	for _, e := range exprs {
		t.Run(e.Where, func(t *testing.T) {
			parsed, err := Parse(e.PromQL)
			if err != nil {
				t.Fatalf("%s: %v", e.PromQL, err)
			}
			if !e.Panel {
				return
			}
			for _, vs := range Selectors(parsed) {
				for _, v := range []string{"job", "namespace", "pod"} {
					if !slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool { return m.Name == v && strings.Contains(m.Value, "$"+v) }) {
						t.Errorf("selector %s does not match %s on $%s", vs, v, v)
					}
				}
			}
		})
	}
}

// The dashboard's panels read the ${datasource} variable, and it has the
// job, namespace and pod variables.
func TestDashboardVariables(t *testing.T) {
	b := string(read(t, dashboardFile))
	for _, v := range []string{`"name": "datasource"`, `"name": "job"`, `"name": "namespace"`, `"name": "pod"`} {
		if !strings.Contains(b, v) {
			t.Errorf("the dashboard has no variable %s", v)
		}
	}
	uids := regexp.MustCompile(`"uid": "([^"]*)"`).FindAllStringSubmatch(b, -1)
	for _, m := range uids {
		if m[1] != "${datasource}" && m[1] != "-- Grafana --" && m[1] != "loom-operator" {
			t.Errorf("datasource uid %q, want ${datasource}", m[1])
		}
	}
}

// Each alert has a severity, a summary, a description and a runbook, a
// page of its own under docs/runbooks that the runbooks' index links; its for is a duration Prometheus reads.
func TestRules(t *testing.T) {
	_, rules := allExprs(t)
	index := string(read(t, filepath.Join(runbookDir, "README.md")))
	seen := map[string]bool{}
	for _, r := range rules {
		t.Run(r.Alert, func(t *testing.T) {
			if r.Alert == "" || seen[r.Alert] {
				t.Fatalf("alert name %q empty or repeated", r.Alert)
			}
			seen[r.Alert] = true
			if s := r.Labels["severity"]; s != "critical" && s != "warning" && s != "info" {
				t.Errorf("severity %q, want critical, warning or info", s)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("no %s annotation", a)
				}
			}
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("for %q: %v", r.For, err)
				}
			}
			page := r.Alert + ".md"
			if got := r.Annotations["runbook_url"]; got != runbookBase+page {
				t.Errorf("runbook_url %q, want %q", got, runbookBase+page)
			}
			b, err := os.ReadFile(filepath.Join(runbookDir, page))
			if err != nil {
				t.Fatalf("no runbook page: %v", err)
			}
			if title := "# Runbook: " + r.Alert + "\n"; !strings.HasPrefix(string(b), title) {
				t.Errorf("docs/runbooks/%s does not start with %q", page, title)
			}
			if !strings.Contains(index, "]("+page+")") {
				t.Errorf("docs/runbooks/README.md does not link %s", page)
			}
		})
	}
}

// metrics.txt lists exactly the metrics the dashboard and the rules read,
// as Prometheus's parser finds them (go test -update rewrites it).
func TestMetricsList(t *testing.T) {
	exprs, _ := allExprs(t)
	var qs []string
	for _, e := range exprs {
		qs = append(qs, e.PromQL)
	}
	names, err := MetricNames(qs)
	if err != nil {
		t.Fatal(err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return notLooms[n] })
	want := "# The metrics that deploy/chart/files/dashboards/loom.json and\n" +
		"# deploy/chart/files/alerts/loom-rules.yaml read, as Prometheus's PromQL\n" +
		"# parser finds them; written by `go test ./... -update` in test/monitoring.\n" +
		"# test/e2e (TestDashboardMetricsExported) checks that bin/loom run exports each.\n" +
		strings.Join(names, "\n") + "\n"
	if *update {
		if err := os.WriteFile(metricsFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := string(read(t, filepath.Clean(metricsFile)))
	if got != want {
		t.Errorf("%s is stale; run go test ./... -update in test/monitoring.\n--- want:\n%s--- got:\n%s", metricsFile, want, got)
	}
}

// The rules load as Prometheus loads a rule file (rulefmt): known fields
// only, every expression parsed and every label and annotation template
// (such as {{ $value | humanizePercentage }}) checked.
func TestRulesLoadAsPrometheusLoadsThem(t *testing.T) {
	_, errs := rulefmt.Parse(read(t, rulesFile), false, model.UTF8Validation,
		parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Error(err)
	}
}
