package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/loom-operator/loom/internal/procmem"
	"github.com/loom-operator/loom/internal/testutil"
)

// restartSignals are the restarts a converged loom phase goes through, in
// order (-restart): an operator's (SIGTERM, wait for the exit, start
// again), then a crash's (SIGKILL).
var restartSignals = []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}

// restartResult is one restart of Loom over a converged fleet: the old
// process signalled, a fresh `loom run` with the same arguments, folder
// and ports, and what the API server saw until Loom was idle again.
type restartResult struct {
	// signal is what ended the old process: SIGTERM or SIGKILL.
	signal string
	// parents is how many parents the fleet has (the warm-up's included).
	parents int
	// stopped is from the signal to the old process's exit; stopErr says
	// how it ended when that was not as the signal should end it (SIGTERM:
	// exit 0).
	stopped time.Duration
	stopErr string
	// ready is from the new process's start to its /readyz answering 200
	// (readyOK false: not within -restart-timeout).
	ready   time.Duration
	readyOK bool
	// reconciled is from the new process's start to its
	// loom_reconcile_total reaching parents (complete false: never, within
	// -restart-timeout).
	reconciled time.Duration
	complete   bool
	// idle is from the new process's start to the moment it was idle:
	// every parent reconciled, then no write and no reconcile for
	// -restart-settle (idleOK false: not within -restart-timeout).
	idle   time.Duration
	idleOK bool
	// window is from the signal to the end of the measurement (idle, or
	// the time limit).
	window time.Duration
	// writes are the API server's writes to the children's resources and
	// to the parents' status over the window; events the Events every
	// client wrote then.
	writes requests
	events float64
	// requests are the API server's requests of every verb, every client,
	// over the window; peak is the largest rate between two of its
	// one-second samples; before is its rate over -restart-settle just
	// before the signal, when the fleet was idle (requests/s).
	requests, peak, before float64
	// loom are the new process's own counters at the end (they start at
	// 0), cpu its CPU seconds then, rss and hwm its resident and peak
	// memory then.
	loom     loomStats
	cpu      float64
	rss, hwm int64
}

// rate is the API server's requests per second over the window.
func (r restartResult) rate() float64 {
	if r.window <= 0 {
		return 0
	}
	return r.requests / r.window.Seconds()
}

// restarts restarts a converged process-mode Loom once per restartSignals
// and measures each. An in-process Loom, and a sharded phase's replicas
// (whose takeovers are measured apart), are not restarted: restarts
// returns nil, and the report says n/a.
func (p *phase) restarts(ctx context.Context) ([]restartResult, error) {
	g, ok := p.loom.(*loomGroup)
	if !ok || p.spec.sharded || len(g.procs) != 1 {
		return nil, nil
	}
	var out []restartResult
	for _, sig := range restartSignals {
		r, err := p.restart(ctx, g, sig)
		if err != nil {
			return out, fmt.Errorf("restart with %s: %w", signalName(sig), err)
		}
		out = append(out, r)
	}
	return out, nil
}

