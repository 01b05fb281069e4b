package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// reportTakeovers prints each sharded phase's takeovers: the times from
// the signal, against their targets, and the writes.
func reportTakeovers(w io.Writer, results []phaseResult) {
	for _, r := range results {
		if len(r.takeovers) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: takeovers (a replica stopped while every parent it held is edited, spec.replicas +1)\n", r.label)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "signal\treplica\tbuckets\tparents\tedited\tedits sent\texit\treleased\tclaimed\tedits landed\ttarget\t\tLoom wrote\tbeyond edited\tAPI: children+status\trejoin\tLoom wrote\tAPI: children+status\t")
		for _, t := range r.takeovers {
			landed := secs(t.took)
			if !t.complete {
				landed = fmt.Sprintf("%d of %d by %s", t.landed, t.edited, secs(t.took))
			}
			rejoin, rejoinApplied, rejoinWrites := "-", "-", "-"
			if t.rejoined {
				rejoin = secs(t.rejoin)
				rejoinApplied = fmt.Sprintf("%.0f", t.rejoinApplied)
				rejoinWrites = fmt.Sprintf("%d+%d", t.rejoinWrites.Children, t.rejoinWrites.Status)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t≤ %s\t%s\t%.0f\t%+.0f\t%d+%d\t%s\t%s\t%s\t\n", t.signal, t.replica, t.buckets, t.moved, t.edited,
				secs(t.sent), secs(t.exited), secs(t.released), secs(t.claimed), landed, secs(t.target), handoverVerdict(t), t.applied, t.extraApplied(),
				t.writes.Children, t.writes.Status, rejoin, rejoinApplied, rejoinWrites)
		}
		tw.Flush()
		fmt.Fprintln(w, "  (times from the signal: the last edit returned, the process ended, the table named it for none of its buckets,")
		fmt.Fprintln(w, "   the other replicas held them all, the last edited parent's Deployment carried the edit;")
		fmt.Fprintln(w, "   Loom wrote: the child applies that created or configured, from the replicas' loom_child_changes_total, from the signal to -settle after;")
		fmt.Fprintln(w, "   beyond edited: those less one Deployment write per edited parent, the writes for children already right: want 0;")
		fmt.Fprintln(w, "   API: the API server's writes to the children and the parents' status meanwhile, from every client;")
		fmt.Fprintln(w, "   rejoin: the replica started again until balanced, and the writes until -settle after: want 0)")
	}
}

func handoverVerdict(t takeover) string {
	if t.met() {
		return "PASS"
	}
	return "MISS"
}

// takeoverRows are the targets table's rows for the takeovers: the worst
// SIGTERM and SIGKILL handover against its bound, and the writes per
// takeover beyond the edited parents' Deployments (0).
func takeoverRows(results []phaseResult) []targetRow {
	var rows []targetRow
	for _, sig := range []string{"SIGTERM", "SIGKILL"} {
		var worst *takeover
		for _, r := range results {
			for i := range r.takeovers {
				t := &r.takeovers[i]
				if t.signal == sig && (worst == nil || !t.met() || t.took-t.target > worst.took-worst.target) {
					worst = t
				}
			}
		}
		if worst == nil {
			continue
		}
		measured := fmt.Sprintf("%s (%d parents edited)", secs(worst.took), worst.edited)
		if !worst.complete {
			measured = fmt.Sprintf("only %d of %d by %s", worst.landed, worst.edited, secs(worst.took))
		}
		rows = append(rows, targetRow{what: sig + " handover, from the signal", target: "≤ " + secs(worst.target),
			measured: measured, verdict: handoverVerdict(*worst)})
	}
	var extra, rejoin float64
	seen := false
	for _, r := range results {
		for _, t := range r.takeovers {
			seen = true
			extra = max(extra, t.extraApplied(), 0)
			rejoin = max(rejoin, t.rejoinApplied)
		}
	}
	if seen {
		rows = append(rows, targetRow{what: "child writes per takeover beyond the edited", target: "0",
			measured: fmt.Sprintf("%.0f (rejoin: %.0f)", extra, rejoin), verdict: verdict(max(extra, rejoin), 0)})
	}
	return rows
}
