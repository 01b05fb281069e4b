package main

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/util/workqueue"
)

// A queue made after registerQueueMetrics reports on Loom's registry, under
// the names dashboards for Kubernetes controllers expect.
func TestQueueMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	registerQueueMetrics(reg)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "MyResource"})
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	item, _ := q.Get()
	q.Done(item)
	q.AddRateLimited("c")

	want := `
# HELP workqueue_adds_total Total number of adds handled by the workqueue.
# TYPE workqueue_adds_total counter
workqueue_adds_total{name="MyResource"} 2
# HELP workqueue_depth Current depth of the workqueue.
# TYPE workqueue_depth gauge
workqueue_depth{name="MyResource"} 1
# HELP workqueue_retries_total Total number of retries handled by the workqueue.
# TYPE workqueue_retries_total counter
workqueue_retries_total{name="MyResource"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"workqueue_adds_total", "workqueue_depth", "workqueue_retries_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "workqueue_work_duration_seconds"); n != 1 {
		t.Errorf("%d work duration series, want 1", n)
	}
}
