package main

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// loom run's registry has the shard metrics without --sharded too, at 0,
// so that the dashboard's and the alerts' series exist for every Loom.
func TestRegistryHasShardMetricsUnsharded(t *testing.T) {
	reg, metrics := newRegistry()
	if metrics == nil {
		t.Fatal("newRegistry returned no shard metrics for the member to report on")
	}
	want := `
# HELP loom_shard_buckets Buckets of parents (of 64) this replica holds and may reconcile; 0 without --sharded.
# TYPE loom_shard_buckets gauge
loom_shard_buckets 0
# HELP loom_shard_members Live members of the shard group, as this replica last saw them; 0 without --sharded.
# TYPE loom_shard_members gauge
loom_shard_members 0
# HELP loom_shard_moves_total Buckets this replica claimed, released (to another replica or on exit) or dropped when its own Lease lapsed; 0 without --sharded.
# TYPE loom_shard_moves_total counter
loom_shard_moves_total{direction="claim"} 0
loom_shard_moves_total{direction="lapse"} 0
loom_shard_moves_total{direction="release"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"loom_shard_buckets", "loom_shard_members", "loom_shard_moves_total"); err != nil {
		t.Error(err)
	}
}
