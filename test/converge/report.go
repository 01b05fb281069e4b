package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// report prints what the phases measured.
func report(w io.Writer, o options, results []phaseResult, idle *idleResult, now time.Time) {
	fmt.Fprintf(w, "\n%s\n", machine(now))
	fmt.Fprintf(w, "converge: %s, copies of %s with replicas %d (ConfigMap + Deployment + Service each)\n",
		parentsPerPhase(o), o.example, o.replicas)
	fmt.Fprintf(w, "baseline and creator: %d goroutines each; their QPS %.0f, burst %d\n", o.workers, o.qps, o.burst)
	if o.loomMode == modeProcess {
		fmt.Fprintf(w, "loom: %s in its own process: its default flags (all namespaces, its own --workers and --kube-api-qps)\n",
			strings.Join(append([]string{o.loomBin, "run"}, o.loomArgs...), " "))
	} else {
		fmt.Fprintf(w, "loom: in this process, Options.Workers %d, the namespace only, QPS %.0f, burst %d\n", o.workers, o.qps, o.burst)
	}
	reportPhases(w, o)
	fmt.Fprintf(w, "t1: every parent has observedGeneration = generation and 3 status.children (applied + status written)\n")
	if o.bare {
		fmt.Fprintf(w, "t2: not measured: a bare cluster (etcd + kube-apiserver) runs no Deployment\n\n")
	} else {
		fmt.Fprintf(w, "t2: loom: every parent Ready=True; base: every Deployment available (kstatus Current)\n\n")
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tt1\tt2\tall created\twrites/parent by t1\tby t2\tby end\t(children+status+events)\tcold t1\tcold t2\tnoise\t")
	for _, r := range results {
		t := r.timed
		end := r.writes("end")
		flag := ""
		if r.noisy(o) {
			flag = " !"
		}
		events := perParent(end.Events, t.n)
		if !r.counted && !r.bare {
			events = "?"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f%%%s\t\n", r.label, secs(t.t1), orDash(r.bare, secs(t.t2)), secs(t.created),
			perParent(r.writes("t1").Writes(), t.n), orDash(r.bare, perParent(r.writes("t2").Writes(), t.n)), perParent(end.Writes(), t.n),
			fmt.Sprintf("%s+%s+%s", perParent(end.Children, t.n), perParent(end.Status, t.n), events),
			secs(r.warm.t1), orDash(r.bare, secs(r.warm.t2)), 100*r.noise(), flag)
	}
	tw.Flush()
	if o.loomMode == modeProcess && !o.bare {
		fmt.Fprintln(w, "(Loom's writes in its own process are the API server's writes to the children and the parents' status; its user agent is in")
		fmt.Fprintln(w, " no API server metric, and ? marks Events, which the controller-manager writes too.)")
	}
	fmt.Fprintln(w, "(cold: the one-parent warm-up round before the timed one; it starts Loom's informers.")
	fmt.Fprintln(w, " noise: share of the machine's busy CPU, t0 to end, used by processes other than the cluster's and this one;")
	fmt.Fprintf(w, " ! marks a phase over -noise-limit %.0f%%: someone else's work competed for the CPUs, and its times are left out of the ratios.)\n", 100*o.noiseLimit)

	reportRatios(w, o, results)
	reportHeap(w, results)
	reportMemory(w, o, results)
	reportIdle(w, idle)
	reportReplicas(w, results)
	reportShardRatio(w, o, results)
	reportTakeovers(w, results)
	reportRemote(w, o, results)
	reportLatency(w, results)
	reportCPU(w, results)
	reportAPI(w, results)
	reportLoom(w, results)
	reportTouch(w, results)
	reportRestarts(w, o, results)
	fmt.Fprintln(w)
	rows := targetRows(o, results)
	if o.loomMode == modeProcess && o.idle > 0 {
		rows = append(rows, idleTargetRow(o, idle))
	}
	writeTargets(w, rows)
}

// orDash is s, or "-" for a figure a bare cluster does not measure.
func orDash(bare bool, s string) string {
	if bare {
		return "-"
	}
	return s
}

func perParent(n int64, parents int) string { return fmt.Sprintf("%.2f", float64(n)/float64(parents)) }

// reportRatios compares each loom phase, and their mean, with the mean of
// the base phases. Noisy phases are left out when clean ones are left.
func reportRatios(w io.Writer, o options, results []phaseResult) {
	base, baseLabels := pick(o, results, kindBase)
	loom, loomLabels := pick(o, results, kindLoom)
	if len(base) == 0 || len(loom) == 0 {
		fmt.Fprintln(w, "\nno ratio: it needs a base and a loom phase")
		return
	}
	if loom[0].noisy(o) || base[0].noisy(o) {
		fmt.Fprintln(w, "\nevery loom or every base phase was noisy (!): the ratios below compare times that others' work inflated; rerun on a quiet machine")
	}
	b1, b2 := meanOf(base, func(r phaseResult) time.Duration { return r.timed.t1 }), meanOf(base, func(r phaseResult) time.Duration { return r.timed.t2 })
	times := fmt.Sprintf("t1 %.2fs, t2 %.2fs", b1, b2)
	if o.bare {
		times = fmt.Sprintf("t1 %.2fs", b1)
	}
	fmt.Fprintf(w, "\nratio Loom/baseline; baseline = mean of %s (%s); [vs the fastest baseline]\n",
		strings.Join(baseLabels, ", "), times)
	fast1 := slices.MinFunc(base, func(a, b phaseResult) int { return int(a.timed.t1 - b.timed.t1) }).timed.t1.Seconds()
	fast2 := slices.MinFunc(base, func(a, b phaseResult) int { return int(a.timed.t2 - b.timed.t2) }).timed.t2.Seconds()
	line := func(label, name string, l, b, fast, target float64, what string) {
		if o.bare && name == "t2" {
			return
		}
		fmt.Fprintf(w, "  %-10s %s: %6.2fs / %6.2fs = %.3f  %s (target <= %.2f)  [%.3f]  %s\n", label, name, l, b, l/b, verdict(l/b, target), target, l/fast, what)
	}
	for _, r := range loom {
		label := r.label
		if r.noisy(o) {
			label += " !"
		}
		line(label, "t1", r.timed.t1.Seconds(), b1, fast1, o.target, "applied + status written")
		line(label, "t2", r.timed.t2.Seconds(), b2, fast2, o.targetReady, "all Ready vs all Deployments available")
	}
	if len(loom) > 1 {
		l1, l2 := meanOf(loom, func(r phaseResult) time.Duration { return r.timed.t1 }), meanOf(loom, func(r phaseResult) time.Duration { return r.timed.t2 })
		label := "mean(" + strings.Join(loomLabels, ",") + ")"
		line(label, "t1", l1, b1, fast1, o.target, "")
		line(label, "t2", l2, b2, fast2, o.targetReady, "")
	}
}

// pick returns the phases of a kind, without the noisy ones unless every
// one is noisy, and without remote phases, whose children the baseline
// does not write in two clusters (reportRemote compares them).
func pick(o options, results []phaseResult, kind string) ([]phaseResult, []string) {
	var all, clean []phaseResult
	for _, r := range results {
		if r.kind != kind || r.spec.remote {
			continue
		}
		all = append(all, r)
		if !r.noisy(o) {
			clean = append(clean, r)
		}
	}
	out := clean
	if len(clean) == 0 {
		out = all
	}
	labels := make([]string, len(out))
	for i, r := range out {
		labels[i] = r.label
		if r.noisy(o) {
			labels[i] += " (noisy!)"
		}
	}
	return out, labels
}

func meanOf(rs []phaseResult, f func(phaseResult) time.Duration) float64 {
	s := 0.0
	for _, r := range rs {
		s += f(r).Seconds()
	}
	return s / float64(len(rs))
}

// noise is the share of the machine's busy CPU, from t0 to end, that went
// to processes other than the cluster's and this one.
func (r phaseResult) noise() float64 {
	c := r.timed.at["end"].cpu
	if c.unavailable || c.machineBusy <= 0 {
		return 0
	}
	known := 0.0
	for _, v := range c.proc {
		known += v
	}
	return max(c.machineBusy-known, 0) / c.machineBusy
}

func (r phaseResult) noisy(o options) bool { return r.noise() > o.noiseLimit }

// reportLatency prints, per phase, how long each parent took from its
// create returning to passing t1 and t2.
func reportLatency(w io.Writer, results []phaseResult) {
	fmt.Fprintln(w, "\nper-parent latency, from its create returning (p50 / p90 / p99 / max)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tto t1\tto t2\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", r.label, quantiles(r.timed.lat1), quantiles(r.timed.lat2))
	}
	tw.Flush()
}

