package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/loom-operator/loom/internal/procmem"
)

// reportPhases lists each phase's parents and Loom processes, when a
// -phases entry set its own (loom/3@30000) or a loom phase runs replicas.
func reportPhases(w io.Writer, o options) {
	custom := false
	for _, s := range o.phases {
		custom = custom || s.parents != o.parents || s.replicas > 1 || s.sharded || s.remote
	}
	if !custom {
		return
	}
	parts := make([]string, len(o.phases))
	for i, s := range o.phases {
		parts[i] = fmt.Sprintf("%s: %d parents", s.text, s.parents)
		switch {
		case s.sharded:
			parts[i] += fmt.Sprintf(", %d replicas of loom run --sharded, each on its own ports", s.replicas)
		case s.kind == kindLoom:
			parts[i] += ", one loom run"
		}
		if s.remote {
			parts[i] += ", each parent's ConfigMap in the workload cluster"
		}
	}
	fmt.Fprintf(w, "phases: %s\n", strings.Join(parts, "; "))
}

// reportReplicas prints, for each phase that ran several Loom processes,
// how they shared the buckets and each one's memory, parents and CPU, with
// their largest and their sum.
func reportReplicas(w io.Writer, results []phaseResult) {
	for _, r := range results {
		a := r.after
		if a == nil || !a.mem || (len(a.replicas) < 2 && !r.spec.sharded) {
			continue
		}
		fmt.Fprintf(w, "\n%s: %d replicas of loom run --sharded; %s\n", r.label, len(a.replicas), shardState(r))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "replica\tpid\tbuckets\tparents\tpeak RSS (VmHWM)\tsteady RSS\theap in use\tCPU to steady\t")
		var top, sum replicaMemory
		for i, m := range a.replicas {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%.0f\t%s\t%s\t%s\t%.1fs\t\n", i+1, m.pid, buckets(m), m.parents,
				mib(m.peak()), mib(m.steady.RSS), heapMiB(m.heap, m.heapKnown), m.cpu)
			top = replicaMemory{
				hwmTimed: max(top.peak(), m.peak()), steady: maxRSS(top.steady, m.steady),
				heap: max(top.heap, m.heap), heapKnown: top.heapKnown || m.heapKnown,
				parents: max(top.parents, m.parents), buckets: max(top.buckets, m.buckets),
				shardKnown: top.shardKnown || m.shardKnown, cpu: max(top.cpu, m.cpu),
			}
			sum.hwmTimed += m.peak()
			sum.steady.RSS += m.steady.RSS
			sum.heap, sum.heapKnown = sum.heap+m.heap, sum.heapKnown || m.heapKnown
			sum.parents, sum.buckets, sum.shardKnown = sum.parents+m.parents, sum.buckets+m.buckets, sum.shardKnown || m.shardKnown
			sum.cpu += m.cpu
		}
		for _, row := range []struct {
			name string
			m    replicaMemory
		}{{"max", top}, {"sum", sum}} {
			fmt.Fprintf(tw, "%s\t\t%s\t%.0f\t%s\t%s\t%s\t%.1fs\t\n", row.name, buckets(row.m), row.m.parents,
				mib(row.m.peak()), mib(row.m.steady.RSS), heapMiB(row.m.heap, row.m.heapKnown), row.m.cpu)
		}
		tw.Flush()
		want := float64(r.timed.n + r.warm.n)
		note := ""
		if sum.parents != want {
			note = " !: a parent held by two replicas, or by none"
		}
		fmt.Fprintf(w, "  (parents: loom_parents of each replica at the steady sample; together %.0f of the %.0f created, warm-up included%s)\n", sum.parents, want, note)
	}
}

// shardState says how a sharded phase's replicas came to share the
// buckets before its warm-up, and whether they kept them through the
// timed round.
func shardState(r phaseResult) string {
	b := r.balance
	if len(b.buckets) == 0 {
		return "no balance was waited for"
	}
	s := fmt.Sprintf("balanced %s after the last one served its metrics (buckets %s)", secs(b.took), bucketList(b.buckets))
	t1, end := r.timed.at["t1"].loom, r.timed.at["end"].loom
	if t1.ShardKnown && end.ShardKnown {
		s += fmt.Sprintf("; they held %.0f of %d buckets at t1 and %.0f at the end of the timed round, with %.0f bucket moves t0..end",
			t1.Buckets, shardBuckets, end.Buckets, end.Moves)
	}
	return s
}

