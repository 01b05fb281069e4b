package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-operator/loom/internal/testflags"
)

func TestRestartFlags(t *testing.T) {
	tests := []struct {
		args string
		want []any
	}{
		{"", []any{true, 5 * time.Second, 5 * time.Minute, 10 * time.Second}},
		{"-restart=false", []any{false, 5 * time.Second, 5 * time.Minute, 10 * time.Second}},
		{"-restart-settle 3s -restart-timeout 15m -target-restart-ready 20s", []any{true, 3 * time.Second, 15 * time.Minute, 20 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			fs := flag.NewFlagSet("converge", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o, err := parseFlags(fs, strings.Fields(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			got := []any{o.restart, o.restartSettle, o.restartTimeout, o.targetRestartReady}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("restart, settle, timeout, target (-want +got)\n%s", diff)
			}
		})
	}
}

// TestIdleWatch feeds an idleWatch (want 10 reconciles, settle 5s) one
// sample a second and checks when it first says idle.
func TestIdleWatch(t *testing.T) {
	type sample struct {
		writes     int64
		reconciles float64
	}
	flat := func(n int, s sample) []sample {
		out := make([]sample, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	tests := []struct {
		name    string
		samples []sample
		// want is the index of the first sample at which it is idle, -1
		// for never.
		want int
	}{
		{"nothing reconciled yet is not idle, however long", flat(20, sample{0, 0}), -1},
		{"fewer reconciles than parents is not idle", flat(20, sample{0, 9}), -1},
		{"every parent reconciled, then flat for the settle", append([]sample{{0, 0}, {0, 4}}, flat(10, sample{0, 10})...), 7},
		{"a write restarts the settle", append(append([]sample{{0, 10}, {0, 10}, {0, 10}}, flat(1, sample{1, 10})...), flat(10, sample{1, 10})...), 8},
		{"reconciles still moving past the parents", []sample{{0, 10}, {0, 11}, {0, 12}, {0, 13}, {0, 14}, {0, 15}, {0, 16}, {0, 16}, {0, 16}, {0, 16}, {0, 16}, {0, 16}}, 11},
		{"writes counted and flat are idle too: the count, not its value", append([]sample{{3, 10}}, flat(6, sample{3, 10})...), 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := idleWatch{want: 10, settle: 5 * time.Second}
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			got := -1
			for i, s := range tt.samples {
				if w.observe(t0.Add(time.Duration(i)*time.Second), s.writes, s.reconciles) {
					got = i
					break
				}
			}
			if got != tt.want {
				t.Errorf("idle at sample %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPeakRate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int, total float64) rateSample {
		return rateSample{at: t0.Add(time.Duration(ms) * time.Millisecond), total: total}
	}
	tests := []struct {
		name    string
		samples []rateSample
		want    float64
	}{
		{"none", nil, 0},
		{"one", []rateSample{at(0, 100)}, 0},
		{"steady", []rateSample{at(0, 0), at(1000, 10), at(2000, 20)}, 10},
		{"a burst over a shorter interval", []rateSample{at(0, 0), at(1000, 10), at(1500, 110), at(2500, 120)}, 200},
		{"two samples at one moment are skipped", []rateSample{at(0, 0), at(0, 50), at(1000, 60)}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := peakRate(tt.samples); got != tt.want {
				t.Errorf("peakRate = %v, want %v", got, tt.want)
			}
		})
	}
}

// restarted is a restart that went as it should, with the given writes
// and time to Ready.
func restarted(signal string, children, status int64, ready time.Duration) restartResult {
	return restartResult{
		signal: signal, parents: 101, stopped: 12 * time.Millisecond,
		ready: ready, readyOK: true, reconciled: 2 * time.Second, complete: true, idle: 8 * time.Second, idleOK: true,
		window: 10 * time.Second, writes: requests{Children: children, Status: status}, events: 0,
		requests: 500, peak: 210, before: 12.5,
		loom: loomStats{Reconciles: 101, Changes: map[string]float64{"unchanged": 303}},
		cpu:  1.5, rss: 40 << 20, hwm: 45 << 20,
	}
}

func TestRestartTargetRows(t *testing.T) {
	o := options{restart: true, targetRestartReady: 10 * time.Second}
	loom := func(rs ...restartResult) phaseResult {
		return phaseResult{kind: kindLoom, label: "loom#1", after: &loomAfter{}, restarts: rs}
	}
	neverReady := restarted("SIGKILL", 0, 0, 5*time.Minute)
	neverReady.readyOK = false
	notIdle := restarted("SIGKILL", 0, 0, time.Second)
	notIdle.idleOK = false
	tests := []struct {
		name    string
		results []phaseResult
		want    []targetRow
	}{
		{"no restart measured: no rows", []phaseResult{loom()}, nil},
		{"silent and quick", []phaseResult{loom(restarted("SIGTERM", 0, 0, 610*time.Millisecond), restarted("SIGKILL", 0, 0, 580*time.Millisecond))}, []targetRow{
			{"child writes after a restart", "0", "0 (SIGTERM 0, SIGKILL 0)", "PASS"},
			{"status writes after a restart", "0", "0 (SIGTERM 0, SIGKILL 0)", "PASS"},
			{"Ready after a restart", "≤ 10 s", "0.61 s (SIGTERM 0.61s, SIGKILL 0.58s)", "PASS"},
		}},
		{"writes and a slow start; the worst restart counts", []phaseResult{loom(restarted("SIGTERM", 1200, 3, 12*time.Second), restarted("SIGKILL", 4, 300, time.Second))}, []targetRow{
			{"child writes after a restart", "0", "1200 (SIGTERM 1200, SIGKILL 4)", "MISS"},
			{"status writes after a restart", "0", "300 (SIGTERM 3, SIGKILL 300)", "MISS"},
			{"Ready after a restart", "≤ 10 s", "12 s (SIGTERM 12.00s, SIGKILL 1.00s)", "MISS"},
		}},
		{"never Ready", []phaseResult{loom(neverReady)}, []targetRow{
			{"child writes after a restart", "0", "0 (SIGKILL 0)", "PASS"},
			{"status writes after a restart", "0", "0 (SIGKILL 0)", "PASS"},
			{"Ready after a restart", "≤ 10 s", "300 s (SIGKILL never, in 300.00s)", "MISS"},
		}},
		{"not idle within the limit", []phaseResult{loom(notIdle)}, []targetRow{
			{"child writes after a restart", "0", "0 (SIGKILL 0, not idle within -restart-timeout)", "PASS"},
			{"status writes after a restart", "0", "0 (SIGKILL 0, not idle within -restart-timeout)", "PASS"},
			{"Ready after a restart", "≤ 10 s", "1 s (SIGKILL 1.00s)", "PASS"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := restartTargetRows(o, tt.results)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(targetRow{})); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestReportRestarts checks the Restart section against
// testdata/restart-report.golden (-update rewrites it): a phase that
// restarted, one in this process, and one of sharded replicas.
func TestReportRestarts(t *testing.T) {
	o := options{restart: true, restartSettle: 5 * time.Second, targetRestartReady: 10 * time.Second}
	slow := restarted("SIGKILL", 2, 1, 3*time.Second)
	slow.complete, slow.loom.Reconciles, slow.stopErr = false, 60, "pid 42 had already exited: signal: killed"
	slow.loom.Parents = 2002
	results := []phaseResult{
		{kind: kindBase, label: "base#1"},
		{kind: kindLoom, label: "loom#1", after: &loomAfter{}, restarts: []restartResult{restarted("SIGTERM", 0, 0, 610*time.Millisecond), slow}},
		{kind: kindLoom, label: "loom#2", after: &loomAfter{}, counted: true},
		{kind: kindLoom, label: "loom/3#3", after: &loomAfter{}, spec: phaseSpec{kind: kindLoom, replicas: 3, sharded: true}},
	}
	var b bytes.Buffer
	reportRestarts(&b, o, results)
	o.restart = false
	reportRestarts(&b, o, results) // prints nothing
	golden := filepath.Join("testdata", "restart-report.golden")
	if *testflags.Update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("report (-want +got)\n%s", diff)
	}
}

func TestReadyURL(t *testing.T) {
	if got, want := readyURL(metricsURL(":8081")), "http://127.0.0.1:8081/readyz"; got != want {
		t.Errorf("readyURL = %q, want %q", got, want)
	}
}
