package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// remoteCompare is what a run with children in two clusters compares:
// the remote phases against the loom phases of one unsharded Loom with
// the shipped set (each side the mean of its phases), at the run's
// finish line: t2, every parent Ready, or t1 on a bare cluster.
type remoteCompare struct {
	one, two remoteSide
	// at is "t2", or "t1" on a bare cluster.
	at string
}

// remoteSide is one side of the comparison: its phases' labels, their
// mean time to the finish line (seconds) and mean peak RSS (bytes; 0
// when Loom's memory was not measured).
type remoteSide struct {
	labels      []string
	secs, peak  float64
	peakMeasure int
}

func (s *remoteSide) add(r phaseResult, at string) {
	s.labels = append(s.labels, r.label)
	s.secs += finish(r, at).Seconds()
	if a := r.after; a != nil && a.mem {
		s.peak += float64(max(a.hwmTimed, a.hwmEnd))
		s.peakMeasure++
	}
}

func (s *remoteSide) mean() {
	s.secs /= float64(len(s.labels))
	if s.peakMeasure > 0 {
		s.peak /= float64(s.peakMeasure)
	}
}

// remoteCompareOf collects the comparison; ok is false unless the run
// has both a remote phase and a loom phase of one unsharded Loom.
func remoteCompareOf(o options, results []phaseResult) (c remoteCompare, ok bool) {
	c.at = "t2"
	if o.bare {
		c.at = "t1"
	}
	for _, r := range results {
		switch {
		case r.kind != kindLoom:
		case r.spec.remote:
			c.two.add(r, c.at)
		case !r.spec.sharded:
			c.one.add(r, c.at)
		}
	}
	if len(c.one.labels) == 0 || len(c.two.labels) == 0 {
		return c, false
	}
	c.one.mean()
	c.two.mean()
	return c, true
}

// finish is a phase's time to the finish line at: t2 or t1.
func finish(r phaseResult, at string) time.Duration {
	if at == "t1" {
		return r.timed.t1
	}
	return r.timed.t2
}

// finishName names the finish line at, for the report.
func finishName(at string) string {
	if at == "t1" {
		return "every status written (t1)"
	}
	return "time to Ready (t2)"
}

// reportRemote prints, for a run with remote phases, each remote and
// one-cluster loom phase's figures up to the finish line, to say where
// the time goes: Loom's CPU and reconciles, and the requests each
// cluster's API server served (every client, every verb; writes in
// brackets); then the ratios of two clusters to one.
func reportRemote(w io.Writer, o options, results []phaseResult) {
	if !hasRemote(o.phases) {
		return
	}
	at := "t2"
	if o.bare {
		at = "t1"
	}
	fmt.Fprintf(w, "\nchildren in two clusters (remote: each ConfigMap in the workload cluster) against one (loom), t0 to %s\n", at)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tparents\tt1\tt2\tpeak RSS\tLoom CPU\treconciles/parent\treconcile mean\tlocal API requests (writes)\tworkload API requests (writes)\t")
	for _, r := range results {
		if r.kind != kindLoom || (r.spec.sharded && !r.spec.remote) {
			continue
		}
		l := r.timed.at[at].loom
		peak := "n/a"
		if a := r.after; a != nil && a.mem {
			peak = mib(max(a.hwmTimed, a.hwmEnd))
		}
		local := r.timed.api[at]
		workload := "-"
		if r.spec.remote {
			wa := r.timed.remoteAPI[at]
			workload = fmt.Sprintf("%.0f (%.0f)", wa.all, wa.total())
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.1fs\t%.2f\t%s\t%.0f (%.0f)\t%s\t\n", r.label, r.timed.n,
			secs(r.timed.t1), orDash(o.bare, secs(r.timed.t2)), peak, r.timed.at[at].cpu.proc["loom"],
			l.Reconciles/float64(max(r.timed.n, 1)), ms(l.ReconcileSeconds, int64(l.Reconciles)), local.all, local.total(), workload)
	}
	tw.Flush()
	for _, r := range results {
		if r.spec.remote {
			fmt.Fprintf(w, "  %s: workload cluster writes by resource: %s\n", r.label, orNone(r.timed.remoteAPI[at].top(4)))
		}
	}
	fmt.Fprintln(w, "  (requests: apiserver_request_total of each API server, every client and verb, watches and the harness's reads")
	fmt.Fprintln(w, "   included; on a workload cluster no one else uses, the others there are the harness's reads of /metrics and the API server's own leases)")
	c, ok := remoteCompareOf(o, results)
	if !ok {
		fmt.Fprintln(w, "  no ratio: it needs a remote phase and a loom phase of one unsharded Loom")
		return
	}
	fmt.Fprintf(w, "  two clusters (%s) ÷ one (%s):\n", strings.Join(c.two.labels, ", "), strings.Join(c.one.labels, ", "))
	tr, rss := remoteRatios(o, c)
	fmt.Fprintf(w, "    %s: %s  %s (target ≤ %g)\n", finishName(c.at), tr.measured, tr.verdict, o.targetRemoteTime)
	fmt.Fprintf(w, "    peak RSS: %s  %s (target ≤ %g)\n", rss.measured, rss.verdict, o.targetRemoteRSS)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// remoteRatios are the two target rows of the comparison.
func remoteRatios(o options, c remoteCompare) (tr, rss targetRow) {
	r := c.two.secs / c.one.secs
	tr = targetRow{
		what:     finishName(c.at) + ", two clusters / one",
		target:   fmt.Sprintf("≤ %g", o.targetRemoteTime),
		measured: fmt.Sprintf("%.3f (%.2fs / %.2fs)", r, c.two.secs, c.one.secs),
		verdict:  verdict(r, o.targetRemoteTime),
	}
	rss = targetRow{what: "peak RSS, two clusters / one", target: fmt.Sprintf("≤ %g", o.targetRemoteRSS), measured: "n/a"}
	if c.one.peak > 0 && c.two.peak > 0 {
		r := c.two.peak / c.one.peak
		rss.measured = fmt.Sprintf("%.3f (%s / %s)", r, mib(int64(c.two.peak)), mib(int64(c.one.peak)))
		rss.verdict = verdict(r, o.targetRemoteRSS)
	}
	return tr, rss
}

// remoteTargetRows are the targets table's rows for children in two
// clusters against one; none unless the run has both.
func remoteTargetRows(o options, results []phaseResult) []targetRow {
	c, ok := remoteCompareOf(o, results)
	if !ok {
		return nil
	}
	tr, rss := remoteRatios(o, c)
	return []targetRow{tr, rss}
}
