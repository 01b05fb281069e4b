package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-operator/loom/internal/testutil"
)

func TestBalanced(t *testing.T) {
	tests := []struct {
		buckets []float64
		want    bool
	}{
		{[]float64{22, 21, 21}, true},
		{[]float64{64}, true},
		{[]float64{32, 32}, true},
		{[]float64{64, 0, 0}, false},   // the first to start holds them all
		{[]float64{22, 22, 19}, false}, // 63: one bucket held by none
		{[]float64{23, 21, 20}, false}, // all held, not yet even
		{[]float64{22, 22, 21}, false}, // 65: one counted twice, mid-move
		{nil, false},
	}
	for _, tt := range tests {
		if got := balanced(tt.buckets); got != tt.want {
			t.Errorf("balanced(%s) = %v, want %v", bucketList(tt.buckets), got, tt.want)
		}
	}
}

func TestShardStats(t *testing.T) {
	const replica = `# TYPE loom_reconcile_total counter
loom_reconcile_total{kind="MyResource",result="success"} 10
# TYPE loom_parents gauge
loom_parents{kind="MyResource",state="Ready"} 7
loom_parents{kind="MyResource",state="Unknown"} 2
loom_parents{kind="Other",state="Ready"} 100
# TYPE loom_shard_buckets gauge
loom_shard_buckets 22
# TYPE loom_shard_moves_total counter
loom_shard_moves_total{direction="claim"} 22
loom_shard_moves_total{direction="release"} 1
loom_shard_moves_total{direction="lapse"} 0
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 1000
`
	m, err := testutil.ParseMetrics(strings.NewReader(replica))
	if err != nil {
		t.Fatal(err)
	}
	one := loomStatsFrom(m)
	want := loomStats{Reconciles: 10, Changes: map[string]float64{}, Parents: 9, Buckets: 22, Moves: 23, ShardKnown: true, HeapInuse: 1000, HeapKnown: true}
	if diff := cmp.Diff(want, one); diff != "" {
		t.Errorf("one replica (-want +got)\n%s", diff)
	}
	sum := one.add(one).add(one)
	wantSum := loomStats{Reconciles: 30, Changes: map[string]float64{}, Parents: 27, Buckets: 66, Moves: 69, ShardKnown: true, HeapInuse: 3000, HeapKnown: true}
	if diff := cmp.Diff(wantSum, sum); diff != "" {
		t.Errorf("three replicas added (-want +got)\n%s", diff)
	}
	later := one
	later.Moves, later.Buckets, later.Reconciles = 25, 21, 15
	wantSub := loomStats{Reconciles: 5, Changes: map[string]float64{}, Parents: 9, Buckets: 21, Moves: 2, ShardKnown: true, HeapInuse: 1000, HeapKnown: true}
	if diff := cmp.Diff(wantSub, later.sub(one)); diff != "" {
		t.Errorf("moves since (-want +got)\n%s", diff)
	}
	unsharded := loomStatsFrom(testutil.Metrics{})
	if unsharded.ShardKnown {
		t.Error("a Loom without loom_shard_buckets is taken for sharded")
	}
}
