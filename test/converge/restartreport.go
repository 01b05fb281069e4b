package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// reportRestarts prints, for each loom phase, its restarts of the
// converged fleet (-restart): how long the new process took to be Ready,
// to reconcile every parent and to be idle, and what the API server saw
// meanwhile.
func reportRestarts(w io.Writer, o options, results []phaseResult) {
	if !o.restart {
		return
	}
	for _, r := range results {
		if r.kind != kindLoom || r.after == nil {
			continue
		}
		if len(r.restarts) == 0 {
			fmt.Fprintf(w, "\n%s: restart n/a (%s)\n", r.label, restartNA(r))
			continue
		}
		fmt.Fprintf(w, "\n%s: restarts of the converged fleet (%d parents): the same loom run again, same arguments, folder and ports;\n",
			r.label, r.restarts[0].parents)
		fmt.Fprintf(w, " idle = every parent reconciled, then no write and no reconcile for %s (-restart-settle)\n", o.restartSettle)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "signal\texit\tReady\tall reconciled\tidle\tchild writes\tstatus writes\tEvents\tAPI req/s idle before\twindow\tpeak\tLoom's applies\tCPU\tRSS (peak)\t")
		for _, x := range r.restarts {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%.0f\t%.1f\t%.1f\t%.1f\t%s\t%.1fs\t%s (%s)\t\n",
				x.signal, secs(x.stopped), x.readyText(), x.reconciledText(), x.idleText(),
				x.writes.Children, x.writes.Status, x.events, x.before, x.rate(), x.peak,
				changes(x.loom.Changes), x.cpu, mib(x.rss), mib(x.hwm))
		}
		tw.Flush()
		for _, x := range r.restarts {
			if x.stopErr != "" {
				fmt.Fprintf(w, "  %s: the old process: %s\n", x.signal, x.stopErr)
			}
			if x.loom.Parents > float64(x.parents) {
				fmt.Fprintf(w, "  %s: the new Loom held %.0f parents, the phase %d: others' on this cluster, whose writes the API server's counts include\n",
					x.signal, x.loom.Parents, x.parents)
			}
		}
		fmt.Fprintln(w, "(exit: from the signal to the old process's exit. Ready (/readyz 200), all reconciled (loom_reconcile_total ≥ parents)")
		fmt.Fprintln(w, " and idle: from the new process's start. Writes, Events and API requests (every verb, every client; peak: the largest")
		fmt.Fprintln(w, " one-second rate): the API server's, from the signal to idle. Loom's applies, CPU and RSS: the new process's, at idle.)")
	}
}

// restartNA says why a loom phase has no restarts.
func restartNA(r phaseResult) string {
	switch {
	case r.counted:
		return "Loom ran in this process, -loom-mode inprocess"
	case r.spec.sharded || r.spec.replicas > 1:
		return "sharded replicas: their takeovers are measured apart"
	}
	return "not measured"
}

// readyText is the time to Ready, or that it never was.
func (r restartResult) readyText() string {
	if !r.readyOK {
		return "never, in " + secs(r.ready)
	}
	return secs(r.ready)
}

// reconciledText is the time to every parent reconciled, or how many were.
func (r restartResult) reconciledText() string {
	if !r.complete {
		return fmt.Sprintf("%.0f of %d", r.loom.Reconciles, r.parents)
	}
	return secs(r.reconciled)
}

// idleText is the time to idle, or that it never was.
func (r restartResult) idleText() string {
	if !r.idleOK {
		return "never, in " + secs(r.idle)
	}
	return secs(r.idle)
}

// restartTargetRows are the restart's rows of the targets table: the
// child writes and the status writes after a restart (0), and the time to
// Ready (-target-restart-ready), each the worst of every restart of every
// loom phase. A run without restarts (-restart=false, or only phases
// that restart n/a: the Restart section says why) has none.
func restartTargetRows(o options, results []phaseResult) []targetRow {
	var all []restartResult
	for _, r := range phasesOf(results, kindLoom) {
		all = append(all, r.restarts...)
	}
	if len(all) == 0 {
		return nil
	}
	children := targetRow{what: "child writes after a restart", target: "0"}
	status := targetRow{what: "status writes after a restart", target: "0"}
	ready := targetRow{what: "Ready after a restart", target: "≤ " + seconds(o.targetRestartReady)}
	var cw, sw int64
	var slowest time.Duration
	allReady, allIdle := true, true
	var cParts, sParts, rParts []string
	for _, x := range all {
		cw, sw, slowest = max(cw, x.writes.Children), max(sw, x.writes.Status), max(slowest, x.ready)
		allReady, allIdle = allReady && x.readyOK, allIdle && x.idleOK
		cParts = append(cParts, fmt.Sprintf("%s %d", x.signal, x.writes.Children))
		sParts = append(sParts, fmt.Sprintf("%s %d", x.signal, x.writes.Status))
		rParts = append(rParts, fmt.Sprintf("%s %s", x.signal, x.readyText()))
	}
	notIdle := ""
	if !allIdle {
		notIdle = ", not idle within -restart-timeout"
	}
	children.measured = fmt.Sprintf("%d (%s%s)", cw, strings.Join(cParts, ", "), notIdle)
	children.verdict = verdict(float64(cw), 0)
	status.measured = fmt.Sprintf("%d (%s%s)", sw, strings.Join(sParts, ", "), notIdle)
	status.verdict = verdict(float64(sw), 0)
	ready.measured = fmt.Sprintf("%s (%s)", seconds(slowest), strings.Join(rParts, ", "))
	ready.verdict = verdict(slowest.Seconds(), o.targetRestartReady.Seconds())
	if !allReady {
		ready.verdict = "MISS"
	}
	return []targetRow{children, status, ready}
}

// seconds formats a duration as the targets table does: "10 s", "0.61 s".
func seconds(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", d.Seconds()), "0"), ".") + " s"
}
