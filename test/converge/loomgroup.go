package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// shardBuckets is how many buckets the parents' UIDs fall into; a sharded
// group's replicas hold them between them.
const shardBuckets = 64

// loomGroup is a process-mode loom phase's `loom run` processes: one, as
// users run it, or several replicas with --sharded, each listening on
// ports of its own, all in one working folder (one templates/, so that a
// touch reaches every replica; a log each).
type loomGroup struct {
	procs []*loomProc
}

// startLoomGroup starts the phase's replicas in dir, one after the other,
// each waited for until it serves its metrics. If one fails, those
// already started are stopped.
func startLoomGroup(ctx context.Context, o options, dir string, spec phaseSpec) (*loomGroup, error) {
	g := &loomGroup{}
	for i := range spec.replicas {
		logName := "loom.log"
		if spec.replicas > 1 {
			logName = fmt.Sprintf("loom-%d.log", i+1)
		}
		l, err := startLoomProcess(ctx, o, dir, replicaArgs(o.loomArgs, i, spec.sharded), shiftPort(o.metricsAddr, i), logName)
		if err != nil {
			if spec.replicas > 1 {
				err = fmt.Errorf("replica %d of %d: %w", i+1, spec.replicas, err)
			}
			return nil, errors.Join(err, g.stop())
		}
		g.procs = append(g.procs, l)
	}
	return g, nil
}

// stats adds up every replica's counters.
func (g *loomGroup) stats(ctx context.Context) (loomStats, error) {
	each, err := g.each(ctx)
	if err != nil {
		return loomStats{}, err
	}
	sum := loomStats{Changes: map[string]float64{}}
	for _, s := range each {
		sum = sum.add(s)
	}
	return sum, nil
}

func (g *loomGroup) each(ctx context.Context) ([]loomStats, error) {
	out := make([]loomStats, len(g.procs))
	for i, l := range g.procs {
		s, err := l.stats(ctx)
		if err != nil {
			return nil, g.name(i, err)
		}
		out[i] = s
	}
	return out, nil
}

func (g *loomGroup) pids() []int {
	out := make([]int, len(g.procs))
	for i, l := range g.procs {
		out[i] = l.pid()
	}
	return out
}

// running is whether every replica is still running: a phase that ends
// does not wait for work from one that has exited.
func (g *loomGroup) running() bool {
	for _, l := range g.procs {
		if done, _ := l.proc.Exited(); done {
			return false
		}
	}
	return true
}

// stop stops every replica at once: one by one, those left would take
// over the buckets of each that exits.
func (g *loomGroup) stop() error {
	errs := make([]error, len(g.procs))
	var wg sync.WaitGroup
	for i, l := range g.procs {
		wg.Go(func() { errs[i] = g.name(i, l.stop()) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// tail is the end of each replica's log.
func (g *loomGroup) tail() string {
	if len(g.procs) == 1 {
		return g.procs[0].tail()
	}
	var b strings.Builder
	for i, l := range g.procs {
		fmt.Fprintf(&b, "--- replica %d (pid %d, %s):\n%s\n", i+1, l.pid(), l.log, l.tail())
	}
	return b.String()
}

// name prefixes err with the replica it came from when there are several.
func (g *loomGroup) name(i int, err error) error {
	if err == nil || len(g.procs) < 2 {
		return err
	}
	return fmt.Errorf("replica %d (pid %d): %w", i+1, g.procs[i].pid(), err)
}

// balanced is whether replicas holding these buckets hold all 64 between
// them, each within one of the others: what every replica's quota comes
// to once they all see each other. Their sum alone reaches 64 as soon as
// the first replica to start has claimed every bucket.
func balanced(buckets []float64) bool {
	if len(buckets) == 0 {
		return false
	}
	sum := 0.0
	for _, b := range buckets {
		sum += b
	}
	return sum == shardBuckets && slices.Max(buckets)-slices.Min(buckets) <= 1
}

// bucketList formats each replica's buckets: 22+21+21.
func bucketList(buckets []float64) string {
	parts := make([]string, len(buckets))
	for i, b := range buckets {
		parts[i] = fmt.Sprintf("%.0f", b)
	}
	return strings.Join(parts, "+")
}

// balance is how a sharded phase's replicas came to share the buckets.
type balance struct {
	// took is from the last replica serving its metrics to balanced.
	took time.Duration
	// buckets are each replica's then.
	buckets []float64
}

// waitBalanced waits up to limit until the replicas are balanced.
func waitBalanced(ctx context.Context, l loomRunner, limit time.Duration) (balance, error) {
	start := time.Now()
	var buckets []float64
	for {
		each, err := l.each(ctx)
		if err != nil {
			return balance{}, err
		}
		buckets = buckets[:0]
		for i, s := range each {
			if !s.ShardKnown {
				return balance{}, fmt.Errorf("replica %d serves no loom_shard_buckets: is bin/loom run --sharded built in?", i+1)
			}
			buckets = append(buckets, s.Buckets)
		}
		if balanced(buckets) {
			return balance{took: time.Since(start), buckets: buckets}, nil
		}
		if time.Since(start) >= limit {
			return balance{}, fmt.Errorf("the %d replicas did not balance within %s (-balance-timeout): they hold %s of %d buckets; want all of them, each replica within one of the others",
				len(each), limit, bucketList(buckets), shardBuckets)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return balance{}, err
		}
	}
}

// ensureNamespace creates a namespace unless it exists: the sharded
// replicas' Leases live in --shard-namespace, which a bare cluster lacks.
// It is left in place afterwards, like the CRD.
func (b *bench) ensureNamespace(ctx context.Context, name string) error {
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	}}
	_, err := b.client.Resource(namespaceGVR).Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s for the shard Leases: %w", name, err)
	}
	return nil
}
