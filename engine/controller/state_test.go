package controller

// Unit tests of what a parent controller keeps per parent, and when it
// drops it.

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// parentState is what a controller keeps per parent, in a form cmp can
// compare.
type parentState struct {
	Written  []types.UID
	NoStatus []types.UID
	Unserved []string
}

func stateOf(c *Controller) parentState {
	c.statuses.mu.Lock()
	defer c.statuses.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	var s parentState
	for uid := range c.statuses.written {
		s.Written = append(s.Written, uid)
	}
	for uid := range c.statuses.noStatus {
		s.NoStatus = append(s.NoStatus, uid)
	}
	for k := range c.unserved {
		s.Unserved = append(s.Unserved, k.String())
	}
	return s
}

// remember records every kind of per-parent state for the parent.
// stateController returns a controller with a queue of its own, shut down
// when the test ends, for tests that read only its per-parent state.
func stateController(t *testing.T) *Controller {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
	t.Cleanup(q.ShutDown)
	c := newTestController(q)
	c.statuses.written, c.statuses.noStatus = map[types.UID]writtenStatus{}, map[types.UID]bool{}
	return c
}

func remember(c *Controller, parent *unstructured.Unstructured) {
	c.statuses.mu.Lock()
	defer c.statuses.mu.Unlock()
	if c.statuses.written == nil {
		c.statuses.written, c.statuses.noStatus = map[types.UID]writtenStatus{}, map[types.UID]bool{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// A write based on the parent at resourceVersion 5, the version the
	// update events of these tests bring: the cache has not caught up.
	c.statuses.written[parent.GetUID()] = writtenStatus{stale: []string{"5"}, status: map[string]any{"state": "Ready"}}
	c.statuses.noStatus[parent.GetUID()] = true
	c.unserved[cache.MetaObjectToName(parent)] = true
}

func TestPerParentStateIsDroppedWithTheParent(t *testing.T) {
	tests := []struct {
		name string
		// event happens to the parent remembered as web (UID u1).
		event   func(t *testing.T, c *Controller, web *unstructured.Unstructured)
		want    parentState
		enqueue []string
	}{
		{"deleted", func(t *testing.T, c *Controller, web *unstructured.Unstructured) {
			c.onDelete(packParent(t, web))
		}, parentState{}, nil},
		{"deleted while the watch was down (tombstone)", func(t *testing.T, c *Controller, web *unstructured.Unstructured) {
			c.onDelete(cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: packParent(t, web)})
		}, parentState{}, nil},
		{"recreated under the same name while the watch was down", func(t *testing.T, c *Controller, web *unstructured.Unstructured) {
			cur := web.DeepCopy()
			cur.SetUID("u2")
			cur.SetResourceVersion("5")
			c.onUpdate(packParent(t, web), packParent(t, cur))
		}, parentState{}, []string{"ns/web"}},
		{"updated: kept", func(t *testing.T, c *Controller, web *unstructured.Unstructured) {
			cur := web.DeepCopy()
			cur.SetResourceVersion("5")
			cur.SetGeneration(2)
			c.onUpdate(packParent(t, web), packParent(t, cur))
		}, parentState{Written: []types.UID{"u1"}, NoStatus: []types.UID{"u1"}, Unserved: []string{"ns/web"}}, []string{"ns/web"}},
		{"another parent deleted: kept", func(t *testing.T, c *Controller, web *unstructured.Unstructured) {
			other := web.DeepCopy()
			other.SetName("other")
			other.SetUID("u9")
			c.onDelete(packParent(t, other))
		}, parentState{Written: []types.UID{"u1"}, NoStatus: []types.UID{"u1"}, Unserved: []string{"ns/web"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
			defer q.ShutDown()
			c := newTestController(q)
			web := u(t, parentYAML)
			remember(c, web)
			tt.event(t, c, web)
			if diff := cmp.Diff(tt.want, stateOf(c)); diff != "" {
				t.Errorf("state kept (-want +got):\n%s", diff)
			}
			var got []string
			for q.Len() > 0 {
				k, _ := q.Get()
				got = append(got, k.String())
				q.Done(k)
			}
			if diff := cmp.Diff(tt.enqueue, got); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
		})
	}
}

// A reconcile in flight when its parent is deleted may record state after
// the delete event dropped it; the worker drops it once the reconcile ends.
func TestStateRecordedByAReconcileOfADeletedParentIsDropped(t *testing.T) {
	tests := []struct {
		name string
		// cached is the parent in the cache when the reconcile ends.
		cached func(web *unstructured.Unstructured) *unstructured.Unstructured
		want   parentState
	}{
		{"still there: kept", func(web *unstructured.Unstructured) *unstructured.Unstructured { return web },
			parentState{Written: []types.UID{"u1"}, NoStatus: []types.UID{"u1"}, Unserved: []string{"ns/web"}}},
		{"deleted", func(*unstructured.Unstructured) *unstructured.Unstructured { return nil }, parentState{}},
		{"deleted and recreated", func(web *unstructured.Unstructured) *unstructured.Unstructured {
			cur := web.DeepCopy()
			cur.SetUID("u2")
			return cur
		}, parentState{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := stateController(t)
			web := u(t, parentYAML)
			remember(c, web) // by the reconcile, after the delete event
			if cur := tt.cached(web); cur != nil {
				if err := c.store().Add(packParent(t, cur)); err != nil {
					t.Fatal(err)
				}
			}
			c.forgetIfGone(cache.MetaObjectToName(web), web.GetUID())
			if diff := cmp.Diff(tt.want, stateOf(c)); diff != "" {
				t.Errorf("state kept (-want +got):\n%s", diff)
			}
		})
	}
}

// The status Loom wrote is kept only until the cache catches up with it:
// then the cached parent holds it, and a copy per parent would only cost
// memory.
func TestWrittenStatusIsDroppedOnceTheCacheCatchesUp(t *testing.T) {
	c := &Controller{statuses: statusMemory{written: map[types.UID]writtenStatus{}}}
	parent := u(t, parentYAML)
	parent.SetUID("u1")
	c.statuses.written["u1"] = writtenStatus{stale: []string{"9"}, status: map[string]any{"state": "Ready"}}

	parent.SetResourceVersion("9") // the cache lags behind Loom's write, based on 9
	if got := c.previous(parent); got.Object["status"].(map[string]any)["state"] != "Ready" {
		t.Fatalf("previous with a lagging cache = %v, want the status Loom wrote", got.Object["status"])
	}
	if len(c.statuses.written) != 1 {
		t.Fatal("the written status was dropped before the cache caught up")
	}
	parent.SetResourceVersion("10")
	if got := c.previous(parent); got != parent {
		t.Fatal("previous with a current cache should be the cached parent")
	}
	if len(c.statuses.written) != 0 {
		t.Errorf("the written status is still kept after the cache caught up: %v", c.statuses.written)
	}
}

// The status Loom wrote is dropped as soon as the parent's watch event
// shows the cache has caught up with the write, not only at the parent's
// next reconcile: a status write triggers no reconcile, so at steady state
// that copy would be kept for every parent.
func TestWrittenStatusIsDroppedWhenTheWatchCatchesUp(t *testing.T) {
	tests := []struct {
		name     string
		eventRV  string
		uid      types.UID
		wantKept bool
	}{
		{"the echo of the write", "10", "u1", false},
		{"a newer update", "11", "u1", false},
		{"a late delivery of the version the write was based on", "9", "u1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := stateController(t)
			old := u(t, parentYAML)
			old.SetResourceVersion("8")
			c.statuses.written["u1"] = writtenStatus{stale: []string{"9"}, status: map[string]any{"state": "Ready"}}
			c.statuses.written["u9"] = writtenStatus{stale: []string{"4"}, status: map[string]any{"state": "Ready"}} // another parent's
			cur := old.DeepCopy()
			cur.SetUID(tt.uid)
			cur.SetResourceVersion(tt.eventRV)
			cur.Object["status"] = map[string]any{"state": "Ready"} // status only: no reconcile
			c.onUpdate(packParent(t, old), packParent(t, cur))
			if _, kept := c.statuses.written["u1"]; kept != tt.wantKept {
				t.Errorf("written status kept = %v, want %v", kept, tt.wantKept)
			}
			if _, kept := c.statuses.written["u9"]; !kept {
				t.Error("another parent's written status was dropped")
			}
		})
	}
}

// The watch event of a status write can reach the cache before the write's
// response reaches Loom: then no later event drops the copy Loom keeps, so
// it must not be kept at all. Which versions came while the write was in
// flight tells a newer update from an older one.
func TestWrittenStatusIsNotKeptWhenTheCacheIsAhead(t *testing.T) {
	tests := []struct {
		name     string
		cachedRV string
		cachedID types.UID
		// delivered are the versions the cache delivered while the write
		// was in flight.
		delivered []string
		wantKept  bool
	}{
		{"cache already holds the write", "10", "u1", nil, false},
		{"cache holds a newer update, delivered after the write's", "12", "u1", []string{"10", "12"}, false},
		{"cache holds a version delivered before the write's", "8", "u1", []string{"8"}, true},
		{"cache behind the write (at the version it was based on)", "1", "u1", nil, true},
		{"cache holds another object of that name", "10", "u2", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := stateController(t)
			parent := u(t, parentYAML)
			cached := parent.DeepCopy()
			cached.SetResourceVersion(tt.cachedRV)
			cached.SetUID(tt.cachedID)
			if err := c.store().Add(packParent(t, cached)); err != nil {
				t.Fatal(err)
			}
			end := c.statuses.beginWrite(parent.GetUID())
			for _, v := range tt.delivered {
				c.statuses.caughtUp(parent.GetUID(), v)
			}
			c.rememberWritten(parent, "10", map[string]any{"state": "Ready"})
			end()
			if _, kept := c.statuses.written[parent.GetUID()]; kept != tt.wantKept {
				t.Errorf("written status kept = %v, want %v", kept, tt.wantKept)
			}
		})
	}
}

