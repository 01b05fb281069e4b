package controller

// The parent informer's event handlers, and the per-parent state they
// keep and drop.

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/packwatch"
)

// onUpdate enqueues a parent when something Loom renders from changed:
// its spec (generation), labels, annotations or deletion. Status-only
// updates, such as Loom's own status writes, are ignored, so writing status
// never triggers another reconcile. Periodic resyncs are let through.
//
// An update whose UID differs is a new object: the parent was deleted and
// created again under the same name while the watch was down, and the
// relist reports it as an update. It is always enqueued.
func (c *Controller) onUpdate(old, cur any) {
	if id, ok := packwatch.ID(cur); ok {
		c.status.CaughtUp(id.GetUID(), id.GetResourceVersion())
	}
	if c.rollouts != nil && c.rollouts.Active() {
		c.rollouts.Wake() // a moved parent's status may end a step
	}
	o, ok1 := packwatch.Unpack(old)
	n, ok2 := packwatch.Unpack(cur)
	if ok1 && ok2 && o.GetUID() != n.GetUID() {
		c.forget(cache.MetaObjectToName(o), o.GetUID())
	} else if ok1 && ok2 && !renderInputChanged(o, n) {
		return
	}
	c.enqueue(cur)
}

// renderInputChanged reports whether an update of one object changed what
// a render reads. A kind without metadata.generation (a built-in kind such
// as ConfigMap used as a parent) has no counter of spec changes, so for it
// every top-level field but status is compared.
func renderInputChanged(o, n *unstructured.Unstructured) bool {
	switch {
	case o.GetResourceVersion() == n.GetResourceVersion(): // a periodic resync
		return true
	case o.GetGeneration() != n.GetGeneration(),
		!mapsEqual(o.GetLabels(), n.GetLabels()),
		!mapsEqual(o.GetAnnotations(), n.GetAnnotations()),
		(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil):
		return true
	case n.GetGeneration() == 0:
		return !equality.Semantic.DeepEqual(withoutStatusAndMetadata(o), withoutStatusAndMetadata(n))
	}
	return false
}

// withoutStatusAndMetadata returns a shallow copy of obj's top-level fields
// without status and metadata (whose parts a render reads are compared
// on their own).
func withoutStatusAndMetadata(obj *unstructured.Unstructured) map[string]any {
	out := make(map[string]any, len(obj.Object))
	for k, v := range obj.Object {
		if k != "status" && k != "metadata" {
			out[k] = v
		}
	}
	return out
}

// onDelete forgets what Loom remembers of a deleted parent. Its children
// go with it: the garbage collector follows their ownerReferences.
func (c *Controller) onDelete(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	var uid types.UID
	if id, ok := packwatch.ID(obj); ok {
		uid = id.GetUID()
	}
	c.forget(key, uid)
	c.queue.Forget(key)
}

// forget drops everything kept per parent for the object key with uid:
// the status last written, the missing status subresource, and whether it
// waits for a child kind. It is called when that object is deleted or
// replaced by a new one of the same name.
func (c *Controller) forget(key cache.ObjectName, uid types.UID) {
	if c.sh != nil && c.sh.Cache != nil { // nil: a Manager that never ran
		pk := childcache.ParentKey{GroupKind: c.gvk.GroupKind(), Name: key}
		c.sh.Cache.Forget(pk)
		c.sh.Fleet.Use(uid, pk, nil)
	}
	c.status.Forget(uid)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.unserved, key)
}

// forgetIfGone forgets parent after a reconcile of it if the cache no
// longer holds it (or holds a new object of that name): the reconcile may
// have recorded state after the delete event dropped it.
func (c *Controller) forgetIfGone(key cache.ObjectName, uid types.UID) {
	if uid == "" {
		return
	}
	if cur, ok := c.parentUID(key); ok && cur == uid {
		return
	}
	c.forget(key, uid)
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// EnqueueAll enqueues every parent in the cache (template change, CRD change).
func (c *Controller) EnqueueAll() {
	if !c.running.Load() {
		return
	}
	for _, obj := range c.store().List() {
		c.enqueue(obj)
	}
}

// EnqueueUnserved enqueues the parents that wait for a child kind's CRD.
func (c *Controller) EnqueueUnserved() {
	if !c.running.Load() {
		return
	}
	c.mu.Lock()
	keys := make([]cache.ObjectName, 0, len(c.unserved))
	for k := range c.unserved {
		keys = append(keys, k)
	}
	c.mu.Unlock()
	for _, k := range keys {
		c.queue.Add(k)
	}
}

// retryStatus reconciles again the parents whose CRD had no status
// subresource, and lets their next reconcile try the write: a CRD changed,
// and may have gained one. They stay marked as told.
func (c *Controller) retryStatus() {
	if !c.running.Load() {
		return
	}
	uids := c.status.RetryNoStatus()
	if len(uids) == 0 {
		return
	}
	for _, obj := range c.store().List() {
		if id, ok := packwatch.ID(obj); ok && uids[id.GetUID()] {
			c.enqueue(obj)
		}
	}
}

// setUnserved records whether a parent waits for a child kind's CRD. The
// first parent to wait has the Manager refresh discovery with backoff
// until the kind is served.
func (c *Controller) setUnserved(key cache.ObjectName, waiting bool) {
	c.mu.Lock()
	first := waiting && len(c.unserved) == 0
	if waiting {
		c.unserved[key] = true
	} else {
		delete(c.unserved, key)
	}
	c.mu.Unlock()
	if first && c.sh != nil {
		c.sh.KindAwaited()
	}
}

// AwaitsKind reports whether the controller waits for its parent kind to be
// served, or one of its parents for a child kind.
func (c *Controller) AwaitsKind() bool {
	if c.awaiting.Load() {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.unserved) > 0
}

// OnChild enqueues the parent a child event belongs to, after checking
// that the cached parent is the very object (same UID) that owns the child.
func (c *Controller) OnChild(ev childcache.OwnerEvent) {
	if !c.running.Load() {
		return
	}
	key := cache.NewObjectName(ev.Namespace, ev.Ref.Name)
	if uid, ok := c.parentUID(key); !ok || uid != ev.Ref.UID {
		return
	}
	c.logger.V(4).Info("Child changed; enqueueing its parent", "parent", key.String(),
		"child", klog.KObj(ev.Child), "kind", ev.Child.GetKind(), "resourceVersion", ev.Child.GetResourceVersion())
	c.queue.Add(key)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
