//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loom-operator/loom/test/env"
)

// obsSet is a small template set for MyResource: one ConfigMap per parent,
// ready as soon as it exists.
var obsSet = map[string]string{
	"loom.yaml": "parent:\n  apiVersion: example.loom.dev/v1alpha1\n  kind: MyResource\n",
	"configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-obs
data:
  image: {{ .Spec.image | quote }}
`,
}

// Every metric the dashboard and the alerts read (test/monitoring/
// metrics.txt, which test/monitoring derives from them with Prometheus's
// PromQL parser) is on bin/loom run's /metrics, with its TYPE, once Loom
// has reconciled a parent; and loom_parents follows that parent to Ready
// and back to zero when it is deleted.
func TestDashboardMetricsExported(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "obs"), obsSet)
	addr := freeAddr(t)
	// The webhook on (an address of its own), as loom run's default: its
	// metrics are the dashboard's and the alerts' too.
	p := startLoomProcess(t, ns, "--templates", dir, "--metrics-bind-address", addr, "--log-format", "json", "--webhook-bind-address", freeAddr(t))
	createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "hello", "Ready", "True")

	ready := `loom_parents{kind="MyResource",state="Ready"}`
	var families map[string]*dto.MetricFamily
	eventually(t, 30*time.Second, ready+" is 1", func(ctx context.Context) error {
		var err error
		if families, err = scrape(ctx, addr); err != nil {
			return err
		}
		return wantGauge(families, "loom_parents", map[string]string{"kind": "MyResource", "state": "Ready"}, 1)
	})
	for _, name := range dashboardMetrics(t) {
		if why, ok := perWorkloadCluster[name]; ok && families[name] == nil {
			t.Logf("%s is not exported: %s", name, why)
			continue
		}
		if err := exported(families, name); err != nil {
			t.Errorf("the dashboard or the alerts read %s: %v", name, err)
		}
	}
	if err := wantGauge(families, "loom_leader", nil, 1); err != nil {
		t.Error(err)
	}

	if err := e.Dyn.Resource(myresGVR).Namespace(ns).Delete(context.Background(), "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, ready+" is 0 once the parent is deleted", func(ctx context.Context) error {
		f, err := scrape(ctx, addr)
		if err != nil {
			return err
		}
		return wantGauge(f, "loom_parents", map[string]string{"kind": "MyResource", "state": "Ready"}, 0)
	})
	if t.Failed() {
		t.Logf("loom's log:\n%s", p.Output())
	}
}

// perWorkloadCluster are the metrics the alerts read that have a series
// per registered workload cluster Loom uses, and so none in
// TestDashboardMetricsExported, which registers no cluster: if one is
// exported anyway, it is checked as the others are.
var perWorkloadCluster = map[string]string{
	"loom_cluster_reachable": "it has a series per workload cluster Loom uses, and this test registers none",
}

// dashboardMetrics reads test/monitoring/metrics.txt.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	e := env.From(t)
	f, err := os.Open(filepath.Join(e.Root, "test", "monitoring", "metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" && !strings.HasPrefix(l, "#") {
			names = append(names, l)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) < 10 {
		t.Fatalf("metrics.txt lists %d metrics; want the dashboard's", len(names))
	}
	return names
}

// scrape reads Loom's /metrics.
func scrape(ctx context.Context, addr string) (map[string]*dto.MetricFamily, error) {
	body, err := httpGet(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return families, nil
}

// exported checks that a metric name a query reads is exported with at
// least one series, as the TYPE its name implies: name_bucket is a
// histogram's, name_sum and name_count a histogram's or a summary's, and
// a name ending in _total a counter's.
func exported(families map[string]*dto.MetricFamily, name string) error {
	for suffix, types := range map[string][]dto.MetricType{
		"_bucket": {dto.MetricType_HISTOGRAM},
		"_sum":    {dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY},
		"_count":  {dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY},
	} {
		base, ok := strings.CutSuffix(name, suffix)
		if f := families[base]; ok && f != nil {
			for _, typ := range types {
				if f.GetType() == typ && len(f.GetMetric()) > 0 {
					return nil
				}
			}
			return fmt.Errorf("%s is a %s with %d series, want one of %v", base, f.GetType(), len(f.GetMetric()), types)
		}
	}
	f := families[name]
	switch {
	case f == nil:
		return fmt.Errorf("not exported")
	case len(f.GetMetric()) == 0:
		return fmt.Errorf("no series")
	case strings.HasSuffix(name, "_total") && f.GetType() != dto.MetricType_COUNTER:
		return fmt.Errorf("TYPE %s, want counter", f.GetType())
	case f.GetType() != dto.MetricType_COUNTER && f.GetType() != dto.MetricType_GAUGE:
		return fmt.Errorf("TYPE %s, want counter or gauge", f.GetType())
	}
	return nil
}

// wantGauge checks that the gauge series of name with labels has value.
func wantGauge(families map[string]*dto.MetricFamily, name string, labels map[string]string, want float64) error {
	f := families[name]
	if f == nil {
		return fmt.Errorf("%s not exported", name)
	}
	if f.GetType() != dto.MetricType_GAUGE {
		return fmt.Errorf("%s is a %s, want a gauge", name, f.GetType())
	}
next:
	for _, m := range f.GetMetric() {
		for k, v := range labels {
			found := false
			for _, l := range m.GetLabel() {
				found = found || (l.GetName() == k && l.GetValue() == v)
			}
			if !found {
				continue next
			}
		}
		if got := m.GetGauge().GetValue(); got != want {
			return fmt.Errorf("%s%v = %v, want %v", name, labels, got, want)
		}
		return nil
	}
	return fmt.Errorf("%s%v has no series", name, labels)
}
