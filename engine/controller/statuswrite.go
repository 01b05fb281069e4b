package controller

// Status writes, and the copy of the status Loom last wrote that a
// reconcile compares against while the parent cache lags behind it.

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/status"
)

// writtenStatus is the status Loom last wrote to a parent, kept while the
// cache is behind that write: the reconcile compares against it instead
// of the stale cache.
//
// resourceVersions are opaque (after an etcd restore they even go
// backwards), so whether the cache is behind is never read from their
// order: the cache is behind while it holds a version known to be older
// than the write (stale): the one the write was based on, the parent as
// the reconcile that wrote read it, and, when Loom wrote again before the
// cache caught up, the earlier writes' versions and what they were based
// on. A cache moves forward through a parent's versions, so any other
// version it holds or delivers is the write's or a later one, or the world
// as an etcd restore left it; in every case it is the parent as it is. One
// case costs more than it needs to: another writer's change to the parent
// that lands between Loom's read and its status write, seen by a reconcile
// before the write's echo, drops the copy early, and that reconcile
// applies the status again (a no-op on the server).
type writtenStatus struct {
	stale  []string
	wrote  string
	status map[string]any
}

// maxStale bounds the versions a writtenStatus remembers: writes chained
// faster than the cache follows are rare, and forgetting the oldest only
// drops the copy early (the old behaviour, which costs a no-op write).
const maxStale = 8

// beginWrite starts recording the versions of the parent with uid that
// the cache delivers while its status write is in flight, which
// rememberWritten takes; the returned func stops it, for a write that
// failed.
func (c *parentController) beginWrite(uid types.UID) (end func()) {
	c.mu.Lock()
	if c.inflight == nil {
		c.inflight = map[types.UID][]string{}
	}
	c.inflight[uid] = []string{}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.inflight, uid)
		c.mu.Unlock()
	}
}

// behind reports whether a cache at rv is behind the write.
func (w writtenStatus) behind(rv string) bool { return slices.Contains(w.stale, rv) }

// caughtUp drops the status Loom wrote to the parent with uid once the
// cache holds resourceVersion rv of it, if rv is not the version the write
// was based on (see writtenStatus). A status write triggers no reconcile (onUpdate ignores it), so this, and
// not the next reconcile (previous), is what keeps Loom from holding a
// copy of every parent's status at steady state.
func (c *parentController) caughtUp(uid types.UID, rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if seen, ok := c.inflight[uid]; ok {
		// A status write is in flight: rememberWritten decides, knowing
		// whether this version came before that write's or is it.
		if len(seen) < maxStale {
			c.inflight[uid] = append(seen, rv)
		}
		return
	}
	if w, ok := c.written[uid]; ok && !w.behind(rv) {
		delete(c.written, uid)
	}
}

// writeStatus computes the parent's status and writes it when it differs
// from what the parent has (or what Loom last wrote, while the cache lags
// behind that write). It records Events on transitions.
func (c *parentController) writeStatus(ctx context.Context, set *render.Set, parent *unstructured.Unstructured, in status.Input) error {
	prev := c.previous(parent)
	in.Parent = prev
	if in.Release == nil && set.Chart() != nil {
		// A chart set's release record outlives a reconcile that did not
		// get as far as its hooks (a failed render): losing it would
		// start the release over as an install, and run done hooks again.
		in.Release, _, _ = unstructured.NestedMap(prev.Object, "status", status.FieldRelease)
	}
	in.Rules = set.Config.Readiness
	in.Now = c.m.opts.Clock.Now()
	want := status.Compute(in)
	if status.Equal(want, prev) {
		return nil
	}
	c.mu.Lock()
	skip := c.noStatus[parent.GetUID()]
	c.mu.Unlock()
	if skip {
		return nil // its CRD has no status subresource; retried when CRDs change
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": parent.GetAPIVersion(),
		"kind":       parent.GetKind(),
		"metadata": map[string]any{
			"name": parent.GetName(), "namespace": parent.GetNamespace(), "uid": string(parent.GetUID()),
		},
		"status": want,
	}}
	defer c.beginWrite(parent.GetUID())()
	resp, err := c.m.client.Resource(c.gvr).Namespace(parent.GetNamespace()).ApplyStatus(ctx, parent.GetName(), obj,
		metav1.ApplyOptions{FieldManager: c.m.opts.FieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		c.noStatusSubresource(ctx, parent)
		return nil
	}
	if apierrors.IsConflict(err) && parent.GetDeletionTimestamp() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write status of %s %s/%s: %w", c.gvk.Kind, parent.GetNamespace(), parent.GetName(), err)
	}
	c.m.metrics.statusWrites.WithLabelValues(c.gvk.Kind).Inc()
	c.rememberWritten(parent, resp.GetResourceVersion(), want)
	c.recordTransitions(parent, prev, want)
	return nil
}

