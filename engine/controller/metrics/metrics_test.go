package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A kind's reconcile, drift and failure series exist, at 0, once its
// controller starts, so that an alert on rate() has a series to compare.
func TestKindSeriesInitialized(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.InitKind("MyResource")
	want := `
# HELP loom_drift_reverted_total Children that another writer had changed and Loom changed back, by parent kind.
# TYPE loom_drift_reverted_total counter
loom_drift_reverted_total{kind="MyResource"} 0
# HELP loom_reconcile_total Reconciles by parent kind and result (success, error).
# TYPE loom_reconcile_total counter
loom_reconcile_total{kind="MyResource",result="error"} 0
loom_reconcile_total{kind="MyResource",result="success"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "loom_reconcile_total", "loom_drift_reverted_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.duration, "loom_reconcile_duration_seconds"); n != 1 {
		t.Errorf("%d loom_reconcile_duration_seconds series, want 1", n)
	}
}
