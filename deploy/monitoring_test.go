package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// The Prometheus Operator's kinds (ServiceMonitor, PrometheusRule) are not
// served by the local cluster, and their CRDs are not vendored here, so the
// e2e dry-run cannot validate them. Instead, each is decoded strictly into
// the subset of its monitoring.coreos.com/v1 schema that the chart uses
// (an unknown or misspelt field fails), and checked against the rules of
// that schema that matter here: its Duration pattern, required fields, one
// of alert or record per rule, and that the ServiceMonitor selects the
// metrics Service and names its port.

// promDuration is the Prometheus Operator's Duration pattern.
var promDuration = regexp.MustCompile(`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`)

type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path,omitempty"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ruleSpec `json:"spec"`
}

type ruleSpec struct {
	Groups []struct {
		Name                    string            `json:"name"`
		Interval                string            `json:"interval,omitempty"`
		QueryOffset             string            `json:"query_offset,omitempty"`
		Limit                   *int              `json:"limit,omitempty"`
		PartialResponseStrategy string            `json:"partial_response_strategy,omitempty"`
		Labels                  map[string]string `json:"labels,omitempty"`
		Rules                   []struct {
			Record        string             `json:"record,omitempty"`
			Alert         string             `json:"alert,omitempty"`
			Expr          intstr.IntOrString `json:"expr"`
			For           string             `json:"for,omitempty"`
			KeepFiringFor string             `json:"keep_firing_for,omitempty"`
			Labels        map[string]string  `json:"labels,omitempty"`
			Annotations   map[string]string  `json:"annotations,omitempty"`
		} `json:"rules"`
	} `json:"groups"`
}

func TestMonitoringObjectsMatchTheirSchema(t *testing.T) {
	alerts := map[string]string{"a sample file": sampleAlerts}
	shipped := filepath.Join("chart", "files", "alerts", "loom-rules.yaml")
	if b, err := os.ReadFile(shipped); err == nil {
		alerts["the shipped "+shipped] = string(b)
	} else {
		t.Logf("%s: %v; checking the sample only", shipped, err)
	}
	for name, text := range alerts {
		t.Run(name, func(t *testing.T) {
			ch := loadChart(t, map[string]string{"files/alerts/loom-rules.yaml": text, "files/dashboards/loom.json": sampleDashboard})
			r := render(t, ch, readValues(t, allOnValues))
			svc := r.objects["Service/loom-all-metrics"].(*corev1.Service)
			if err := checkServiceMonitor(r.doc(t, "ServiceMonitor", "loom-all").Content, svc); err != nil {
				t.Error(err)
			}
			if err := checkPrometheusRule(r.doc(t, "PrometheusRule", "loom-all").Content); err != nil {
				t.Error(err)
			}
		})
	}
}

// The structural checks refuse what they must.
func TestMonitoringChecksRefuse(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Labels: map[string]string{"app": "loom"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "metrics"}}}}
	const monitor = "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: m, namespace: ops}\n"
	for name, doc := range map[string]string{
		"misspelt field":         monitor + "spec: {selector: {matchLabels: {app: loom}}, namespaceSelector: {matchNames: [ops]}, endpoints: [{port: metrics, intervall: 30s}]}",
		"bad duration":           monitor + "spec: {selector: {matchLabels: {app: loom}}, namespaceSelector: {matchNames: [ops]}, endpoints: [{port: metrics, interval: 1m30}]}",
		"selects nothing":        monitor + "spec: {selector: {matchLabels: {app: other}}, namespaceSelector: {matchNames: [ops]}, endpoints: [{port: metrics}]}",
		"names no Service port":  monitor + "spec: {selector: {matchLabels: {app: loom}}, namespaceSelector: {matchNames: [ops]}, endpoints: [{port: http}]}",
		"looks in another place": monitor + "spec: {selector: {matchLabels: {app: loom}}, namespaceSelector: {matchNames: [default]}, endpoints: [{port: metrics}]}",
	} {
		if checkServiceMonitor(doc, svc) == nil {
			t.Errorf("ServiceMonitor with a %s accepted", name)
		}
	}
	const rule = "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: r}\nspec:\n  "
	for name, doc := range map[string]string{
		"no groups":              rule + "groups: []",
		"group without a name":   rule + "groups: [{rules: [{alert: A, expr: up}]}]",
		"rule without expr":      rule + "groups: [{name: g, rules: [{alert: A}]}]",
		"rule both alert+record": rule + "groups: [{name: g, rules: [{alert: A, record: r, expr: up}]}]",
		"bad for":                rule + "groups: [{name: g, rules: [{alert: A, expr: up, for: 5 minutes}]}]",
		"unknown field":          rule + "groups: [{name: g, rules: [{alert: A, expr: up, severity: high}]}]",
	} {
		if checkPrometheusRule(doc) == nil {
			t.Errorf("PrometheusRule with %s accepted", name)
		}
	}
}