func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) string {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return fmt.Sprintf("%.2f", s[max(i, 0)].Seconds())
	}
	return fmt.Sprintf("%s / %s / %s / %ss", q(0.5), q(0.9), q(0.99), q(1))
}

// reportCPU prints the CPU time each process used from t0 to t1.
func reportCPU(w io.Writer, results []phaseResult) {
	fmt.Fprintln(w, "\nCPU seconds from t0 to t1 (machine busy = all cores, with steal = taken by the hypervisor; other = busy minus the processes listed)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	procs := append(slices.Clone(clusterProcesses), "loom", "converge")
	fmt.Fprintf(tw, "phase\twall\tmachine busy\tsteal\t%s\tother\t\n", strings.Join(procs, "\t"))
	for _, r := range results {
		c := r.timed.at["t1"].cpu
		if c.unavailable {
			fmt.Fprintf(tw, "%s\t(no /proc)\t\n", r.label)
			continue
		}
		wall := r.timed.t1.Seconds()
		known := 0.0
		row := fmt.Sprintf("%s\t%.1f\t%.1f (%.0f%%)\t%.1f", r.label, wall, c.machineBusy, 100*c.machineBusy/max(c.machineTotal, 1e-9), c.machineSteal)
		for _, p := range procs {
			v, ok := c.proc[p]
			if !ok {
				row += "\t-"
				continue
			}
			known += v
			row += fmt.Sprintf("\t%.1f", v)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t\n", row, max(c.machineBusy-known, 0))
	}
	tw.Flush()
}

// reportAPI prints the writes the API server served from every client.
func reportAPI(w io.Writer, results []phaseResult) {
	fmt.Fprintln(w, "\nAPI server writes from every client, t0 to just after t1 (apiserver_request_total; includes the creator's creates;")
	fmt.Fprintln(w, " namespace writes are someone else's: a round writes none, so ? marks other tests starting or ending during it)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\ttotal\t/parent\t409s\tnamespaces\ttop resources\t")
	for _, r := range results {
		a := r.timed.api["t1"]
		ns := fmt.Sprintf("%.0f", a.namespaceWrites())
		if a.namespaceWrites() > 0 {
			ns += " ?"
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.0f\t%s\t%s\t\n", r.label, a.total(), a.total()/float64(r.timed.n), a.conflicts, ns, a.top(8))
	}
	tw.Flush()
}

// reportLoom prints Loom's own counters for each loom phase.
func reportLoom(w io.Writer, results []phaseResult) {
	for _, r := range results {
		if r.kind != kindLoom {
			continue
		}
		t := r.timed
		end := t.at["end"].writes
		if r.bare {
			fmt.Fprintf(w, "\n%s: every status written at %s (no Deployment runs on a bare cluster)\n", r.label, secs(t.t1))
		} else {
			fmt.Fprintf(w, "\n%s: every Deployment available at %s; every parent Ready at %s (+%s)\n",
				r.label, secs(t.avail), secs(t.t2), secs(t.t2-t.avail))
		}
		if r.counted {
			fmt.Fprintf(w, "  requests: timed round %d writes, %d reads (%d watches); whole phase, with start and warm-up, %d writes, %d reads (%d watches)\n",
				end.Writes(), end.Reads, end.Watches, r.total.Writes(), r.total.Reads, r.total.Watches)
		} else {
			fmt.Fprintf(w, "  requests: timed round %d writes to the children and the parents' status (the API server's count; Loom's reads are not counted)\n",
				r.writes("end").Writes())
		}
		for _, at := range []string{"t1", "t2", "end"} {
			if r.bare && at == "t2" {
				continue
			}
			l := t.at[at].loom
			q := l.Queue
			fmt.Fprintf(w, "  by %-3s: reconciles %.0f (%.2f/parent), status writes %.0f (%.2f/parent), child applies %s;\n",
				at, l.Reconciles, l.Reconciles/float64(t.n), l.StatusWrites, l.StatusWrites/float64(t.n), changes(l.Changes))
			if !q.Available {
				fmt.Fprintf(w, "          queue n/a (Loom's /metrics has no workqueue metrics); reconcile mean %s\n", ms(l.ReconcileSeconds, int64(l.Reconciles)))
				continue
			}
			maxDepth, waitMax := fmt.Sprint(q.MaxDepth), fmt.Sprintf("%.0fms", q.WaitMax*1000)
			if !r.counted {
				maxDepth, waitMax = "n/a", "n/a" // a scrape has no maxima
			}
			fmt.Fprintf(w, "          queue adds %d, wait mean %s max %s, max depth %s; reconcile mean %s\n",
				q.Adds, ms(q.WaitSum, q.WaitN), waitMax, maxDepth, ms(l.ReconcileSeconds, int64(l.Reconciles)))
		}
	}
}

func changes(m map[string]float64) string {
	var parts []string
	for _, k := range []string{"created", "configured", "unchanged", "pruned", "failed"} {
		if v := m[k]; v > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func ms(sum float64, n int64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fms", 1000*sum/float64(n))
}

// reportHeap prints what each phase left on this process's heap once its
// parents had converged, and Loom's share: a loom phase's figure less the
// mean of the base phases' (the harness's own trackers are in both). It
// is about Loom only when Loom ran in this process.
func reportHeap(w io.Writer, results []phaseResult) {
	for _, r := range results {
		if r.after != nil && r.after.mem {
			return // reportMemory measures Loom's own process
		}
	}
	fmt.Fprintln(w, "\nlive heap of this process after the timed round, less before the phase (MiB)")
	var base []float64
	for _, r := range results {
		mib := float64(r.heap) / (1 << 20)
		fmt.Fprintf(w, "  %-8s %7.1f\n", r.label, mib)
		if r.kind == kindBase {
			base = append(base, mib)
		}
	}
	if len(base) == 0 {
		return
	}
	mean := 0.0
	for _, b := range base {
		mean += b
	}
	mean /= float64(len(base))
	for _, r := range results {
		if r.kind != kindLoom {
			continue
		}
		loom := float64(r.heap)/(1<<20) - mean
		n := float64(r.timed.n)
		fmt.Fprintf(w, "  %s: Loom holds about %.1f MiB for %d parents and their %d children (%.1f KiB per parent)\n",
			r.label, loom, r.timed.n, 3*r.timed.n, loom*1024/max(n, 1))
	}
}

// reportMemory prints the memory of Loom's own process in each loom phase.
func reportMemory(w io.Writer, o options, results []phaseResult) {
	header := false
	for _, r := range results {
		a := r.after
		if a == nil || !a.mem {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nLoom's process: memory (/proc/PID/status) and CPU")
			header = true
		}
		idle := fmt.Sprintf("idle for %s, %s after the timed round", o.steady, secs(a.waited))
		if !a.idle {
			idle = fmt.Sprintf("never idle for %s; read after %s", o.steady, secs(a.waited))
		}
		label, cpuLabel := r.label, r.label
		if len(a.replicas) > 1 {
			label, cpuLabel = r.label+" (largest replica)", r.label+" (all replicas)"
		}
		fmt.Fprintf(w, "  %s: peak RSS (VmHWM) %s at the end of the timed round, %s at the end of the phase (largest of %d samples every 250ms: %s)\n",
			label, mib(a.hwmTimed), mib(a.hwmEnd), a.samples, mib(a.maxSampled))
		fmt.Fprintf(w, "  %s: steady RSS %s (anonymous %s, mapped files %s), heap in use %s (%s)\n",
			label, mib(a.steady.RSS), mib(a.steady.Anon), mib(a.steady.File), heapMiB(a.heap, a.heapKnown), idle)
		fmt.Fprintf(w, "  %s: CPU %.1fs from t0 to end of the timed round (%.1fs to t1)\n",
			cpuLabel, r.timed.at["end"].cpu.proc["loom"], r.timed.at["t1"].cpu.proc["loom"])
	}
}

// reportTouch prints the full re-reconcile of each loom phase's converged
// fleet: how long it took, and the writes it made (there should be none).
func reportTouch(w io.Writer, results []phaseResult) {
	for _, r := range results {
		if r.after == nil {
			continue
		}
		t := r.after.touch
		fmt.Fprintf(w, "\n%s: full re-reconcile of a converged fleet (a comment appended to %s)\n", r.label, t.file)
		state := "all"
		if !t.complete {
			state = "NOT all"
		}
		cpu := "n/a (in this process)"
		if r.after.mem {
			cpu = fmt.Sprintf("%.1fs", t.cpu)
		}
		fmt.Fprintf(w, "  %.0f reconciles for %d parents (%s) in %s; Loom's CPU %s; child applies %s, status writes %.0f (Loom's counts)\n",
			t.reconciles, t.parents, state, secs(t.took), cpu, changes(t.loom.Changes), t.loom.StatusWrites)
		fmt.Fprintf(w, "  API server writes from the touch to -settle after: children %d, status %d; Events (every client) %.0f\n",
			t.writes.Children, t.writes.Status, t.events)
	}
}
