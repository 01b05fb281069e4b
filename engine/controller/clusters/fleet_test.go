package clusters

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/cluster"
	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/transport"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/shard"
)

// kubeconfig reaches nothing; Place builds clients from it without
// contacting a server.
const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`

// A cluster that did not answer is taken as down for the backoff: Place
// fails at once, with its last error, so that a hung cluster holds no
// worker; a failure of that kind does not extend the backoff, and once it
// is over the cluster is tried again. A cluster that answered is up.
func TestFleetBacksOffAClusterThatDidNotAnswer(t *testing.T) {
	now := time.Unix(1000, 0)
	reg := cluster.Registration{Name: "w1", Kubeconfig: []byte(kubeconfig), Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1"}}
	f := NewFleet(context.Background(), &Registry{regs: map[string][]cluster.Registration{"w1": {reg}}},
		Options{Deadline: time.Minute, Backoff: 10 * time.Second, Now: func() time.Time { return now }})
	if _, err := f.Place("w1", nil); err != nil {
		t.Fatalf("Place() = %v", err)
	}
	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	failed := func(err error) object.ChangeSet {
		return object.ChangeSet{{Ref: object.Ref{Name: "web", Cluster: "w1"}, Action: object.Failed, Err: err}}
	}
	if got := f.Observe(failed(refused)); got["w1"] != refused {
		t.Fatalf("Observe() = %v, want w1 down", got)
	}
	_, err := f.Place("w1", nil)
	var down *DownError
	if !errors.As(err, &down) || !errors.Is(err, refused) {
		t.Fatalf("Place() while down = %v, want a *DownError wrapping the last error", err)
	}
	now = now.Add(9 * time.Second)
	f.Observe(failed(err)) // Place's own failure: the backoff is not extended
	now = now.Add(2 * time.Second)
	if _, err := f.Place("w1", nil); err != nil {
		t.Fatalf("Place() after the backoff = %v, want the cluster tried again", err)
	}
	f.Observe(failed(refused))
	f.Observe(object.ChangeSet{{Ref: object.Ref{Name: "web", Cluster: "w1"}, Action: object.Unchanged}})
	if _, err := f.Place("w1", nil); err != nil {
		t.Fatalf("Place() once the cluster answered = %v", err)
	}
}

// A cluster's clients and informers are stopped once no parent uses it,
// and not before a reconcile that placed children there has had time to
// say it uses it.
func TestFleetStopsAClusterNoParentUses(t *testing.T) {
	now := time.Unix(1000, 0)
	reg := cluster.Registration{Name: "w1", Kubeconfig: []byte(kubeconfig), Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1"}}
	f := NewFleet(context.Background(), &Registry{regs: map[string][]cluster.Registration{"w1": {reg}}},
		Options{Deadline: time.Minute, Now: func() time.Time { return now }})
	connected := func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.remotes["w1"] != nil
	}
	if _, err := f.Place("w1", nil); err != nil {
		t.Fatal(err)
	}
	f.Use("other", childcache.ParentKey{}, nil) // the reconcile that placed the child has not said so yet
	if !connected() {
		t.Fatal("stopped a cluster a reconcile placed children in just now")
	}
	f.Use("p1", childcache.ParentKey{}, []string{"", "w1"})
	now = now.Add(3 * time.Minute)
	f.Use("other", childcache.ParentKey{}, nil)
	if !connected() {
		t.Fatal("stopped a cluster a parent uses")
	}
	f.Use("p1", childcache.ParentKey{}, nil) // gone, or places nothing there any more
	if connected() {
		t.Fatal("a cluster no parent uses is still connected")
	}
	if _, err := f.Place("w1", nil); err != nil || !connected() {
		t.Fatalf("Place() after the stop = %v, want the cluster connected again", err)
	}
}

// refuseAll owns no parent.
type refuseAll struct{}

func (refuseAll) Owns(types.UID) bool { return false }

// On a sharded replica, a write to a workload cluster for a parent the
// replica no longer owns is refused before it leaves, as a local one is.
func TestFleetGuardsWritesOfParentsNotOwned(t *testing.T) {
	reg := cluster.Registration{Name: "w1", Kubeconfig: []byte(kubeconfig), Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1"}}
	f := NewFleet(context.Background(), &Registry{regs: map[string][]cluster.Registration{"w1": {reg}}},
		Options{Deadline: time.Minute, Owner: refuseAll{}})
	pl, err := f.Place("w1", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := transport.WithParentUID(context.Background(), "p1")
	err = pl.Client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("team-a").Delete(ctx, "web", metav1.DeleteOptions{})
	if !errors.Is(err, transport.ErrNotOwner) {
		t.Errorf("Delete() = %v, want transport.ErrNotOwner", err)
	}
}

// On a sharded replica, a workload cluster's cache lists only the
// children of the buckets the replica holds, as the local one does: a
// reconcile of a parent of another bucket finds its kind not watched.
func TestFleetShardsTheCachesOfWorkloadClusters(t *testing.T) {
	reg := cluster.Registration{Name: "w1", Kubeconfig: []byte(kubeconfig), Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1"}}
	f := NewFleet(context.Background(), &Registry{regs: map[string][]cluster.Registration{"w1": {reg}}},
		Options{Deadline: time.Minute, ParentUID: transport.ParentUIDFrom, Held: func() shard.Set { return shard.Set(0) }})
	pl, err := f.Place("w1", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := transport.WithParentUID(context.Background(), "p1")
	err = pl.Cache.Ensure(ctx, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, true)
	if err == nil || !strings.Contains(err.Error(), "not held by this replica") {
		t.Errorf("Ensure() for a parent of a bucket not held = %v, want its bucket not held", err)
	}
	f.Keep(shard.Set(0)) // no panic, nothing held still
}

// A workload cluster's clients take Loom's client-side rate limit (the
// one chosen for the cluster Loom runs in, from --kube-api-qps), not
// client-go's default of 5 requests a second: at that rate 1 000 parents
// with one child there took three times as long to be Ready (make
// bench-clusters).
func TestFleetClientsTakeLoomsRateLimit(t *testing.T) {
	reg := cluster.Registration{Name: "w1", Kubeconfig: []byte(kubeconfig), Secret: types.NamespacedName{Namespace: "loom-system", Name: "w1"}}
	tests := []struct {
		name      string
		qps       float32
		burst     int
		wantQPS   float32
		wantBurst int
	}{
		{name: "Loom's limit", qps: 200, burst: 400, wantQPS: 200, wantBurst: 400},
		{name: "no client-side limit (priority and fairness)", qps: -1, burst: 0, wantQPS: -1, wantBurst: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFleet(context.Background(), &Registry{regs: map[string][]cluster.Registration{"w1": {reg}}},
				Options{Deadline: time.Minute, QPS: tt.qps, Burst: tt.burst})
			cfg, err := f.restConfig(reg)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.QPS != tt.wantQPS || cfg.Burst != tt.wantBurst {
				t.Errorf("QPS, Burst = %v, %d; want %v, %d", cfg.QPS, cfg.Burst, tt.wantQPS, tt.wantBurst)
			}
		})
	}
}
