package controller

// Unit tests of what a parent controller keeps per parent, and when it
// drops it. What its status writer remembers, and when that is dropped,
// is tested in engine/controller/statuswriter; here, that the controller
// tells the writer.

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/loom-operator/loom/engine/controller/statuswriter"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
)

// fakeStatus is the status writer of a test controller: it writes
// nothing, and records what the controller tells it.
type fakeStatus struct {
	mu sync.Mutex
	// remembered are the parents it keeps state of, until forgotten.
	remembered map[types.UID]bool
	// caughtUp are the versions the controller said the cache holds, as
	// uid@resourceVersion.
	caughtUp []string
	// noStatus are the parents RetryNoStatus names.
	noStatus map[types.UID]bool
}

func (f *fakeStatus) Write(context.Context, *render.Set, *unstructured.Unstructured, statuswriter.Hub, status.Input) error {
	return fmt.Errorf("a test controller writes no status")
}

func (f *fakeStatus) Previous(parent *unstructured.Unstructured) *unstructured.Unstructured {
	return parent
}

func (f *fakeStatus) CaughtUp(uid types.UID, rv string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.caughtUp = append(f.caughtUp, string(uid)+"@"+rv)
}

func (f *fakeStatus) Forget(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.remembered, uid)
}

func (f *fakeStatus) RetryNoStatus() map[types.UID]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.noStatus
}

func (f *fakeStatus) RecordDrift(context.Context, *unstructured.Unstructured, object.ChangeSet) {}

// parentState is what a controller keeps per parent, in a form cmp can
// compare: Status are the parents its status writer keeps state of.
type parentState struct {
	Status   []types.UID
	Unserved []string
}

func stateOf(c *Controller) parentState {
	f := c.status.(*fakeStatus)
	f.mu.Lock()
	defer f.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	var s parentState
	for uid := range f.remembered {
		s.Status = append(s.Status, uid)
	}
	for k := range c.unserved {
		s.Unserved = append(s.Unserved, k.String())
	}
	return s
}

// stateController returns a controller with a queue of its own, shut down
// when the test ends, for tests that read only its per-parent state.
func stateController(t *testing.T) *Controller {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
	t.Cleanup(q.ShutDown)
	return newTestController(q)
}

// remember records every kind of per-parent state for the parent: its
// status writer's, and its wait for a child kind.
func remember(c *Controller, parent *unstructured.Unstructured) {
	f := c.status.(*fakeStatus)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.remembered == nil {
		f.remembered = map[types.UID]bool{}
	}
	f.remembered[parent.GetUID()] = true
	c.mu.Lock()
	defer c.mu.Unlock()
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
		}, parentState{Status: []types.UID{"u1"}, Unserved: []string{"ns/web"}}, []string{"ns/web"}},
		{"another parent deleted: kept", func(t *testing.T, c *Controller, web *unstructured.Unstructured) {
			other := web.DeepCopy()
			other.SetName("other")
			other.SetUID("u9")
			c.onDelete(packParent(t, other))
		}, parentState{Status: []types.UID{"u1"}, Unserved: []string{"ns/web"}}, nil},
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
			parentState{Status: []types.UID{"u1"}, Unserved: []string{"ns/web"}}},
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

// Every update event of a parent tells the status writer which version
// the cache holds now, status-only ones included: a status write
// triggers no reconcile, and its echo is what lets the writer drop its
// copy of the status (statuswriter.Writer.CaughtUp).
func TestUpdatesTellTheStatusWriterWhatTheCacheHolds(t *testing.T) {
	c := stateController(t)
	old := u(t, parentYAML)
	old.SetResourceVersion("8")
	cur := old.DeepCopy()
	cur.SetResourceVersion("10")
	cur.Object["status"] = map[string]any{"state": "Ready"} // status only: no reconcile
	c.onUpdate(packParent(t, old), packParent(t, cur))
	if diff := cmp.Diff([]string{"u1@10"}, c.status.(*fakeStatus).caughtUp); diff != "" {
		t.Errorf("versions told to the status writer (-want +got):\n%s", diff)
	}
	if got := c.queue.Len(); got != 0 {
		t.Errorf("a status-only update queued %d parents, want 0", got)
	}
}

// A CRD change reconciles again the parents whose CRD had no status
// subresource, as the status writer names them, and only those.
func TestCRDChangeRetriesTheParentsWithoutStatusSubresource(t *testing.T) {
	c := stateController(t)
	c.running.Store(true)
	web := u(t, parentYAML)
	other := web.DeepCopy()
	other.SetName("other")
	other.SetUID("u9")
	for _, p := range []*unstructured.Unstructured{web, other} {
		if err := c.store().Add(packParent(t, p)); err != nil {
			t.Fatal(err)
		}
	}
	c.status.(*fakeStatus).noStatus = map[types.UID]bool{web.GetUID(): true}
	c.retryStatus()
	var got []string
	for c.queue.Len() > 0 {
		k, _ := c.queue.Get()
		got = append(got, k.String())
		c.queue.Done(k)
	}
	if diff := cmp.Diff([]string{"ns/web"}, got); diff != "" {
		t.Errorf("a CRD change queued (-want +got):\n%s", diff)
	}
}
