package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
)

// namesProvider records the names of the queues whose metrics it makes.
type namesProvider struct {
	workqueue.MetricsProvider
	names []string
}

func (p *namesProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	p.names = append(p.names, name)
	return p.MetricsProvider.NewDepthMetric(name)
}

// TestQueueNamesTellGroupsApart: two parent kinds of the same name in two
// groups have queues of their own, so their metrics must not share a name.
func TestQueueNamesTellGroupsApart(t *testing.T) {
	p := &namesProvider{MetricsProvider: noopProvider{}}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "example.loom.dev", Version: "v1alpha1", Kind: "Database"},
		{Group: "other.example.com", Version: "v1", Kind: "Database"},
		{Version: "v1", Kind: "ConfigMap"},
	} {
		q := newParentQueue(gvk, p)
		q.ShutDown()
	}
	want := []string{"Database.example.loom.dev", "Database.other.example.com", "ConfigMap"}
	if diff := cmp.Diff(want, p.names); diff != "" {
		t.Errorf("queue names (-want +got):\n%s", diff)
	}
}

// noopProvider makes metrics that record nothing.
type noopProvider struct{}

func (noopProvider) NewDepthMetric(string) workqueue.GaugeMetric            { return noop{} }
func (noopProvider) NewAddsMetric(string) workqueue.CounterMetric           { return noop{} }
func (noopProvider) NewLatencyMetric(string) workqueue.HistogramMetric      { return noop{} }
func (noopProvider) NewWorkDurationMetric(string) workqueue.HistogramMetric { return noop{} }
func (noopProvider) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noop{}
}
func (noopProvider) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noop{}
}
func (noopProvider) NewRetriesMetric(string) workqueue.CounterMetric { return noop{} }

type noop struct{}

func (noop) Inc()            {}
func (noop) Dec()            {}
func (noop) Set(float64)     {}
func (noop) Observe(float64) {}
