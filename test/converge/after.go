package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loom-operator/loom/internal/procmem"
)

// touchLine is what the re-reconcile appends to a template: a comment,
// which changes the file (so Loom reloads the set and reconciles every
// parent) but not what it renders.
const touchLine = "{{/* bench touch */}}\n"

// loomAfter is what a loom phase measures once its fleet has converged.
type loomAfter struct {
	// mem: Loom runs in its own processes, whose memory was read.
	mem bool
	// The memory figures of Loom's process, or with replicas the largest
	// of theirs (replicas has each one's):
	// hwmTimed is VmHWM at the end of the timed round (after -settle);
	// hwmEnd at the end of the phase, after the re-reconcile and its
	// settle. maxSampled is the largest VmRSS of the 250 ms samples.
	hwmTimed, hwmEnd, maxSampled int64
	samples                      int
	// steady is Loom's memory once it had reconciled nothing for -steady
	// (idle), or when waiting for that gave up; heap is its heap in use
	// then, if Loom exposes it (heapKnown).
	steady    procmem.Status
	heap      float64
	heapKnown bool
	// replicas are each process's figures, in replica order.
	replicas []replicaMemory
	idle     bool
	// waited is how long it took to become idle (or to give up).
	waited time.Duration
	touch  touchResult
}

// replicaMemory is what one Loom process measured once the fleet had
// converged: its memory as loomAfter's, and from its metrics at the steady
// sample, the parents it holds and its shard buckets; cpu is its CPU
// seconds from its start to then.
type replicaMemory struct {
	pid                          int
	hwmTimed, hwmEnd, maxSampled int64
	samples                      int
	steady                       procmem.Status
	heap                         float64
	heapKnown                    bool
	parents, buckets             float64
	shardKnown                   bool
	cpu                          float64
}

// peak is the process's peak RSS over the phase.
func (r replicaMemory) peak() int64 { return max(r.hwmTimed, r.hwmEnd) }

// summarize sets a's memory figures to the largest of its replicas'.
func (a *loomAfter) summarize() {
	var top replicaMemory
	for i, r := range a.replicas {
		a.hwmTimed, a.hwmEnd, a.maxSampled = max(a.hwmTimed, r.hwmTimed), max(a.hwmEnd, r.hwmEnd), max(a.maxSampled, r.maxSampled)
		a.samples = max(a.samples, r.samples)
		a.heap, a.heapKnown = max(a.heap, r.heap), a.heapKnown || r.heapKnown
		if i == 0 || r.steady.RSS > top.steady.RSS {
			top = r
		}
	}
	a.steady = top.steady
}

// touchResult is a full re-reconcile of a converged fleet.
type touchResult struct {
	// file is the template touched, under Loom's templates folder.
	file string
	// parents is how many parents there are; reconciles how many
	// reconciles Loom made after the touch, complete whether they reached
	// parents within -touch-timeout, and took how long that took.
	parents    int
	reconciles float64
	complete   bool
	took       time.Duration
	// writes are the API server's writes to the children and to the
	// parents' status from the touch to the end of the settle after it;
	// events are the Events every client wrote then.
	writes requests
	events float64
	// loom are Loom's own counters over the same window; cpu its CPU
	// seconds (process mode).
	loom loomStats
	cpu  float64
}

// afterConvergence measures a converged fleet: Loom's peak memory so far,
// its memory once idle, then the writes of a full re-reconcile.
func (p *phase) afterConvergence(ctx context.Context) (*loomAfter, error) {
	a := &loomAfter{}
	pids := p.loom.pids()
	a.mem = len(pids) > 0
	for _, pid := range pids {
		m, err := procmem.Read(pid)
		if err != nil {
			return a, fmt.Errorf("loom's memory: %w", err)
		}
		a.replicas = append(a.replicas, replicaMemory{pid: pid, hwmTimed: m.HWM})
	}

	// 1. Steady: Loom has reconciled nothing for -steady.
	start := time.Now()
	_, idle, err := p.waitIdle(ctx, p.opts.steady, max(5*time.Minute, 4*p.opts.steady))
	if err != nil {
		return a, err
	}
	a.idle, a.waited = idle, time.Since(start)
	if a.mem {
		if err := p.readSteady(ctx, a.replicas); err != nil {
			return a, err
		}
		a.summarize()
		logf("%s: steady after %s (idle %v): RSS %s, heap in use %s%s", p.label, secs(a.waited), idle, mib(a.steady.RSS), heapMiB(a.heap, a.heapKnown), ofReplicas(len(pids)))
	}

	// 2. A full re-reconcile.
	if a.touch, err = p.touch(ctx); err != nil {
		return a, err
	}

	// 3. The peak over the whole phase.
	for i := range a.replicas {
		r := &a.replicas[i]
		m, err := procmem.Read(r.pid)
		if err != nil {
			return a, fmt.Errorf("loom's memory: %w", err)
		}
		r.hwmEnd = m.HWM
		r.maxSampled, r.samples = p.mems[i].finish()
	}
	a.summarize()
	return a, nil
}