// checkServiceMonitor checks a ServiceMonitor's structure, and that it
// scrapes svc's metrics port.
func checkServiceMonitor(doc string, svc *corev1.Service) error {
	var sm serviceMonitor
	if err := yaml.UnmarshalStrict([]byte(doc), &sm); err != nil {
		return fmt.Errorf("ServiceMonitor: %w", err)
	}
	if sm.APIVersion != "monitoring.coreos.com/v1" || len(sm.Spec.Endpoints) == 0 {
		return fmt.Errorf("ServiceMonitor %s: apiVersion %s, %d endpoints", sm.Name, sm.APIVersion, len(sm.Spec.Endpoints))
	}
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		return fmt.Errorf("ServiceMonitor %s: selector: %w", sm.Name, err)
	}
	if sel.Empty() || !sel.Matches(labels.Set(svc.Labels)) {
		return fmt.Errorf("ServiceMonitor %s: selector %s does not select Service %s", sm.Name, sel, svc.Name)
	}
	if !sm.Spec.NamespaceSelector.Any && (len(sm.Spec.NamespaceSelector.MatchNames) != 1 || sm.Spec.NamespaceSelector.MatchNames[0] != svc.Namespace) {
		return fmt.Errorf("ServiceMonitor %s: looks in %v, not in %s", sm.Name, sm.Spec.NamespaceSelector.MatchNames, svc.Namespace)
	}
	for _, e := range sm.Spec.Endpoints {
		if !promDuration.MatchString(e.Interval) || !promDuration.MatchString(e.ScrapeTimeout) {
			return fmt.Errorf("ServiceMonitor %s: interval %q or scrapeTimeout %q is not a Prometheus duration", sm.Name, e.Interval, e.ScrapeTimeout)
		}
		found := false
		for _, p := range svc.Spec.Ports {
			found = found || p.Name == e.Port
		}
		if !found {
			return fmt.Errorf("ServiceMonitor %s: Service %s has no port %q", sm.Name, svc.Name, e.Port)
		}
	}
	return nil
}

// checkPrometheusRule checks a PrometheusRule's structure.
func checkPrometheusRule(doc string) error {
	var pr prometheusRule
	if err := yaml.UnmarshalStrict([]byte(doc), &pr); err != nil {
		return fmt.Errorf("PrometheusRule: %w", err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || len(pr.Spec.Groups) == 0 {
		return fmt.Errorf("PrometheusRule %s: apiVersion %s, %d groups", pr.Name, pr.APIVersion, len(pr.Spec.Groups))
	}
	for _, g := range pr.Spec.Groups {
		if g.Name == "" || !promDuration.MatchString(g.Interval) || len(g.Rules) == 0 {
			return fmt.Errorf("PrometheusRule %s: group %q: a name, a Prometheus duration as interval (%q) and rules are needed", pr.Name, g.Name, g.Interval)
		}
		for i, r := range g.Rules {
			if (r.Alert == "") == (r.Record == "") || r.Expr.String() == "" || r.Expr.String() == "0" && r.Expr.Type == intstr.Int {
				return fmt.Errorf("PrometheusRule %s: group %s, rule %d: one of alert and record, and expr, are needed", pr.Name, g.Name, i)
			}
			if !promDuration.MatchString(r.For) || !promDuration.MatchString(r.KeepFiringFor) {
				return fmt.Errorf("PrometheusRule %s: group %s, rule %d: for %q is not a Prometheus duration", pr.Name, g.Name, i, r.For)
			}
		}
	}
	return nil
}