// A parent whose CRD has no status subresource is told once: a CRD change
// lets its next reconcile try the write again, and finding no subresource
// again does not tell it again. Only a successful write, or the parent
// going, clears that.
func TestNoStatusSubresourceIsToldOnce(t *testing.T) {
	tests := []struct {
		name string
		// between happens after the first finding and a CRD change.
		between   func(c *Controller, parent *unstructured.Unstructured)
		wantFirst bool
	}{
		{"found again after a CRD change", func(*Controller, *unstructured.Unstructured) {}, false},
		{"written after the CRD gained it, then lost again", func(c *Controller, parent *unstructured.Unstructured) {
			c.rememberWritten(parent, "10", map[string]any{"state": "Ready"})
		}, true},
		{"the parent was deleted and recreated", func(c *Controller, parent *unstructured.Unstructured) {
			c.forget(cache.MetaObjectToName(parent), parent.GetUID())
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := stateController(t)
			c.running.Store(true)
			parent := u(t, parentYAML)
			if err := c.store().Add(packParent(t, parent)); err != nil {
				t.Fatal(err)
			}
			if !c.statuses.markNoStatus(parent.GetUID()) {
				t.Fatal("the first finding does not tell")
			}
			c.retryStatus()
			if got := c.queue.Len(); got != 1 {
				t.Errorf("a CRD change queued %d parents, want 1", got)
			}
			skip := c.statuses.skipped(parent.GetUID())
			if skip {
				t.Error("after a CRD change the status write is still skipped")
			}
			tt.between(c, parent)
			if got := c.statuses.markNoStatus(parent.GetUID()); got != tt.wantFirst {
				t.Errorf("second finding tells = %v, want %v", got, tt.wantFirst)
			}
		})
	}
}

