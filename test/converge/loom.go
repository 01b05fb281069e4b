package main

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller"
	"github.com/loom-operator/loom/internal/testutil"
)

// loomRunner is Loom during a loom phase: in this process (loomRun) or in
// processes of its own (loomGroup: one, or sharded replicas).
type loomRunner interface {
	// stats reads Loom's own counters: every replica's added up.
	stats(ctx context.Context) (loomStats, error)
	// each reads each replica's counters, in replica order.
	each(ctx context.Context) ([]loomStats, error)
	// pids are Loom's process ids, in replica order; none when Loom runs
	// in this process.
	pids() []int
	// stop ends Loom and waits until it has drained.
	stop() error
	// tail is the end of Loom's log, for a failed phase ("" if none).
	tail() string
}

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

func (l *loomRun) pids() []int  { return nil }
func (l *loomRun) tail() string { return "" }

func (l *loomRun) each(ctx context.Context) ([]loomStats, error) {
	s, err := l.stats(ctx)
	return []loomStats{s}, err
}

func (l *loomRun) stats(context.Context) (loomStats, error) {
	mfs, err := l.registry.Gather()
	if err != nil {
		return loomStats{}, fmt.Errorf("gather Loom's metrics: %w", err)
	}
	m := testutil.Metrics{}
	for _, mf := range mfs {
		m[mf.GetName()] = mf
	}
	s := loomStatsFrom(m)
	s.Queue = queueMetricsFor("MyResource").snapshot()
	return s, nil
}

// loomStats are Loom's own counters at one moment.
type loomStats struct {
	Reconciles   float64
	StatusWrites float64
	// Changes are apply results by action (created, configured, unchanged).
	Changes map[string]float64
	// ReconcileSeconds is the total time spent in reconciles.
	ReconcileSeconds float64
	// HeapInuse is go_memstats_heap_inuse_bytes, when Loom exposes it
	// (HeapKnown).
	HeapInuse float64
	HeapKnown bool
	Queue     queueStats
	// Parents is loom_parents of MyResource, every state: the parents in
	// Loom's cache (a sharded replica's own).
	Parents float64
	// Buckets is loom_shard_buckets (of 64) and Moves is
	// loom_shard_moves_total (claimed, released, lapsed), when Loom runs
	// sharded (ShardKnown).
	Buckets, Moves float64
	ShardKnown     bool
}

// queueName is the workqueue of the MyResource controller: Kind.group.
const queueName = "MyResource.example.loom.dev"

// loomStatsFrom reads Loom's counters from its metrics: the loom_* ones,
// the Go runtime's heap in use, and client-go's workqueue_* ones when they
// are exposed (the depth's and the wait's maxima never are).
func loomStatsFrom(m testutil.Metrics) loomStats {
	s := loomStats{
		Reconciles:   m.Sum("loom_reconcile_total", nil),
		StatusWrites: m.Sum("loom_status_writes_total", nil),
		Changes:      map[string]float64{},
	}
	m.Each("loom_child_changes_total", func(labels map[string]string, v float64) { s.Changes[labels["action"]] += v })
	s.ReconcileSeconds, _ = histogram(m, "loom_reconcile_duration_seconds", nil)
	s.Parents = m.Sum("loom_parents", map[string]string{"kind": "MyResource"})
	if _, ok := m["loom_shard_buckets"]; ok {
		s.ShardKnown = true
		s.Buckets, s.Moves = m.Sum("loom_shard_buckets", nil), m.Sum("loom_shard_moves_total", nil)
	}
	if _, ok := m["go_memstats_heap_inuse_bytes"]; ok {
		s.HeapInuse, s.HeapKnown = m.Sum("go_memstats_heap_inuse_bytes", nil), true
	}
	if _, ok := m["workqueue_adds_total"]; ok {
		q := map[string]string{"name": queueName}
		s.Queue.Available = true
		s.Queue.Adds = int64(m.Sum("workqueue_adds_total", q))
		var n uint64
		s.Queue.WaitSum, n = histogram(m, "workqueue_queue_duration_seconds", q)
		s.Queue.WaitN = int64(n)
		s.Queue.WorkSum, n = histogram(m, "workqueue_work_duration_seconds", q)
		s.Queue.WorkN = int64(n)
	}
	return s
}

// histogram adds the sums and counts of a histogram's samples whose labels
// have every value in match.
func histogram(m testutil.Metrics, name string, match map[string]string) (sum float64, count uint64) {
	mf := m[name]
	if mf == nil {
		return 0, 0
	}
outer:
	for _, s := range mf.GetMetric() {
		for k, want := range match {
			found := false
			for _, lp := range s.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == want {
					found = true
				}
			}
			if !found {
				continue outer
			}
		}
		sum += s.GetHistogram().GetSampleSum()
		count += s.GetHistogram().GetSampleCount()
	}
	return sum, count
}

// sub returns what happened between snapshot b and s. The gauges (heap,
// parents, buckets) are s's.
func (s loomStats) sub(b loomStats) loomStats {
	out := loomStats{
		Reconciles: s.Reconciles - b.Reconciles, StatusWrites: s.StatusWrites - b.StatusWrites,
		ReconcileSeconds: s.ReconcileSeconds - b.ReconcileSeconds,
		HeapInuse:        s.HeapInuse, HeapKnown: s.HeapKnown,
		Changes: map[string]float64{}, Queue: s.Queue.sub(b.Queue),
		Parents: s.Parents, Buckets: s.Buckets, Moves: s.Moves - b.Moves, ShardKnown: s.ShardKnown,
	}
	for k, v := range s.Changes {
		out.Changes[k] = v - b.Changes[k]
	}
	return out
}

// add returns the counters of two replicas together; the heaps and the
// gauges add up too. Queue maxima are not kept: a scrape has none.
func (s loomStats) add(b loomStats) loomStats {
	out := loomStats{
		Reconciles: s.Reconciles + b.Reconciles, StatusWrites: s.StatusWrites + b.StatusWrites,
		ReconcileSeconds: s.ReconcileSeconds + b.ReconcileSeconds,
		HeapInuse:        s.HeapInuse + b.HeapInuse, HeapKnown: s.HeapKnown || b.HeapKnown,
		Changes: map[string]float64{}, Parents: s.Parents + b.Parents,
		Buckets: s.Buckets + b.Buckets, Moves: s.Moves + b.Moves, ShardKnown: s.ShardKnown || b.ShardKnown,
		Queue: queueStats{
			Available: s.Queue.Available || b.Queue.Available, Adds: s.Queue.Adds + b.Queue.Adds,
			WaitSum: s.Queue.WaitSum + b.Queue.WaitSum, WaitN: s.Queue.WaitN + b.Queue.WaitN,
			WorkSum: s.Queue.WorkSum + b.Queue.WorkSum, WorkN: s.Queue.WorkN + b.Queue.WorkN,
		},
	}
	for k, v := range s.Changes {
		out.Changes[k] += v
	}
	for k, v := range b.Changes {
		out.Changes[k] += v
	}
	return out
}
