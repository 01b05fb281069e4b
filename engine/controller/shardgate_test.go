package controller

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/seed"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/shard"
)

// hookSharder is a fakeSharder that calls onEnter each time a reconcile
// enters a parent, and records the UIDs entered.
type hookSharder struct {
	fakeSharder
	onEnter func(types.UID)
	mu      sync.Mutex
	entered []types.UID
}

func (h *hookSharder) Enter(uid types.UID) (func(), bool) {
	h.mu.Lock()
	h.entered = append(h.entered, uid)
	h.mu.Unlock()
	if h.onEnter != nil {
		h.onEnter(uid)
	}
	return h.fakeSharder.Enter(uid)
}

// TestShardGateCoversTheParentTheReconcileActsOn: the gate a sharded
// reconcile enters, and the UID its writes carry for the guard, are those
// of the very parent it reconciles; a parent with no UID has no bucket and
// is not reconciled at all.
func TestShardGateCoversTheParentTheReconcileActsOn(t *testing.T) {
	const first = types.UID("first-widget")
	held := shard.Set(0).Add(shard.Bucket(first))
	second := uidOutside(t, held)
	tests := []struct {
		name   string
		cached types.UID // the UID of the parent in the cache
		// replaced, if set, is the UID of the parent that replaces it in
		// the cache while the worker enters the gate (deleted and created
		// again under its name, now in a bucket this replica does not hold).
		replaced types.UID
	}{
		{"replaced between the worker's read and the reconcile", first, second},
		{"a parent with no UID", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wrote, entered := reconcileSharded(t, held, tt.cached, tt.replaced)
			var outside []types.UID
			for _, uid := range wrote {
				if !slices.Contains(entered, uid) {
					outside = append(outside, uid)
				}
			}
			if diff := cmp.Diff([]types.UID(nil), outside); diff != "" {
				t.Errorf("writes for parents whose gate was not entered (entered %q) (-want +got):\n%s", entered, diff)
			}
		})
	}
}

// reconcileSharded runs one worker pass over the Widget ns/web, cached with
// UID cached, on a replica that holds held, and returns the UIDs of the
// parents whose status it wrote and the UIDs whose gate it entered. If
// replaced is not empty, the cached parent is replaced by one with that UID
// as the gate is entered. The set's template fails, so a reconcile writes
// the parent's status and nothing else.
func reconcileSharded(t *testing.T, held shard.Set, cached, replaced types.UID) (wrote, entered []types.UID) {
	t.Helper()
	m, _ := newFakeManager(t, nil)
	widget := func(uid types.UID) *pack.Packed {
		return packParent(t, u(t, fmt.Sprintf(`
apiVersion: example.com/v1
kind: Widget
metadata: {name: web, namespace: ns, uid: %q, resourceVersion: "1", generation: 1}
`, uid)))
	}
	var mu sync.Mutex
	client := m.client.(*dynamicfake.FakeDynamicClient)
	client.PrependReactor("patch", "widgets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchAction)
		var obj unstructured.Unstructured
		if err := json.Unmarshal(p.GetPatch(), &obj.Object); err != nil {
			t.Errorf("status patch %s: %v", p.GetPatch(), err)
		}
		mu.Lock()
		wrote = append(wrote, obj.GetUID())
		mu.Unlock()
		obj.SetResourceVersion("2")
		return true, &obj, nil
	})
	set, err := render.LoadFS(fstest.MapFS{
		"loom.yaml":      {Data: []byte("parent: {apiVersion: example.com/v1, kind: Widget}\n")},
		"configmap.yaml": {Data: []byte("{{ fail \"broken\" }}\n")},
	}, "widget")
	if err != nil {
		t.Fatal(err)
	}
	c := newWidgetController(m)
	c.set.Store(set)
	c.gvr = widgetGVR
	c.queue = newParentQueue(widgetGVK, noopProvider{})
	t.Cleanup(c.queue.ShutDown)
	c.gen.Store(&parentGen{informer: cache.NewSharedIndexInformer(&cache.ListWatch{}, &pack.Packed{}, 0, cache.Indexers{}), live: true})
	if err := c.store().Add(widget(cached)); err != nil {
		t.Fatal(err)
	}
	sh := &hookSharder{fakeSharder: fakeSharder{held: held}}
	if replaced != "" {
		sh.onEnter = func(types.UID) {
			if err := c.store().Update(widget(replaced)); err != nil {
				t.Error(err)
			}
		}
	}
	c.sh.Shard = sh
	ctx := klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig()))
	c.sh.Cache = childcache.New(ctx, childcache.Config{Dynamic: m.client, Enqueue: func(childcache.ParentKey) {}})
	c.sh.Seeds = seed.NewStore(m.client)

	c.queue.Add(cache.NewObjectName("ns", "web"))
	if !c.processNextItem(ctx) {
		t.Fatal("the worker stopped")
	}
	if cached != "" && len(wrote) == 0 {
		t.Fatal("the reconcile wrote no status; the test proves nothing")
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return wrote, sh.entered
}