// resourceVersions are opaque, and after an etcd restore they go
// backwards: a parent that comes back at a version below the one Loom's
// status write produced is the parent as it is now, not a cache that lags
// behind the write. Loom must compare against it (and drop its copy), not
// against a status the restored world does not hold.
func TestWrittenStatusAfterResourceVersionsWentBack(t *testing.T) {
	tests := []struct {
		name string
		// deliver is how the restored parent reaches the controller.
		deliver func(c *Controller, old, restored *unstructured.Unstructured) *unstructured.Unstructured
	}{
		{"its watch event", func(c *Controller, old, restored *unstructured.Unstructured) *unstructured.Unstructured {
			c.onUpdate(packParent(t, old), packParent(t, restored))
			return nil
		}},
		{"the next reconcile", func(c *Controller, old, restored *unstructured.Unstructured) *unstructured.Unstructured {
			return c.previous(restored)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := stateController(t)
			parent := u(t, parentYAML)
			parent.SetResourceVersion("990")
			c.rememberWritten(parent, "1000", map[string]any{"state": "Ready"})
			if _, kept := c.statuses.written[parent.GetUID()]; !kept {
				t.Fatal("the written status is not kept while the cache is behind the write")
			}
			restored := parent.DeepCopy()
			restored.SetResourceVersion("500")
			restored.Object["status"] = map[string]any{"state": "Progressing"}
			if got := tt.deliver(c, parent, restored); got != nil && got != restored {
				t.Errorf("previous = %v, want the restored parent", got.Object["status"])
			}
			if _, kept := c.statuses.written[parent.GetUID()]; kept {
				t.Error("the written status is kept after the parent came back at another version")
			}
		})
	}
}