func buckets(m replicaMemory) string {
	if !m.shardKnown {
		return "-"
	}
	return fmt.Sprintf("%.0f", m.buckets)
}

func maxRSS(a, b procmem.Status) procmem.Status {
	if b.RSS > a.RSS {
		return b
	}
	return a
}

// shardPeaks are the peaks a run compares: the mean peak RSS of its
// phases of one unsharded Loom process (one), and each sharded replica's.
type shardPeaks struct {
	one       float64
	oneLabels []string
	// oneT1 is their mean t1, in seconds; oneParents their mean parents
	// held (loom_parents).
	oneT1, oneParents float64
	replicas          []replicaPeak
}

// replicaPeak is one sharded replica's peak RSS.
type replicaPeak struct {
	label   string
	replica int
	peak    float64
	parents float64
}

func (p replicaPeak) ratio(one float64) float64 { return p.peak / one }

// shardPeaksOf collects the peaks; ok is false unless the run has both an
// unsharded one-process loom phase and a sharded one, measured in process
// mode.
func shardPeaksOf(results []phaseResult) (p shardPeaks, ok bool) {
	var ones int
	for _, r := range results {
		a := r.after
		if r.kind != kindLoom || r.spec.remote || a == nil || !a.mem {
			continue
		}
		if !r.spec.sharded && len(a.replicas) == 1 {
			p.one += float64(a.replicas[0].peak())
			p.oneT1 += r.timed.t1.Seconds()
			p.oneParents += a.replicas[0].parents
			p.oneLabels = append(p.oneLabels, r.label)
			ones++
			continue
		}
		if !r.spec.sharded {
			continue
		}
		for i, m := range a.replicas {
			p.replicas = append(p.replicas, replicaPeak{label: r.label, replica: i + 1, peak: float64(m.peak()), parents: m.parents})
		}
	}
	if ones == 0 || len(p.replicas) == 0 {
		return p, false
	}
	p.one, p.oneT1, p.oneParents = p.one/float64(ones), p.oneT1/float64(ones), p.oneParents/float64(ones)
	return p, true
}

// reportShardRatio compares each sharded replica's peak RSS with one
// unsharded Loom's, and each sharded phase's t1 with its.
func reportShardRatio(w io.Writer, o options, results []phaseResult) {
	p, ok := shardPeaksOf(results)
	if !ok {
		return
	}
	fmt.Fprintf(w, "\npeak RSS of each sharded replica ÷ one unsharded Loom's (%s: %s with %.0f parents, t1 %.2fs); target ≤ %g\n",
		strings.Join(p.oneLabels, ", "), mib(int64(p.one)), p.oneParents, p.oneT1, o.targetShardRSS)
	for _, rp := range p.replicas {
		fmt.Fprintf(w, "  %-14s replica %d: %s (%.0f parents) ÷ %s = %.3f  %s\n", rp.label, rp.replica,
			mib(int64(rp.peak)), rp.parents, mib(int64(p.one)), rp.ratio(p.one), verdict(rp.ratio(p.one), o.targetShardRSS))
	}
	for _, r := range results {
		if r.spec.sharded && r.after != nil {
			fmt.Fprintf(w, "  %-14s t1 %s for %d parents (%.3f × one Loom's t1)\n", r.label, secs(r.timed.t1), r.timed.n, r.timed.t1.Seconds()/p.oneT1)
		}
	}
}

// shardTargetRow is the targets table's row for the sharded replicas'
// peak RSS against one unsharded Loom's; none unless the run has both.
func shardTargetRow(o options, results []phaseResult) (targetRow, bool) {
	p, ok := shardPeaksOf(results)
	if !ok {
		return targetRow{}, false
	}
	worst := p.replicas[0]
	for _, rp := range p.replicas[1:] {
		if rp.peak > worst.peak {
			worst = rp
		}
	}
	return targetRow{
		what:   "peak RSS, each sharded replica ÷ one Loom",
		target: fmt.Sprintf("≤ %g", o.targetShardRSS),
		measured: fmt.Sprintf("%.3f (%s replica %d: %s ÷ %s)", worst.ratio(p.one), worst.label, worst.replica,
			mib(int64(worst.peak)), mib(int64(p.one))),
		verdict: verdict(worst.ratio(p.one), o.targetShardRSS),
	}, true
}