// readSteady reads each replica's steady memory, CPU so far, and its heap,
// parents and buckets from its metrics.
func (p *phase) readSteady(ctx context.Context, replicas []replicaMemory) error {
	each, err := p.loom.each(ctx)
	if err != nil {
		return err
	}
	for i := range replicas {
		r := &replicas[i]
		if r.steady, err = procmem.Read(r.pid); err != nil {
			return fmt.Errorf("loom's memory: %w", err)
		}
		r.cpu, _ = processCPU(r.pid)
		s := each[i]
		r.heap, r.heapKnown, r.parents = s.HeapInuse, s.HeapKnown, s.Parents
		r.buckets, r.shardKnown = s.Buckets, s.ShardKnown
	}
	return nil
}

// ofReplicas says, after a figure, that it is the largest of n replicas'.
func ofReplicas(n int) string {
	if n < 2 {
		return ""
	}
	return fmt.Sprintf(" (the largest of %d replicas')", n)
}

// waitIdle waits until Loom's reconcile count has not moved for quiet, or
// until limit has passed (idle false). It returns Loom's counters then.
func (p *phase) waitIdle(ctx context.Context, quiet, limit time.Duration) (loomStats, bool, error) {
	start := time.Now()
	last, since := -1.0, start
	for {
		s, err := p.loom.stats(ctx)
		if err != nil {
			return s, false, err
		}
		now := time.Now()
		if s.Reconciles != last {
			last, since = s.Reconciles, now
		}
		if now.Sub(since) >= quiet {
			return s, true, nil
		}
		if now.Sub(start) >= limit {
			logf("%s: Loom still reconciling after %s; reading its steady memory anyway", p.label, limit)
			return s, false, nil
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return s, false, err
		}
	}
}

// touch appends a comment to one child template of the MyResource set in
// Loom's copy of the templates, waits until Loom has reconciled at least
// as many parents as there are (up to -touch-timeout), lets -settle pass,
// and counts the writes the API server saw in that window. Nothing a
// parent renders changed, so there should be none.
func (p *phase) touch(ctx context.Context) (touchResult, error) {
	rel, err := filepath.Rel(p.loomTemplates, p.loomSet.Dir)
	if err != nil {
		return touchResult{}, fmt.Errorf("locate the set %s under %s: %w", p.loomSet.Dir, p.loomTemplates, err)
	}
	rel = filepath.Join(rel, p.loomSet.Files()[0])
	t := touchResult{file: rel, parents: p.spec.parents + 1}
	before, err := p.loom.stats(ctx)
	if err != nil {
		return t, err
	}
	api0, remote0, cpu0 := p.scrape(ctx), p.scrapeWorkload(ctx), p.cpu.sample()
	if err := appendTouch(filepath.Join(p.loomDir, "templates", rel)); err != nil {
		return t, err
	}
	start := time.Now()
	for {
		s, err := p.loom.stats(ctx)
		if err != nil {
			return t, err
		}
		t.reconciles = s.Reconciles - before.Reconciles
		if t.reconciles >= float64(t.parents) {
			t.complete = true
			break
		}
		if time.Since(start) >= p.opts.touchTimeout {
			logf("%s: only %.0f of %d parents reconciled within %s of the template touch", p.label, t.reconciles, t.parents, p.opts.touchTimeout)
			break
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return t, err
		}
	}
	t.took = time.Since(start)
	if err := sleep(ctx, p.opts.settle); err != nil {
		return t, err
	}
	after, err := p.loom.stats(ctx)
	if err != nil {
		return t, err
	}
	api := p.scrape(ctx).sub(api0)
	t.loom = after.sub(before)
	t.writes = writerRequestsIn(api, p.scrapeWorkload(ctx).sub(remote0), false)
	t.events = api.byResource["events"]
	t.cpu = p.cpu.sample().sub(cpu0).proc["loom"]
	logf("%s: re-reconcile of %d parents after touching %s: %.0f reconciles in %s; writes: children %d, status %d (events, all clients: %.0f)",
		p.label, t.parents, rel, t.reconciles, secs(t.took), t.writes.Children, t.writes.Status, t.events)
	return t, nil
}

// appendTouch appends touchLine to a template, on a line of its own.
func appendTouch(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("touch template: %w", err)
	}
	line := touchLine
	if len(b) > 0 && !strings.HasSuffix(string(b), "\n") {
		line = "\n" + line
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("touch template: %w", err)
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return fmt.Errorf("touch template %s: %w", path, err)
	}
	return f.Close()
}

// sleep waits for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(d):
		return nil
	}
}

// mib formats bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// heapMiB formats the heap in use, or n/a when Loom does not expose it.
func heapMiB(b float64, known bool) string {
	if !known {
		return "n/a"
	}
	return mib(int64(b))
}