// Two status writes in a row, both made while the cache still held the
// version before the first: the echo of the first write is older than
// the second, so it must not count as the cache catching up. Otherwise the
// next reconcile compares against the first write's status, finds Ready
// changed, and stamps a new lastTransitionTime on a condition that never
// changed (TestBadInputMatrix saw a good parent's Ready "change" a second
// after it became Ready).
func TestWrittenStatusSurvivesTheEchoOfAnEarlierWrite(t *testing.T) {
	c := stateController(t)
	parent := u(t, parentYAML)
	parent.SetResourceVersion("1")
	c.rememberWritten(parent, "2", map[string]any{"state": "Building"})
	c.rememberWritten(parent, "3", map[string]any{"state": "Ready"}) // the cache still held 1

	echo := parent.DeepCopy()
	echo.SetResourceVersion("2") // the first write's echo
	echo.Object["status"] = map[string]any{"state": "Building"}
	c.statuses.caughtUp(parent.GetUID(), "2")
	if got := c.previous(echo).Object["status"].(map[string]any)["state"]; got != "Ready" {
		t.Fatalf("previous with the cache at the first write = %v, want the second write's status", got)
	}
	latest := parent.DeepCopy()
	latest.SetResourceVersion("3")
	if got := c.previous(latest); got != latest {
		t.Fatal("previous with the cache at the second write should be the cached parent")
	}
	if _, kept := c.statuses.written[parent.GetUID()]; kept {
		t.Error("the written status is kept after the cache caught up with the last write")
	}
}

// A reconcile that read the parent at version 1 writes its status (3)
// after the cache moved on to 2, the echo of an earlier status write of
// Loom's whose copy the cache already replaced. Version 2 is older than 3,
// so a cache still at 2 is behind this write: the next reconcile must
// compare against what Loom wrote at 3, or it stamps a new
// lastTransitionTime on a Ready that did not change (TestBadInputMatrix,
// with other tests creating CRDs in parallel, saw it every run).
func TestWrittenStatusFromAnOlderReadThanTheCache(t *testing.T) {
	c := stateController(t)
	parent := u(t, parentYAML)
	parent.SetResourceVersion("1")
	cached := parent.DeepCopy()
	cached.SetResourceVersion("2")
	cached.Object["status"] = map[string]any{"state": "Building"}
	if err := c.store().Add(packParent(t, cached)); err != nil {
		t.Fatal(err)
	}
	c.rememberWritten(parent, "3", map[string]any{"state": "Ready"})
	if got := c.previous(cached).Object["status"].(map[string]any)["state"]; got != "Ready" {
		t.Fatalf("previous with the cache at 2 = %v, want the status Loom wrote at 3", got)
	}
	latest := parent.DeepCopy()
	latest.SetResourceVersion("3")
	if err := c.store().Update(packParent(t, latest)); err != nil {
		t.Fatal(err)
	}
	if got := c.previous(latest); got != latest {
		t.Fatal("previous with the cache at 3 should be the cached parent")
	}
}

// A reconcile reads its parent when it starts; by the time it computes the
// status, the cache may hold a newer version, with the status Loom wrote
// meanwhile (whose copy the cache's catching up dropped). The status to
// compare against is the newest: the cache's, not the reconcile's read,
// or a Ready that never changed gets a new lastTransitionTime
// (TestBadInputMatrix under load).
func TestPreviousStatusIsTheCachesWhenTheReadIsOlder(t *testing.T) {
	c := stateController(t)
	read := u(t, parentYAML)
	read.SetResourceVersion("1")
	read.SetGeneration(3)
	read.Object["status"] = map[string]any{"state": "Building"}
	cached := read.DeepCopy()
	cached.SetResourceVersion("2")
	cached.SetGeneration(4) // the spec changed too: the reconcile renders generation 3
	cached.Object["status"] = map[string]any{"state": "Ready"}
	if err := c.store().Add(packParent(t, cached)); err != nil {
		t.Fatal(err)
	}
	got := c.previous(read)
	if state := got.Object["status"].(map[string]any)["state"]; state != "Ready" {
		t.Errorf("previous status = %v, want the cache's newer one", state)
	}
	if got.GetGeneration() != 3 {
		t.Errorf("previous generation = %d, want the reconcile's read (3): its status describes that spec", got.GetGeneration())
	}
}