// restart ends g's one process with sig, starts a fresh one in its place,
// and measures until it is idle.
func (p *phase) restart(ctx context.Context, g *loomGroup, sig syscall.Signal) (restartResult, error) {
	o := p.opts
	r := restartResult{signal: signalName(sig), parents: p.spec.parents + 1}
	// The API server's rate while the fleet is idle, for comparison.
	a0, err := scrapeWrites(ctx, p.rc)
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	if err := sleep(ctx, o.restartSettle); err != nil {
		return r, err
	}
	base, err := scrapeWrites(ctx, p.rc)
	if err != nil {
		return r, err
	}
	// A remote phase's children in the workload cluster (none otherwise).
	wbase := p.scrapeWorkload(ctx)
	wlast := wbase
	signalled := time.Now()
	r.before = (base.all - a0.all) / signalled.Sub(t0).Seconds()
	samples := []rateSample{{at: signalled, total: base.all}}

	// The operator's restart: signal, wait for the exit, start again.
	old := g.procs[0]
	if err := stopOnPurpose(old, sig); err != nil {
		r.stopErr = err.Error()
	}
	r.stopped = time.Since(signalled)
	logf("%s: Loom (pid %d) ended by %s in %s; starting it again", p.label, old.pid(), r.signal, secs(r.stopped))
	markLog(old.log, fmt.Sprintf("converge: %s at %s, after %s; a fresh loom run follows", r.signal, signalled.Format("15:04:05.000"), secs(r.stopped)))
	started := time.Now()
	l, err := startLoomProcess(ctx, o, p.loomDir, old.args, old.metricsAddr, filepath.Base(old.log))
	if err != nil {
		return r, err
	}
	g.procs[0] = l
	rctx, stopReady := context.WithDeadline(ctx, started.Add(o.restartTimeout))
	defer stopReady()
	readyc := make(chan time.Duration, 1)
	go func() { readyc <- waitReady(rctx, readyURL(l.metricsURL), started) }()

	// Until idle: every parent reconciled, then nothing for the settle.
	idle := idleWatch{want: float64(r.parents), settle: o.restartSettle}
	last := base
	for tick := 0; ; tick++ {
		s, err := l.stats(ctx)
		if err != nil {
			return r, err
		}
		now := time.Now()
		if !r.complete && s.Reconciles >= float64(r.parents) {
			r.complete, r.reconciled = true, now.Sub(started)
		}
		if tick%4 == 3 { // the API server every second, Loom every 250ms
			if last, err = scrapeWrites(ctx, p.rc); err != nil {
				return r, err
			}
			samples = append(samples, rateSample{at: time.Now(), total: last.all})
			wlast = p.scrapeWorkload(ctx)
			w := writerRequestsIn(last.sub(base), wlast.sub(wbase), false)
			if idle.observe(now, w.Children+w.Status, s.Reconciles) {
				r.idleOK, r.idle = true, now.Sub(started)
				break
			}
		}
		if now.Sub(started) >= o.restartTimeout {
			r.idle = now.Sub(started)
			logf("%s: Loom not idle within %s of its restart (-restart-timeout)", p.label, o.restartTimeout)
			break
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return r, err
		}
	}
	r.window = samples[len(samples)-1].at.Sub(signalled)
	api := last.sub(base)
	r.writes, r.events = writerRequestsIn(api, wlast.sub(wbase), false), api.byResource["events"]
	r.requests, r.peak = api.all, peakRate(samples)
	if r.loom, err = l.stats(ctx); err != nil {
		return r, err
	}
	r.cpu, _ = processCPU(l.pid())
	if m, err := procmem.Read(l.pid()); err == nil {
		r.rss, r.hwm = m.RSS, m.HWM
	}
	if r.ready = <-readyc; r.ready >= 0 {
		r.readyOK = true
	} else {
		r.ready = o.restartTimeout
	}
	logf("%s: after %s: Ready in %s, every parent reconciled in %s (%.0f reconciles for %d parents), idle in %s; writes: children %d, status %d; API server %.1f req/s (idle before %.1f, peak %.1f)",
		p.label, r.signal, r.readyText(), r.reconciledText(), r.loom.Reconciles, r.parents, r.idleText(), r.writes.Children, r.writes.Status, r.rate(), r.before, r.peak)
	return r, nil
}

// stopOnPurpose ends l with sig and waits for it: SIGTERM with the grace
// of stop, SIGKILL at once. It marks l as stopped on purpose first, so
// that its exit does not fail the phase. It says how l ended when that is
// not how sig should end it.
func stopOnPurpose(l *loomProc, sig syscall.Signal) error {
	l.exitExpected.Store(true)
	if sig == syscall.SIGKILL {
		return l.proc.Kill()
	}
	return l.stop()
}

// waitReady polls url (a /readyz) every 50ms until it answers 200, and
// returns the time since started then, or -1 if ctx ends first (its
// deadline is the time limit).
func waitReady(ctx context.Context, url string, started time.Time) time.Duration {
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := testutil.HTTPGet(pctx, url)
		cancel()
		if err == nil {
			return time.Since(started)
		}
		if sleep(ctx, 50*time.Millisecond) != nil {
			return -1
		}
	}
}

// readyURL is the /readyz beside a Loom's /metrics: loom run serves its
// health probes on its metrics address.
func readyURL(metricsURL string) string {
	return strings.TrimSuffix(metricsURL, "/metrics") + "/readyz"
}

// markLog appends a line to a log, to show where one process ended and
// the next began; a failure to write it is not the benchmark's.
func markLog(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return
	}
	_, err = fmt.Fprintf(f, "--- %s ---\n", line)
	_ = errors.Join(err, f.Close())
}

// signalName is SIGTERM or SIGKILL.
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return sig.String()
}

// idleWatch decides when a restarted Loom is idle again: it has made at
// least want reconciles, and neither its writes nor its reconcile count
// have moved for settle.
type idleWatch struct {
	want   float64
	settle time.Duration

	seen       bool
	writes     int64
	reconciles float64
	since      time.Time
}

// observe records the writes and reconciles counted at now, and says
// whether Loom is idle.
func (w *idleWatch) observe(now time.Time, writes int64, reconciles float64) bool {
	if !w.seen || writes != w.writes || reconciles != w.reconciles {
		w.seen, w.writes, w.reconciles, w.since = true, writes, reconciles, now
	}
	return reconciles >= w.want && now.Sub(w.since) >= w.settle
}

// rateSample is the API server's request count at one moment.
type rateSample struct {
	at    time.Time
	total float64
}

// peakRate is the largest rate, in requests per second, between two
// consecutive samples; 0 with fewer than two.
func peakRate(samples []rateSample) float64 {
	peak := 0.0
	for i := 1; i < len(samples); i++ {
		dt := samples[i].at.Sub(samples[i-1].at).Seconds()
		if dt <= 0 {
			continue
		}
		peak = max(peak, (samples[i].total-samples[i-1].total)/dt)
	}
	return peak
}
