package main

import (
	"math"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/util/workqueue"
)

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
	// Available: Loom exposes its workqueue's metrics (always in this
	// process; bin/loom's /metrics may not).
	Available        bool
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
		Available: true, Adds: q.adds.Load(), MaxDepth: q.maxDepth.Load(),
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
		Available: s.Available, Adds: s.Adds - b.Adds, MaxDepth: s.MaxDepth, WaitMax: s.WaitMax,
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
