package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/loom-operator/loom/internal/procmem"
)

func TestIdleReportAndTarget(t *testing.T) {
	const mi = 1 << 20
	loom := procmem.Status{RSS: 52 * mi, Anon: 10 * mi, File: 42 * mi}
	floor := procmem.Status{RSS: 34 * mi, Anon: 8 * mi, File: 26 * mi}
	tests := []struct {
		name        string
		res         *idleResult
		target      float64
		wantVerdict string
		wantMeasure string
		wantReport  []string
	}{
		{name: "not run", res: nil, target: 35, wantMeasure: "n/a"},
		{
			name: "over the target, with the floor", target: 35,
			res:         &idleResult{loom: loom, floor: floor, loomBin: 83e6, floorBin: 53e6},
			wantVerdict: "MISS", wantMeasure: "52.0 MiB (floor 34.0 MiB)",
			wantReport: []string{
				"loom   52.0 MiB = 10.0 MiB anonymous + 42.0 MiB file-backed (binary 83.0 MB)",
				"floor  34.0 MiB = 8.0 MiB anonymous + 26.0 MiB file-backed (binary 53.0 MB)",
				"loom - floor: 18.0 MiB (2.0 MiB anonymous, 16.0 MiB file-backed)",
			},
		},
		{
			name: "within the target, the floor failed", target: 60,
			res:         &idleResult{loom: loom, loomBin: 83e6, floorErr: errors.New("go build: no Go")},
			wantVerdict: "PASS", wantMeasure: "52.0 MiB",
			wantReport: []string{"floor  not measured: go build: no Go"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := idleTargetRow(options{targetIdleRSS: tt.target}, tt.res)
			if row.verdict != tt.wantVerdict || row.measured != tt.wantMeasure {
				t.Errorf("row = %q %q, want %q %q", row.measured, row.verdict, tt.wantMeasure, tt.wantVerdict)
			}
			var buf bytes.Buffer
			reportIdle(&buf, tt.res)
			if tt.res == nil && buf.Len() != 0 {
				t.Errorf("report of no idle step: %q", buf.String())
			}
			for _, want := range tt.wantReport {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, buf.String())
				}
			}
		})
	}
}
