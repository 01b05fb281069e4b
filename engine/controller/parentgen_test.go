package controller

import (
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/loom-operator/loom/engine/controller/metrics"
	"github.com/loom-operator/loom/engine/pack"
)

// genParent returns the parent ns/name with uid at resourceVersion rv,
// packed as the parent informers hold it.
func genParent(t *testing.T, name string, uid types.UID, rv string) *pack.Packed {
	t.Helper()
	return packParent(t, u(t, fmt.Sprintf(`
apiVersion: example.loom.dev/v1alpha1
kind: MyResource
metadata: {name: %s, namespace: ns, uid: %s, resourceVersion: %q, generation: 1}
spec: {replicas: 1}
`, name, uid, rv)))
}

// queued takes every key out of q, sorted.
func queued(q workqueue.TypedRateLimitingInterface[cache.ObjectName]) []string {
	var out []string
	for q.Len() > 0 {
		k, _ := q.Get()
		out = append(out, k.String())
		q.Done(k)
	}
	sort.Strings(out)
	return out
}

// newGenTest returns a controller whose live generation caches prev, and
// a generation that follows it, not live yet, as reshard builds one.
func newGenTest(t *testing.T, prev ...*pack.Packed) (*Controller, *parentGen) {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
	t.Cleanup(q.ShutDown)
	c := newTestController(q)
	c.sh = &Shared{Metrics: metrics.New(nil)}
	for _, p := range prev {
		if err := c.store().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	g := &parentGen{prev: c.store(), states: &metrics.ParentStates{},
		informer: cache.NewSharedIndexInformer(&cache.ListWatch{}, &pack.Packed{}, 0, cache.Indexers{})}
	return c, g
}

func TestParentGenKeepsOnlyWhatThePreviousDidNotHold(t *testing.T) {
	prev := []*pack.Packed{
		genParent(t, "same", "u-same", "1"),
		genParent(t, "newer", "u-newer", "1"),
		genParent(t, "recreated", "u-old", "1"),
	}
	tests := []struct {
		name  string
		event func(h cache.ResourceEventHandler)
		want  []string // the keys kept for the swap
	}{
		{"held by the previous at the same UID and resourceVersion", func(h cache.ResourceEventHandler) {
			h.OnAdd(genParent(t, "same", "u-same", "1"), true)
		}, nil},
		{"held by the previous at an older resourceVersion", func(h cache.ResourceEventHandler) {
			h.OnAdd(genParent(t, "newer", "u-newer", "2"), true)
		}, []string{"ns/newer"}},
		{"held by the previous under another UID at the same resourceVersion", func(h cache.ResourceEventHandler) {
			h.OnAdd(genParent(t, "recreated", "u-new", "1"), true)
		}, []string{"ns/recreated"}},
		{"not held by the previous", func(h cache.ResourceEventHandler) {
			h.OnAdd(genParent(t, "fresh", "u-fresh", "1"), true)
		}, []string{"ns/fresh"}},
		{"updated to a version the previous does not hold", func(h cache.ResourceEventHandler) {
			h.OnUpdate(genParent(t, "same", "u-same", "1"), genParent(t, "same", "u-same", "2"))
		}, []string{"ns/same"}},
		{"updated to the version the previous holds", func(h cache.ResourceEventHandler) {
			h.OnUpdate(genParent(t, "same", "u-same", "0"), genParent(t, "same", "u-same", "1"))
		}, nil},
		{"deleted: the previous, live, sees it", func(h cache.ResourceEventHandler) {
			h.OnDelete(genParent(t, "newer", "u-newer", "1"))
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, g := newGenTest(t, prev...)
			tt.event(c.genHandler(g))
			if got := queued(c.queue); len(got) != 0 {
				t.Errorf("enqueued %v before the generation is live, want nothing", got)
			}
			var got []string
			for _, k := range g.pending {
				got = append(got, k.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("kept keys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParentGenSwap(t *testing.T) {
	c, g := newGenTest(t, genParent(t, "same", "u-same", "1"))
	old := c.gen.Load()
	stopped := false
	old.stop = func() { stopped = true }
	oldH, newH := c.genHandler(old), c.genHandler(g)
	newH.OnAdd(genParent(t, "same", "u-same", "1"), true)
	newH.OnAdd(genParent(t, "fresh", "u-fresh", "1"), true)
	newH.OnAdd(genParent(t, "other", "u-other", "1"), true)
	// The live generation enqueues at once, until the swap.
	oldH.OnAdd(genParent(t, "same", "u-same", "2"), false)
	if diff := cmp.Diff([]string{"ns/same"}, queued(c.queue)); diff != "" {
		t.Fatalf("enqueued by the live generation (-want +got):\n%s", diff)
	}

	c.swap(g)
	if c.gen.Load() != g {
		t.Fatal("the new generation does not serve the reconciles after the swap")
	}
	if !stopped {
		t.Error("the previous generation's informer was not stopped")
	}
	if diff := cmp.Diff([]string{"ns/fresh", "ns/other"}, queued(c.queue)); diff != "" {
		t.Errorf("enqueued by the swap (-want +got):\n%s", diff)
	}

	// The retired generation's events, still in flight, are ignored.
	key := cache.NewObjectName("ns", "same")
	c.unserved[key] = true
	oldH.OnAdd(genParent(t, "gone", "u-gone", "1"), false)
	oldH.OnUpdate(genParent(t, "same", "u-same", "3"), genParent(t, "same", "u-same", "3")) // a resync
	oldH.OnDelete(genParent(t, "same", "u-same", "3"))
	if got := queued(c.queue); len(got) != 0 {
		t.Errorf("the retired generation enqueued %v, want nothing", got)
	}
	if !c.unserved[key] {
		t.Error("the retired generation's delete made the controller forget a parent")
	}

	// The new one, live now, handles its events at once.
	newH.OnUpdate(genParent(t, "same", "u-same", "3"), genParent(t, "same", "u-same", "3"))
	newH.OnDelete(genParent(t, "same", "u-same", "3"))
	if diff := cmp.Diff([]string{"ns/same"}, queued(c.queue)); diff != "" {
		t.Errorf("enqueued by the live generation (-want +got):\n%s", diff)
	}
	if c.unserved[key] {
		t.Error("the live generation's delete did not make the controller forget the parent")
	}
}
