package clusters

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/controller/childcache"
)

// A probe that finds a cluster not answering takes it as down until a
// probe finds it answering again: Place fails at once meanwhile, however
// long that lasts. Each change, and only a change, re-reconciles the
// parents that place children there (not those that place none) and
// reports the cluster's reachability; an answer also ends a reconcile's
// backoff.
func TestFleetProbeTakesAClusterDownAndUpAgain(t *testing.T) {
	now := time.Unix(1000, 0)
	reg := cluster.Registration{Name: "w1", Kubeconfig: []byte(kubeconfig), Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1"}}
	var enqueued []string
	var reachable []bool
	f := NewFleet(context.Background(), &Registry{regs: map[string][]cluster.Registration{"w1": {reg}}},
		Options{Deadline: time.Minute, Backoff: 10 * time.Second, Probe: time.Hour, Now: func() time.Time { return now },
			Enqueue:   func(p childcache.ParentKey) { enqueued = append(enqueued, p.Name.String()) },
			Reachable: func(_ string, ok bool) { reachable = append(reachable, ok) }})
	if _, err := f.Place("w1", nil); err != nil {
		t.Fatal(err)
	}
	gk := schema.GroupKind{Group: "example.loom.dev", Kind: "App"}
	f.Use("u1", childcache.ParentKey{GroupKind: gk, Name: cache.ObjectName{Namespace: "team-a", Name: "web"}}, []string{"", "w1"})
	f.Use("u2", childcache.ParentKey{GroupKind: gk, Name: cache.ObjectName{Namespace: "team-a", Name: "local"}}, []string{""})
	f.mu.Lock()
	r := f.remotes["w1"]
	f.mu.Unlock()

	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	f.probed("w1", r, refused)
	f.probed("w1", r, refused) // no change: nothing more
	now = now.Add(time.Hour)   // past any backoff: still down
	_, err := f.Place("w1", nil)
	var down *DownError
	if !errors.As(err, &down) || !errors.Is(err, refused) {
		t.Fatalf("Place() while the probe finds no answer = %v, want a *DownError wrapping it", err)
	}
	if diff := cmp.Diff([]string{"team-a/web"}, enqueued); diff != "" {
		t.Errorf("parents re-reconciled when the cluster went down (-want +got):\n%s", diff)
	}

	f.markDown("w1", refused) // a reconcile's own backoff, then an answer
	f.probed("w1", r, nil)
	f.probed("w1", r, nil)
	if _, err := f.Place("w1", nil); err != nil {
		t.Fatalf("Place() once the probe finds an answer = %v", err)
	}
	if diff := cmp.Diff([]string{"team-a/web", "team-a/web"}, enqueued); diff != "" {
		t.Errorf("parents re-reconciled when the cluster went down and up (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, true}, reachable); diff != "" {
		t.Errorf("reachability reported (-want +got):\n%s", diff)
	}
}
