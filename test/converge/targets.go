package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// targetRow is one line of the targets table. verdict is PASS, MISS, or
// empty when there is no target or nothing was measured.
type targetRow struct {
	what, target, measured, verdict string
}

// verdict is PASS when measured is at most limit, MISS otherwise.
func verdict(measured, limit float64) string {
	if measured <= limit {
		return "PASS"
	}
	return "MISS"
}

// targetRows are the targets a run is held to, with what it measured:
// Loom's peak and steady memory (in its own process), its times against
// the baseline's (t1 and, with a controller-manager, t2), and the writes
// of a full re-reconcile of a converged fleet. Missing one is reported,
// not an error.
func targetRows(o options, results []phaseResult) []targetRow {
	var rows []targetRow
	loom := phasesOf(results, kindLoom)
	rss := targetRow{what: "peak RSS (VmHWM)", target: fmt.Sprintf("≤ %g MiB", o.targetRSS), measured: "n/a"}
	steady := targetRow{what: "steady RSS", target: "-", measured: "n/a"}
	heap := targetRow{what: "heap in use (steady)", target: "-", measured: "n/a"}
	cpu := targetRow{what: "Loom CPU, timed round", target: "-", measured: "n/a"}
	var peak, steadyMax int64
	var heapMax float64
	heapKnown, idle := false, true
	var cpuMax float64
	for _, r := range loom {
		a := r.after
		if a == nil || !a.mem {
			continue
		}
		peak, steadyMax = max(peak, a.hwmTimed, a.hwmEnd), max(steadyMax, a.steady.RSS)
		heapMax, heapKnown, idle = max(heapMax, a.heap), heapKnown || a.heapKnown, idle && a.idle
		cpuMax = max(cpuMax, r.timed.at["end"].cpu.proc["loom"])
	}
	if peak > 0 {
		rss.measured, rss.verdict = mib(peak), verdict(float64(peak)/(1<<20), o.targetRSS)
		steady.measured = mib(steadyMax)
		if !idle {
			steady.measured += " (never idle)"
		}
		heap.measured = heapMiB(heapMax, heapKnown)
		cpu.measured = fmt.Sprintf("%.1f s", cpuMax)
	} else if len(loom) > 0 {
		rss.measured = "n/a (Loom ran in this process)"
	}
	rows = append(rows, rss, steady, heap, cpu)

	t1 := targetRow{what: "all children exist ÷ floor (t1)", target: fmt.Sprintf("≤ %g", o.target), measured: "n/a"}
	t2 := targetRow{what: "all Ready ÷ floor (t2)", target: fmt.Sprintf("≤ %g", o.targetReady), measured: "n/a"}
	if o.bare {
		t1.what = "all status written ÷ floor (t1)"
	}
	base, _ := pick(o, results, kindBase)
	clean, _ := pick(o, results, kindLoom)
	if len(base) > 0 && len(clean) > 0 {
		ratio := func(f func(phaseResult) time.Duration) float64 { return meanOf(clean, f) / meanOf(base, f) }
		r1 := ratio(func(r phaseResult) time.Duration { return r.timed.t1 })
		t1.measured, t1.verdict = fmt.Sprintf("%.3f", r1), verdict(r1, o.target)
		r2 := ratio(func(r phaseResult) time.Duration { return r.timed.t2 })
		t2.measured, t2.verdict = fmt.Sprintf("%.3f", r2), verdict(r2, o.targetReady)
	}
	rows = append(rows, t1)
	if !o.bare {
		rows = append(rows, t2)
	}

	writes := targetRow{what: "writes on a full re-reconcile", target: "0", measured: "n/a"}
	var worst *touchResult
	for _, r := range loom {
		if r.after == nil {
			continue
		}
		t := &r.after.touch
		if worst == nil || t.writes.Children+t.writes.Status > worst.writes.Children+worst.writes.Status {
			worst = t
		}
	}
	if worst != nil {
		n := worst.writes.Children + worst.writes.Status
		writes.measured = fmt.Sprintf("%d (children %d, status %d)", n, worst.writes.Children, worst.writes.Status)
		writes.verdict = verdict(float64(n), 0)
		if !worst.complete {
			writes.measured += fmt.Sprintf(", only %.0f of %d reconciled", worst.reconciles, worst.parents)
		}
	}
	rows = append(rows, writes)
	rows = append(rows, restartTargetRows(o, results)...)
	if shard, ok := shardTargetRow(o, results); ok {
		rows = append(rows, shard)
	}
	rows = append(rows, remoteTargetRows(o, results)...)
	return append(rows, takeoverRows(results)...)
}

// phasesOf returns the phases of a kind.
func phasesOf(results []phaseResult, kind string) []phaseResult {
	var out []phaseResult
	for _, r := range results {
		if r.kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// writeTargets prints the targets table.
func writeTargets(w io.Writer, rows []targetRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "what\ttarget\tmeasured\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.what, r.target, r.measured, r.verdict)
	}
	tw.Flush()
}
