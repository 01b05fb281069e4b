//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/shard"
	"github.com/loom-operator/loom/test/env"
)

// A rollout over parents that live on two sharded replicas is decided
// once, over all of them: its first step moves one parent of the twelve,
// not one per replica, and every parent ends on the new revision, each
// reconciled by the replica that holds it.
func TestShardedRolloutHasOneDecider(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	const n = 12
	ns := e.NewNamespace(t)
	root, dir := rolloutSet(t, "rollout:\n  steps: [1, 50%, 100%]\n  readyTimeout: 90s\n  soak: 2s\n", "v1")
	args := []string{"--templates", root, "--sharded", "--shard-namespace", ns, "--shard-group", "roll"}
	startLoomProcess(t, ns, args...)
	startLoomProcess(t, ns, args...)
	name := "app." + ns
	fleet(t, ns, n)
	first := waitRollout(t, name, "a stable revision", 90*time.Second, func(s rolloutState) bool { return s.stable != "" && s.phase == "Complete" })
	waitFleet(t, ns, n, first.stable, "v1")
	holders := parentHolders(t, ns, n)
	if len(holders) != 2 {
		t.Fatalf("the %d parents are held by %v; want both replicas to hold some", n, holders)
	}

	setVersion(t, dir, "v2", "")
	// A decider per replica would move a parent on each at step 1.
	steps, _ := followRollout(t, ns, name, n, first, map[int64]int{1: 1, 2: n / 2, 3: n}, nil)
	if want := []int64{1, 2, 3}; fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("steps seen %v, want %v", steps, want)
	}
	final, _ := readRollout(context.Background(), e, name)
	waitFleet(t, ns, n, final.stable, "v2")
}

// parentHolders returns, by member, how many of the parents p-0..p-(n-1)
// of ns the shard table of group "roll" (in ns) gives it.
func parentHolders(t *testing.T, ns string, n int) map[string]int {
	t.Helper()
	e := env.From(t)
	var table shard.Table
	eventually(t, 30*time.Second, "the shard table to name two members", func(ctx context.Context) error {
		l, err := e.Kube.CoordinationV1().Leases(ns).Get(ctx, "roll-shards", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if table, err = shard.DecodeTable(l.Annotations["loom.dev/shard-table"]); err != nil {
			return err
		}
		members := map[string]bool{}
		for _, m := range table {
			members[m] = true
		}
		if len(members) != 2 || members[""] {
			b, _ := json.Marshal(table)
			return fmt.Errorf("table %s", b)
		}
		return nil
	})
	out := map[string]int{}
	for i := range n {
		p, err := e.Get(context.Background(), myresGVR, ns, fmt.Sprintf("p-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		out[table[shard.Bucket(types.UID(p.GetUID()))]]++
	}
	return out
}
