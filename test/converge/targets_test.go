package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/internal/procmem"
)

// phaseAt is a quiet phase with the given times; after, if not nil, is a
// loom phase's post-convergence measurements.
func phaseAt(kind string, t1, t2 time.Duration, after *loomAfter) phaseResult {
	return phaseResult{kind: kind, label: kind, after: after, timed: roundResult{
		n: 100, t1: t1, t2: t2,
		at: map[string]mark{"end": {cpu: cpuSample{proc: map[string]float64{"loom": 12.5}}}},
	}}
}

func TestTargetRows(t *testing.T) {
	const mi = 1 << 20
	converged := &loomAfter{
		mem: true, hwmTimed: 50 * mi, hwmEnd: 55 * mi, idle: true, heap: 20 * mi, heapKnown: true,
		steady: procmem.Status{RSS: 40 * mi},
		touch:  touchResult{parents: 101, reconciles: 101, complete: true},
	}
	fat := &loomAfter{
		mem: true, hwmTimed: 70 * mi, hwmEnd: 61 * mi, steady: procmem.Status{RSS: 45 * mi},
		touch: touchResult{parents: 101, reconciles: 40, writes: requests{Children: 3, Status: 1}},
	}
	defaults := options{target: 1.15, targetReady: 1.2, targetRSS: 60, noiseLimit: 0.1}
	bare := defaults
	bare.bare, bare.target, bare.targetRSS = true, 1.2, 150
	tests := []struct {
		name    string
		o       options
		results []phaseResult
		want    []targetRow
	}{
		{"every target met", defaults, []phaseResult{
			phaseAt(kindBase, 10*time.Second, 20*time.Second, nil),
			phaseAt(kindLoom, 11*time.Second, 24*time.Second, converged),
		}, []targetRow{
			{"peak RSS (VmHWM)", "≤ 60 MiB", "55.0 MiB", "PASS"},
			{"steady RSS", "-", "40.0 MiB", ""},
			{"heap in use (steady)", "-", "20.0 MiB", ""},
			{"Loom CPU, timed round", "-", "12.5 s", ""},
			{"all children exist ÷ floor (t1)", "≤ 1.15", "1.100", "PASS"},
			{"all Ready ÷ floor (t2)", "≤ 1.2", "1.200", "PASS"},
			{"writes on a full re-reconcile", "0", "0 (children 0, status 0)", "PASS"},
		}},
		{"every target missed; the worse of two loom phases counts", defaults, []phaseResult{
			phaseAt(kindBase, 10*time.Second, 20*time.Second, nil),
			phaseAt(kindLoom, 12*time.Second, 25*time.Second, converged),
			phaseAt(kindLoom, 12*time.Second, 25*time.Second, fat),
		}, []targetRow{
			{"peak RSS (VmHWM)", "≤ 60 MiB", "70.0 MiB", "MISS"},
			{"steady RSS", "-", "45.0 MiB (never idle)", ""},
			{"heap in use (steady)", "-", "20.0 MiB", ""},
			{"Loom CPU, timed round", "-", "12.5 s", ""},
			{"all children exist ÷ floor (t1)", "≤ 1.15", "1.200", "MISS"},
			{"all Ready ÷ floor (t2)", "≤ 1.2", "1.250", "MISS"},
			{"writes on a full re-reconcile", "0", "4 (children 3, status 1), only 40 of 101 reconciled", "MISS"},
		}},
		{"bare: status written, no t2", bare, []phaseResult{
			phaseAt(kindBase, 100*time.Second, 0, nil),
			phaseAt(kindLoom, 110*time.Second, 0, converged),
		}, []targetRow{
			{"peak RSS (VmHWM)", "≤ 150 MiB", "55.0 MiB", "PASS"},
			{"steady RSS", "-", "40.0 MiB", ""},
			{"heap in use (steady)", "-", "20.0 MiB", ""},
			{"Loom CPU, timed round", "-", "12.5 s", ""},
			{"all status written ÷ floor (t1)", "≤ 1.2", "1.100", "PASS"},
			{"writes on a full re-reconcile", "0", "0 (children 0, status 0)", "PASS"},
		}},
		{"in-process Loom, no baseline", defaults, []phaseResult{
			phaseAt(kindLoom, 11*time.Second, 24*time.Second, &loomAfter{touch: touchResult{parents: 1, reconciles: 1, complete: true}}),
		}, []targetRow{
			{"peak RSS (VmHWM)", "≤ 60 MiB", "n/a (Loom ran in this process)", ""},
			{"steady RSS", "-", "n/a", ""},
			{"heap in use (steady)", "-", "n/a", ""},
			{"Loom CPU, timed round", "-", "n/a", ""},
			{"all children exist ÷ floor (t1)", "≤ 1.15", "n/a", ""},
			{"all Ready ÷ floor (t2)", "≤ 1.2", "n/a", ""},
			{"writes on a full re-reconcile", "0", "0 (children 0, status 0)", "PASS"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := targetRows(tt.o, tt.results)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(targetRow{})); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestWriteTargets(t *testing.T) {
	var b bytes.Buffer
	writeTargets(&b, []targetRow{
		{"peak RSS (VmHWM)", "≤ 60 MiB", "55.0 MiB", "PASS"},
		{"steady RSS", "-", "40.0 MiB", ""},
		{"all Ready ÷ floor (t2)", "≤ 1.2", "1.250", "MISS"},
	})
	want := `what                    target    measured  
peak RSS (VmHWM)        ≤ 60 MiB  55.0 MiB  PASS
steady RSS              -         40.0 MiB  
all Ready ÷ floor (t2)  ≤ 1.2     1.250     MISS
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		measured, limit float64
		want            string
	}{{1.14, 1.15, "PASS"}, {1.15, 1.15, "PASS"}, {1.151, 1.15, "MISS"}, {0, 0, "PASS"}, {1, 0, "MISS"}} {
		if got := verdict(tc.measured, tc.limit); got != tc.want {
			t.Errorf("verdict(%v, %v) = %s, want %s", tc.measured, tc.limit, got, tc.want)
		}
	}
	if got := strings.Count(machine(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)), "2026-01-02 03:04 UTC"); got != 1 {
		t.Errorf("machine() lacks the date")
	}
}
