package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/render"
)

// ownerIndex indexes children by the UID of their controller owner.
const ownerIndex = "loom.dev/owner-uid"

// childSelector selects only Loom's children, so that informers on child
// kinds cache nothing else.
var childSelector = render.LabelManagedBy + "=" + render.ManagedByValue + "," + render.LabelPartOf

// ownerEvent is a change to a child, routed to the child's controller owner.
type ownerEvent struct {
	ref       metav1.OwnerReference
	namespace string
	child     *unstructured.Unstructured
	deleted   bool
}

// childWatcher runs one informer per child kind, started lazily the first
// time a template renders that kind, shared by every parent controller.
type childWatcher struct {
	client    dynamic.Interface
	namespace string
	resync    time.Duration
	route     func(ownerEvent)

	mu        sync.Mutex
	ctx       context.Context
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer
}

func newChildWatcher(ctx context.Context, client dynamic.Interface, namespace string, resync time.Duration, route func(ownerEvent)) *childWatcher {
	return &childWatcher{
		client: client, namespace: namespace, resync: resync, route: route, ctx: ctx,
		informers: map[schema.GroupVersionResource]cache.SharedIndexInformer{},
	}
}

// ensure starts the informer for gvr if needed and waits for its cache to
// sync, so that the caller can trust what the cache says.
func (w *childWatcher) ensure(ctx context.Context, gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	w.mu.Lock()
	inf, ok := w.informers[gvr]
	if !ok {
		inf = w.newInformer(gvr)
		w.informers[gvr] = inf
		go inf.Run(w.ctx.Done())
		klog.FromContext(ctx).V(2).Info("Watching child kind", "resource", gvr.String())
	}
	w.mu.Unlock()
	if !inf.HasSynced() && !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("wait for %s cache to sync: %w", gvr, context.Cause(ctx))
	}
	return inf, nil
}

func (w *childWatcher) newInformer(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = childSelector }
	inf := dynamicinformer.NewFilteredDynamicInformer(w.client, gvr, w.namespace, w.resync,
		cache.Indexers{ownerIndex: indexByOwner}, tweak).Informer()
	_ = inf.SetTransform(stripManagedFields)
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.handle(obj, false) },
		UpdateFunc: func(old, cur any) { w.handleUpdate(old, cur) },
		DeleteFunc: func(obj any) { w.handle(obj, true) },
	})
	return inf
}

// handleUpdate ignores resyncs that changed nothing.
func (w *childWatcher) handleUpdate(old, cur any) {
	o, ok1 := old.(*unstructured.Unstructured)
	c, ok2 := cur.(*unstructured.Unstructured)
	if ok1 && ok2 && o.GetResourceVersion() == c.GetResourceVersion() {
		return
	}
	w.handle(cur, false)
}

// handle maps a child event to its controller owner.
func (w *childWatcher) handle(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(u)
	if ref == nil {
		return
	}
	w.route(ownerEvent{ref: *ref, namespace: u.GetNamespace(), child: u, deleted: deleted})
}

// owned returns the cached children whose controller owner has uid, across
// every child kind watched so far.
func (w *childWatcher) owned(uid types.UID) []*unstructured.Unstructured {
	w.mu.Lock()
	infs := make([]cache.SharedIndexInformer, 0, len(w.informers))
	for _, inf := range w.informers {
		infs = append(infs, inf)
	}
	w.mu.Unlock()
	var out []*unstructured.Unstructured
	for _, inf := range infs {
		objs, _ := inf.GetIndexer().ByIndex(ownerIndex, string(uid))
		for _, o := range objs {
			out = append(out, o.(*unstructured.Unstructured))
		}
	}
	return out
}

// get returns the cached child, or nil.
func (w *childWatcher) get(gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	w.mu.Lock()
	inf, ok := w.informers[gvr]
	w.mu.Unlock()
	if !ok {
		return nil
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, exists, _ := inf.GetIndexer().GetByKey(key)
	if !exists {
		return nil
	}
	return obj.(*unstructured.Unstructured)
}

func indexByOwner(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(u); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// stripManagedFields drops managedFields before objects enter a cache:
// Loom never reads them, and they are often half of an object's size.
func stripManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetManagedFields(nil)
	}
	return obj, nil
}
