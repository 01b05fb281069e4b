package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2/ktesting"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/object"
)

const routedChild = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  namespace: ns
  ownerReferences:
  - {apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: u1, controller: true}
data: {k: v}
`

// TestRouteDropsOwnEchoAndForgetsDeletedChildren checks the two things the
// Manager does to a child event before its parent's controller sees it:
// the watch echo of Loom's own apply is dropped (the reconcile that sent
// it already used the server's response), and a deleted child's apply
// record is forgotten, so that the next reconcile recreates it instead of
// taking the missing object for a cache still behind Loom's write.
func TestRouteDropsOwnEchoAndForgetsDeletedChildren(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	applies := 0
	client.PrependReactor("patch", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		applies++
		resp := u(t, routedChild)
		resp.SetUID("c1")
		resp.SetResourceVersion("7")
		return true, resp, nil
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)

	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
	defer q.ShutDown()
	c := newTestController(q)
	c.logger = ktesting.NewLogger(t, ktesting.NewConfig())
	c.running.Store(true)
	if err := c.store().Add(packParent(t, u(t, parentYAML))); err != nil {
		t.Fatal(err)
	}
	m := &Manager{
		applier:     apply.New(client, mapper, "loom"),
		controllers: map[schema.GroupKind]*Controller{{Group: "example.loom.dev", Kind: "MyResource"}: c},
	}
	apply := func() object.Result {
		t.Helper()
		r := m.applier.Apply(t.Context(), u(t, routedChild), nil)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		return r
	}
	event := func(rv string, deleted bool) childcache.OwnerEvent {
		child := u(t, routedChild)
		child.SetUID("c1")
		child.SetResourceVersion(rv)
		p := packChild(t, child)
		return childcache.OwnerEvent{Ref: *p.Controller(), Namespace: "ns", Child: p, Deleted: deleted}
	}
	enqueued := func() int {
		n := q.Len()
		for q.Len() > 0 {
			k, _ := q.Get()
			q.Forget(k)
			q.Done(k)
		}
		return n
	}

	if r := apply(); r.Action != object.Created || applies != 1 {
		t.Fatalf("first apply: %s after %d requests, want created after 1", r.Action, applies)
	}
	m.route(event("7", false))
	if n := enqueued(); n != 0 {
		t.Errorf("the echo of Loom's own apply (resourceVersion 7) enqueued the parent %d times, want 0", n)
	}
	m.route(event("8", false))
	if n := enqueued(); n != 1 {
		t.Errorf("another writer's change (resourceVersion 8) enqueued the parent %d times, want 1", n)
	}
	m.route(event("8", true))
	if n := enqueued(); n != 1 {
		t.Errorf("the child's deletion enqueued the parent %d times, want 1", n)
	}
	if r := apply(); r.Action != object.Created || applies != 2 {
		t.Errorf("apply after the child was deleted: %s after %d requests, want created after 2 (the record of the deleted child must be forgotten)", r.Action, applies)
	}
}
