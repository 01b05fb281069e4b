package main

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller"
)

// loomRun is Loom running in this process.
type loomRun struct {
	registry *prometheus.Registry
	cancel   context.CancelFunc
	done     chan error
}

// startLoom runs Loom over templates, limited to namespace, with cfg (whose
// transport counts the requests). It returns at once; Loom starts its
// informers and workers in the background.
func startLoom(ctx context.Context, cfg *rest.Config, templates, namespace string, workers int) (*loomRun, error) {
	l := &loomRun{registry: prometheus.NewRegistry(), done: make(chan error, 1)}
	mgr, err := controller.New(controller.Options{
		Config: cfg, TemplatesDir: templates, Namespace: namespace, Workers: workers,
		ResyncPeriod: 0, Registry: l.registry,
	})
	if err != nil {
		return nil, fmt.Errorf("new Loom manager: %w", err)
	}
	ctx, l.cancel = context.WithCancel(klog.NewContext(ctx, klog.Background().WithName("loom")))
	go func() { l.done <- mgr.Run(ctx) }()
	return l, nil
}

// stop cancels Loom and waits for its in-flight reconciles to finish.
func (l *loomRun) stop() error {
	l.cancel()
	select {
	case err := <-l.done:
		if err != nil {
			return fmt.Errorf("loom run: %w", err)
		}
		return nil
	case <-time.After(60 * time.Second):
		return fmt.Errorf("loom did not stop within 60s of cancellation")
	}
}

// loomStats are Loom's own counters at one moment.
type loomStats struct {
	Reconciles   float64
	StatusWrites float64
	// Changes are apply results by action (created, configured, unchanged).
	Changes map[string]float64
	// ReconcileSeconds is the total time spent in reconciles.
	ReconcileSeconds float64
	Queue            queueStats
}

func (l *loomRun) stats() loomStats {
	s := loomStats{Changes: map[string]float64{}, Queue: queueMetricsFor("MyResource").snapshot()}
	mfs, err := l.registry.Gather()
	if err != nil {
		return s
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "loom_reconcile_total":
				s.Reconciles += m.GetCounter().GetValue()
			case "loom_status_writes_total":
				s.StatusWrites += m.GetCounter().GetValue()
			case "loom_reconcile_duration_seconds":
				s.ReconcileSeconds += m.GetHistogram().GetSampleSum()
			case "loom_child_changes_total":
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "action" {
						s.Changes[lp.GetValue()] += m.GetCounter().GetValue()
					}
				}
			}
		}
	}
	return s
}

// sub returns what happened between snapshot b and s.
func (s loomStats) sub(b loomStats) loomStats {
	out := loomStats{
		Reconciles: s.Reconciles - b.Reconciles, StatusWrites: s.StatusWrites - b.StatusWrites,
		ReconcileSeconds: s.ReconcileSeconds - b.ReconcileSeconds,
		Changes:          map[string]float64{}, Queue: s.Queue.sub(b.Queue),
	}
	for k, v := range s.Changes {
		out.Changes[k] = v - b.Changes[k]
	}
	return out
}

// The workqueue's metrics, kept in memory: client-go reports them to a
// process-wide provider, set once before any queue is made.
var (
	queuesMu sync.Mutex
	queues   = map[string]*queueMetrics{}
)

func init() { workqueue.SetProvider(queueProvider{}) }

// queueMetrics are one workqueue's adds, depth, and time waiting and
// being worked on.
type queueMetrics struct {
	adds, depth, maxDepth atomic.Int64
	mu                    sync.Mutex
	waitSum, waitMax      float64
	waitN                 int64
	workSum               float64
	workN                 int64
}

// queueStats is a snapshot of queueMetrics.
type queueStats struct {
	Adds, MaxDepth   int64
	WaitSum, WaitMax float64
	WaitN            int64
	WorkSum          float64
	WorkN            int64
}

func queueMetricsFor(name string) *queueMetrics {
	queuesMu.Lock()
	defer queuesMu.Unlock()
	q, ok := queues[name]
	if !ok {
		q = &queueMetrics{}
		queues[name] = q
	}
	return q
}

func (q *queueMetrics) snapshot() queueStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return queueStats{
		Adds: q.adds.Load(), MaxDepth: q.maxDepth.Load(),
		WaitSum: q.waitSum, WaitMax: q.waitMax, WaitN: q.waitN, WorkSum: q.workSum, WorkN: q.workN,
	}
}

// resetPeaks starts a new window for the maxima.
func (q *queueMetrics) resetPeaks() {
	q.maxDepth.Store(q.depth.Load())
	q.mu.Lock()
	q.waitMax = 0
	q.mu.Unlock()
}

func (s queueStats) sub(b queueStats) queueStats {
	return queueStats{
		Adds: s.Adds - b.Adds, MaxDepth: s.MaxDepth, WaitMax: s.WaitMax,
		WaitSum: s.WaitSum - b.WaitSum, WaitN: s.WaitN - b.WaitN,
		WorkSum: s.WorkSum - b.WorkSum, WorkN: s.WorkN - b.WorkN,
	}
}

type queueProvider struct{}

type depthGauge struct{ q *queueMetrics }

func (g depthGauge) Inc() {
	d := g.q.depth.Add(1)
	for {
		m := g.q.maxDepth.Load()
		if d <= m || g.q.maxDepth.CompareAndSwap(m, d) {
			return
		}
	}
}
func (g depthGauge) Dec() { g.q.depth.Add(-1) }

type addsCounter struct{ q *queueMetrics }

func (c addsCounter) Inc() { c.q.adds.Add(1) }

type waitHistogram struct{ q *queueMetrics }

func (h waitHistogram) Observe(v float64) {
	h.q.mu.Lock()
	h.q.waitSum += v
	h.q.waitMax = math.Max(h.q.waitMax, v)
	h.q.waitN++
	h.q.mu.Unlock()
}

type workHistogram struct{ q *queueMetrics }

func (h workHistogram) Observe(v float64) {
	h.q.mu.Lock()
	h.q.workSum += v
	h.q.workN++
	h.q.mu.Unlock()
}

type noopMetric struct{}

func (noopMetric) Inc()        {}
func (noopMetric) Set(float64) {}

func (queueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return depthGauge{queueMetricsFor(name)}
}
func (queueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return addsCounter{queueMetricsFor(name)}
}
func (queueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return waitHistogram{queueMetricsFor(name)}
}
func (queueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return workHistogram{queueMetricsFor(name)}
}
func (queueProvider) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noopMetric{}
}
func (queueProvider) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noopMetric{}
}
func (queueProvider) NewRetriesMetric(string) workqueue.CounterMetric { return noopMetric{} }
