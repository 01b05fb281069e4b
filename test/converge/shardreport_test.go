package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-operator/loom/internal/procmem"
	"github.com/loom-operator/loom/internal/testflags"
)

// shardRun is what bench-shard measures, small: one unsharded Loom on 200
// parents, then three sharded replicas on 600.
func shardRun(t *testing.T) (options, []phaseResult) {
	t.Helper()
	fs := flag.NewFlagSet("converge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o, err := parseFlags(fs, strings.Fields("-bare -phases loom@200,loom/3@600 -target-rss 150"))
	if err != nil {
		t.Fatal(err)
	}
	const mi = 1 << 20
	replica := func(pid int, peak, steady int64, parents, buckets float64, sharded bool) replicaMemory {
		return replicaMemory{
			pid: pid, hwmTimed: peak - mi, hwmEnd: peak, maxSampled: peak - 2*mi, samples: 400,
			steady: procmem.Status{RSS: steady, Anon: steady - 30*mi, File: 30 * mi},
			heap:   float64(steady - 40*mi), heapKnown: true,
			parents: parents, buckets: buckets, shardKnown: sharded, cpu: 12.5,
		}
	}
	one := &loomAfter{mem: true, idle: true, waited: 15 * time.Second,
		replicas: []replicaMemory{replica(100, 60*mi, 55*mi, 201, 0, false)}}
	one.summarize()
	three := &loomAfter{mem: true, idle: true, waited: 16 * time.Second, replicas: []replicaMemory{
		replica(201, 62*mi, 56*mi, 204, 22, true),
		replica(202, 70*mi, 58*mi, 199, 21, true),
		replica(203, 61*mi, 54*mi, 198, 21, true),
	}}
	three.summarize()
	shardMarks := map[string]mark{
		"t1":  {loom: loomStats{Buckets: 64, ShardKnown: true}},
		"end": {loom: loomStats{Buckets: 64, ShardKnown: true}, cpu: cpuSample{proc: map[string]float64{"loom": 30}}},
	}
	results := []phaseResult{
		{kind: kindLoom, label: "loom@200#1", spec: o.phases[0], bare: true, after: one,
			warm: roundResult{n: 1}, timed: roundResult{n: 200, t1: 10 * time.Second,
				at: map[string]mark{"end": {cpu: cpuSample{proc: map[string]float64{"loom": 9}}}}}},
		{kind: kindLoom, label: "loom/3@600#2", spec: o.phases[1], bare: true, after: three,
			balance: balance{took: 3500 * time.Millisecond, buckets: []float64{22, 21, 21}},
			warm:    roundResult{n: 1}, timed: roundResult{n: 600, t1: 12 * time.Second, at: shardMarks}},
	}
	return o, results
}

// TestShardReport checks the sharded parts of the report against
// testdata/shard-report.golden (-update rewrites it).
func TestShardReport(t *testing.T) {
	o, results := shardRun(t)
	var b bytes.Buffer
	fmt.Fprintf(&b, "converge: %s\n", parentsPerPhase(o))
	reportPhases(&b, o)
	reportMemory(&b, o, results)
	reportReplicas(&b, results)
	reportShardRatio(&b, o, results)
	b.WriteString("\n")
	writeTargets(&b, targetRows(o, results))
	golden := filepath.Join("testdata", "shard-report.golden")
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

func TestShardTargetRow(t *testing.T) {
	o, results := shardRun(t)
	row, ok := shardTargetRow(o, results)
	want := targetRow{what: "peak RSS, each sharded replica ÷ one Loom", target: "≤ 1.15",
		measured: "1.167 (loom/3@600#2 replica 2: 70.0 MiB ÷ 60.0 MiB)", verdict: "MISS"}
	if diff := cmp.Diff(want, row, cmp.AllowUnexported(targetRow{})); !ok || diff != "" {
		t.Errorf("ok %v, (-want +got)\n%s", ok, diff)
	}
	if _, ok := shardTargetRow(o, results[1:]); ok {
		t.Error("a row without an unsharded phase to compare with")
	}
	if _, ok := shardTargetRow(o, results[:1]); ok {
		t.Error("a row without a sharded phase")
	}
}

// TestUnshardedReportUnchanged: a run of one Loom process per phase, as
// bench-scale's, prints none of the sharded parts.
func TestUnshardedReportUnchanged(t *testing.T) {
	fs := flag.NewFlagSet("converge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o, err := parseFlags(fs, strings.Fields("-bare -parents 10000 -phases base,loom -target-rss 150"))
	if err != nil {
		t.Fatal(err)
	}
	_, sharded := shardRun(t)
	unsharded := []phaseResult{phaseAt(kindBase, time.Second, 0, nil), sharded[0]}
	unsharded[1].spec = o.phases[1]
	var b bytes.Buffer
	reportPhases(&b, o)
	reportReplicas(&b, unsharded)
	reportShardRatio(&b, o, unsharded)
	if b.Len() > 0 {
		t.Errorf("an unsharded run printed:\n%s", b.String())
	}
	if got, want := parentsPerPhase(o), "10000 MyResources per phase"; got != want {
		t.Errorf("parentsPerPhase = %q, want %q", got, want)
	}
	if rows := targetRows(o, unsharded); len(rows) != 6 {
		t.Errorf("targets of an unsharded bare run: %d rows, want 6 (no shard row)", len(rows))
	}
}
