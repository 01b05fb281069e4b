//go:build e2e

package e2e

// The handover bounds of loom run --sharded, measured the way an operator
// sees them: from the signal that stops a replica until an edit of every
// parent it held, sent right after the signal, is in those parents'
// children (docs/explanation/promises.md).

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/internal/testutil"
)

const (
	// termEditBound is how soon after a replica's SIGTERM an edit of
	// every parent it held must be in their children.
	termEditBound = 5 * time.Second
	// killEditBound is the same after a SIGKILL: the others take the
	// buckets only once the replica's Lease has expired.
	killEditBound = shardLeaseDuration + 5*time.Second
)

// A replica stopped by SIGTERM, while every parent it held is edited:
// the edits are in the children within termEditBound of the signal.
func shardedSIGTERMEditsLand(t *testing.T) { editsLandAfter(t, syscall.SIGTERM, termEditBound) }

// The same with SIGKILL, within killEditBound of the signal.
func shardedSIGKILLEditsLand(t *testing.T) { editsLandAfter(t, syscall.SIGKILL, killEditBound) }

// editsLandAfter converges 30 parents on three replicas, stops one with
// sig, edits at once every parent of the buckets it held, and checks that
// every edit reached the parent's ConfigMap within bound of the signal.
func editsLandAfter(t *testing.T, sig syscall.Signal, bound time.Duration) {
	e := newShardEnv(t, 15)
	rs := e.startN(3)
	table := e.waitBalanced(t, time.Minute, rs...)
	e.waitConverged(t, 2*time.Minute)
	victim, others := rs[0], rs[1:]
	moved := e.parentsIn(table[victim.memberID(t)])
	if len(moved) == 0 {
		t.Fatalf("%s holds %v, with none of the %d parents in it", victim.name, table[victim.memberID(t)], len(e.parents))
	}
	signalled := time.Now()
	victim.signal(t, sig)
	e.patchAll(t, moved, 1)
	sent := time.Since(signalled)
	landed := e.waitEdits(t, moved, "1", bound+30*time.Second)
	took := landed.Sub(signalled)
	t.Logf("%s: the edits of the %d parents %s held were sent within %s and in their children %s after the signal (bound %s)",
		sig, len(moved), victim.name, sent.Round(time.Millisecond), took.Round(time.Millisecond), bound)
	if took > bound {
		t.Errorf("%s: the edits of the %d moved parents were in their children %s after the signal, want at most %s",
			sig, len(moved), took.Round(time.Millisecond), bound)
	}
	e.waitBalanced(t, 30*time.Second, others...)
	e.checkNoTwoWriters(t, logsOf(t, rs...))
}

// waitEdits polls, every 50 ms, until the ConfigMap of every one of
// parents carries rev, and returns when it first saw them all do.
func (e *shardEnv) waitEdits(t *testing.T, parents []shardParent, rev string, timeout time.Duration) time.Time {
	t.Helper()
	var at time.Time
	testutil.Poll(t, 50*time.Millisecond, timeout, fmt.Sprintf("the edits of %d parents reach their ConfigMaps", len(parents)), func(ctx context.Context) error {
		list, err := e.Dyn.Resource(configMapGVR).Namespace(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=loom"})
		if err != nil {
			return err
		}
		now := time.Now()
		data := map[string]map[string]any{}
		for _, cm := range list.Items {
			data[cm.GetName()], _, _ = unstructured.NestedMap(cm.Object, "data")
		}
		var missing []string
		for _, p := range parents {
			name, key := p.name+"-config", "rev"
			if p.gvr == gadgetGVR {
				name, key = p.name+"-gadget", "value"
			}
			if data[name][key] != rev {
				missing = append(missing, p.name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%d not yet, e.g. %v", len(missing), missing[:min(5, len(missing))])
		}
		at = now
		return nil
	})
	return at
}
