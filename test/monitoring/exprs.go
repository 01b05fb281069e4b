// Package monitoring reads the PromQL of Loom's Grafana dashboard and
// Prometheus alert rules (deploy/chart/files), so that its tests can parse
// every expression with Prometheus's own parser and list the metrics they
// use (metrics.txt), which test/e2e checks a running Loom exports.
package monitoring

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// Expr is one PromQL expression and where it was found.
type Expr struct {
	// Where names the panel and target, variable or alert.
	Where string
	// PromQL is the expression as Prometheus receives it: Grafana's
	// interval variables are replaced by durations.
	PromQL string
	// Panel is true for a panel's target (not a template variable's
	// query), whose selectors must honour the dashboard's variables.
	Panel bool
}

// grafanaIntervals are the Grafana variables that stand for a duration,
// and one each may stand for; other variables ($job...) sit inside label
// values, where PromQL takes any string.
var grafanaIntervals = strings.NewReplacer("$__rate_interval", "5m", "${__rate_interval}", "5m",
	"$__interval", "1m", "${__interval}", "1m", "$__range", "6h", "${__range}", "6h")

// labelValues is Grafana's label_values(selector, label) variable query.
var labelValues = regexp.MustCompile(`^\s*label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// DashboardExprs returns every expression of a Grafana dashboard: each
// panel's targets (in rows too) and each query variable's selector.
func DashboardExprs(data []byte) ([]Expr, error) {
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("decode dashboard: %w", err)
	}
	var out []Expr
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				if t.Expr != "" {
					out = append(out, Expr{Where: fmt.Sprintf("panel %q target %s", p.Title, t.RefID), PromQL: grafanaIntervals.Replace(t.Expr), Panel: true})
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				return nil, fmt.Errorf("variable %s: query is neither a string nor an object: %w", v.Name, err)
			}
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			return nil, fmt.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q.Query)
		}
		out = append(out, Expr{Where: "variable " + v.Name, PromQL: m[1]})
	}
	return out, nil
}

type panel struct {
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

// Rule is one alerting rule of a PrometheusRule's spec.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// Rules returns the alerting rules of a PrometheusRule's spec (groups:).
func Rules(data []byte) ([]Rule, error) {
	var spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []Rule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(data, &spec); err != nil {
		return nil, fmt.Errorf("decode rules: %w", err)
	}
	var out []Rule
	for _, g := range spec.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// Parse parses e with Prometheus's PromQL parser.
func Parse(e string) (parser.Expr, error) {
	return parser.NewParser(parser.Options{}).ParseExpr(e)
}

// Selectors returns the vector selectors of e.
func Selectors(e parser.Expr) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// MetricName returns the metric a selector reads: its name, or its
// __name__="..." matcher; "" if it names none exactly.
func MetricName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == "__name__" && m.Type.String() == "=" {
			return m.Value
		}
	}
	return ""
}

// MetricNames returns the sorted, distinct metric names es read, parsed
// with Prometheus's parser.
func MetricNames(es []string) ([]string, error) {
	var names []string
	for _, s := range es {
		e, err := Parse(s)
		if err != nil {
			return nil, fmt.Errorf("parse %q: %w", s, err)
		}
		for _, vs := range Selectors(e) {
			if n := MetricName(vs); n != "" {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