// rememberWritten keeps the status Loom wrote to parent (the object the
// write was based on), which the write gave resourceVersion rv, until the
// cache catches up with it (caughtUp, from the parent's update event).
// While the write was in flight, caughtUp only recorded the versions the
// cache delivered (beginWrite); here, knowing rv, they are sorted: the
// cache holds this write already when it delivered rv (or holds it now),
// and otherwise every version it delivered or holds is older than the
// write, so stale. A write that changed nothing (rv is the version it was
// based on) leaves no copy: the cache holds that status already.
func (c *parentController) rememberWritten(parent *unstructured.Unstructured, rv string, st map[string]any) {
	uid := parent.GetUID()
	cachedRV := ""
	if id, ok := c.parentID(cache.MetaObjectToName(parent)); ok && id.GetUID() == uid {
		cachedRV = id.GetResourceVersion()
	}
	c.mu.Lock()
	delivered := c.inflight[uid] // since the write began, and after cachedRV's read
	delete(c.inflight, uid)
	if rv == parent.GetResourceVersion() {
		delete(c.written, uid)
		delete(c.noStatus, uid)
		c.mu.Unlock()
		return
	}
	stale := []string{parent.GetResourceVersion()}
	if prev, ok := c.written[uid]; ok && prev.behind(parent.GetResourceVersion()) {
		// Written again before the cache caught up with the last write:
		// that write's version is older than this one too.
		stale = append(slices.Clone(prev.stale), prev.wrote)
	}
	caught := cachedRV == rv || slices.Contains(delivered, rv)
	if !caught {
		// The cache may have moved on since this reconcile read the
		// parent, but not through this write's version: what it holds and
		// delivered came between the read and the write (an earlier
		// write's echo, say), so is older than this write.
		for _, v := range append(delivered, cachedRV) {
			if v != "" && !slices.Contains(stale, v) {
				stale = append(stale, v)
			}
		}
	}
	if len(stale) > maxStale {
		stale = stale[len(stale)-maxStale:]
	}
	if caught {
		delete(c.written, uid) // the cache holds this write, or a later version, already
	} else {
		c.written[uid] = writtenStatus{stale: stale, wrote: rv, status: st}
	}
	delete(c.noStatus, uid) // it has a status subresource now
	c.mu.Unlock()
}

// previous returns the parent with the newest status Loom knows of: the
// cached one, or the one Loom wrote if the cache still holds the version
// that write was based on (see writtenStatus).
// Once the cache has caught up, Loom's copy of the status is dropped.
func (c *parentController) previous(parent *unstructured.Unstructured) *unstructured.Unstructured {
	c.mu.Lock()
	w, ok := c.written[parent.GetUID()]
	caughtUp := ok && !w.behind(parent.GetResourceVersion())
	if caughtUp {
		// The cache holds what Loom wrote, or newer: keep no copy of it.
		delete(c.written, parent.GetUID())
	}
	c.mu.Unlock()
	if !ok || caughtUp {
		return c.newerStatus(parent)
	}
	p := parent.DeepCopy()
	p.Object["status"] = w.status
	return p
}

// newerStatus returns parent, as the reconcile read it, with the status
// of the cached parent when the cache moved on since that read: a status
// Loom wrote meanwhile is there (its copy dropped when the cache caught
// up), and comparing against the older one would stamp a new
// lastTransitionTime on conditions that did not change. The rest (the
// generation, which the status reports as observed) stays the read's: the
// children were rendered from it.
func (c *parentController) newerStatus(parent *unstructured.Unstructured) *unstructured.Unstructured {
	if c.gen.Load() == nil {
		return parent // not started
	}
	key := cache.MetaObjectToName(parent)
	id, ok := c.parentID(key)
	if !ok || id.GetUID() != parent.GetUID() || id.GetResourceVersion() == parent.GetResourceVersion() {
		return parent
	}
	cur, ok := c.parentGet(key)
	if !ok || cur.GetUID() != parent.GetUID() {
		return parent
	}
	p := parent.DeepCopy()
	if st, found := cur.Object["status"]; found {
		p.Object["status"] = st
	} else {
		delete(p.Object, "status")
	}
	return p
}

// markNoStatus skips the parent's status writes until CRDs change, and
// reports whether it is the first time it is found without a status
// subresource, that is, whether to tell.
func (c *parentController) markNoStatus(uid types.UID) (first bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, told := c.noStatus[uid]
	c.noStatus[uid] = true
	return !told
}

// noStatusSubresource handles a status write that found nothing. Usually
// the parent was just deleted. If it still exists, its CRD has no status
// subresource: that is said once per parent, in a Warning Event and the
// log, and the children are still applied. It costs one read, on that
// failure only.
func (c *parentController) noStatusSubresource(ctx context.Context, parent *unstructured.Unstructured) {
	if _, err := c.m.client.Resource(c.gvr).Namespace(parent.GetNamespace()).Get(ctx, parent.GetName(), metav1.GetOptions{}); err != nil {
		return
	}
	if !c.markNoStatus(parent.GetUID()) {
		return
	}
	msg := fmt.Sprintf("cannot write status: %s has no status subresource (for a CRD, add `subresources: {status: {}}` to version %s). Children are still applied.",
		c.gvr.GroupResource(), c.gvk.Version)
	klog.FromContext(ctx).Error(nil, "Cannot write status: no status subresource", "resource", c.gvr.String())
	c.m.recorder.Event(parent, corev1.EventTypeWarning, "StatusNotWritten", msg)
}
