package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/status"
)

// Children to keep (object.AnnotationDeletePolicy orphan) outlive their
// parent, by two means, each enough for the garbage collector:
//
//   - A namespaced child to keep also names its Namespace as an owner
//     (object.AddNamespaceOwner), so the collector, in any propagation
//     mode (background, foreground) and whether Loom runs or not, only
//     drops its reference to the deleted parent. Deleting the namespace
//     deletes the child, as any object in it.
//   - The parent carries object.FinalizerOrphan, and the group-kinds of
//     those children in object.AnnotationOrphanKinds, from before the first
//     such child is applied until none is left; when the parent is
//     deleted, Loom lists those kinds afresh, releases the parent's
//     children to keep (apply.Release: no ownerReference or label of
//     Loom's left, so no Loom claims them) and only then removes the
//     finalizer. A parent without such children never gets the finalizer.
//     A cluster-scoped child to keep (of a cluster-scoped parent) has no
//     Namespace: the finalizer alone protects it, from background deletion.

// patchOp is one operation of a JSON patch (RFC 6902).
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// orphanKinds returns the group-kinds of the objects in lists that carry
// the orphan policy: children to keep, rendered or cached.
func orphanKinds(lists ...[]*unstructured.Unstructured) []schema.GroupKind {
	var out []schema.GroupKind
	for _, list := range lists {
		for _, o := range list {
			if object.IsOrphan(o.GetAnnotations()) {
				out = append(out, o.GroupVersionKind().GroupKind())
			}
		}
	}
	return out
}

// guard is a finalizer Loom puts on a parent while some of its children
// need Loom when the parent is deleted, with the annotation that lists
// those children's group-kinds (so that Loom lists exactly those kinds
// then, even after a restart with no cache).
type guard struct {
	finalizer, annotation string
}

var (
	// orphanGuard keeps a parent until its children to keep are released.
	orphanGuard = guard{object.FinalizerOrphan, object.AnnotationOrphanKinds}
	// clusterGuard keeps a namespaced parent until its cluster-scoped
	// children are deleted (clusterchildren.go).
	clusterGuard = guard{object.FinalizerClusterChildren, object.AnnotationClusterKinds}
)

// finalizerPatch returns the JSON patch that gives parent g's finalizer
// with want (and the kinds it lists already: the list only grows while the
// finalizer stays, so a kind is never forgotten while a child of it may be
// owned) in g's annotation, or nil when it has them. With want empty it
// returns nil: removing the finalizer takes a check of the live children
// first (see removeFinalizerPatch). The patch is conditional on parent's
// UID and resourceVersion.
func finalizerPatch(parent *unstructured.Unstructured, g guard, want []schema.GroupKind) []patchOp {
	if len(want) == 0 {
		return nil
	}
	ann := parent.GetAnnotations()
	have := ann[g.annotation]
	kinds := object.FormatGroupKinds(append(object.ParseGroupKinds(have), want...))
	fins := parent.GetFinalizers()
	hasFin := slices.Contains(fins, g.finalizer)
	if hasFin && kinds == have {
		return nil
	}
	ops := preconditions(parent)
	switch {
	case hasFin:
	case fins == nil:
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/finalizers", Value: []string{g.finalizer}})
	default:
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/finalizers/-", Value: g.finalizer})
	}
	if ann == nil {
		return append(ops, patchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{g.annotation: kinds}})
	}
	return append(ops, patchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(g.annotation), Value: kinds})
}

// removeFinalizerPatch returns the JSON patch that removes g's finalizer
// and annotation from parent, or nil when it has neither.
func removeFinalizerPatch(parent *unstructured.Unstructured, g guard) []patchOp {
	ops := preconditions(parent)
	pre := len(ops)
	fins := parent.GetFinalizers()
	for i := len(fins) - 1; i >= 0; i-- {
		if fins[i] == g.finalizer {
			ops = append(ops, patchOp{Op: "remove", Path: "/metadata/finalizers/" + strconv.Itoa(i)})
		}
	}
	if _, ok := parent.GetAnnotations()[g.annotation]; ok {
		ops = append(ops, patchOp{Op: "remove", Path: "/metadata/annotations/" + escapePointer(g.annotation)})
	}
	if len(ops) == pre {
		return nil
	}
	return ops
}

// has reports whether parent carries g's finalizer or its annotation.
func (g guard) has(parent *unstructured.Unstructured) bool {
	_, ann := parent.GetAnnotations()[g.annotation]
	return ann || slices.Contains(parent.GetFinalizers(), g.finalizer)
}

// preconditions make a patch apply only to obj as it was read: the same
// object (UID), unchanged since (resourceVersion, which the API server
// checks, answering a Conflict).
func preconditions(obj *unstructured.Unstructured) []patchOp {
	return []patchOp{
		{Op: "test", Path: "/metadata/uid", Value: string(obj.GetUID())},
		{Op: "replace", Path: "/metadata/resourceVersion", Value: obj.GetResourceVersion()},
	}
}

// escapePointer escapes a JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// protectOrphans readies rendered, a render pass's children, for the apply:
// each namespaced child to keep is given its Namespace as an owner, and the
// parent the orphan finalizer (guardOrphans). It returns the parent as last
// written, and an error that holds the children to keep back.
func (c *parentController) protectOrphans(ctx context.Context, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	uids := map[string]types.UID{}
	for _, child := range rendered {
		ns := child.GetNamespace()
		if ns == "" || !object.IsOrphan(child.GetAnnotations()) {
			continue
		}
		if _, ok := uids[ns]; !ok {
			n, err := c.m.client.Resource(namespacesGVR).Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return parent, fmt.Errorf("read namespace %s, the owner of children to keep: %w", ns, err)
			}
			uids[ns] = n.GetUID()
		}
		object.AddNamespaceOwner(child, uids[ns])
	}
	return c.guardOrphans(ctx, parent, rendered)
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// guardOrphans makes sure parent carries the orphan finalizer, listing the
// kind of every child to keep among children (rendered, or cached), before
// any of them is applied. It returns the parent as last written (or
// parent), for the next pass of the reconcile.
func (c *parentController) guardOrphans(ctx context.Context, parent *unstructured.Unstructured, children ...[]*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	want := orphanKinds(children...)
	ops := finalizerPatch(parent, orphanGuard, want)
	if ops == nil {
		return parent, nil
	}
	resp, err := c.patchParent(ctx, parent, ops)
	if err != nil {
		return parent, fmt.Errorf("add finalizer %s to %s %s/%s before applying children to keep: %w",
			object.FinalizerOrphan, c.gvk.Kind, parent.GetNamespace(), parent.GetName(), err)
	}
	klog.FromContext(ctx).V(2).Info("Added the orphan finalizer", "kinds", resp.GetAnnotations()[object.AnnotationOrphanKinds])
	return resp, nil
}

// settleOrphanFinalizer runs after prune. While parent has children to
// keep, rendered or live (the rendered children as this reconcile's applies
// left them, or the cache has them: a child annotated by hand counts too),
// its finalizer lists their kinds; once it has none, and a fresh list finds
// none either (the cache may not hold a child just applied yet), the
// finalizer goes. The live objects are the apply's answers where it wrote,
// not the cache: the watch echo of Loom's own write does not enqueue the
// parent again, so a decision on a cache behind that write would stand.
//
// It returns the parent as last written (or parent).
func (c *parentController) settleOrphanFinalizer(ctx context.Context, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured, live map[object.Ref]*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	kept := liveList(live)
	if len(orphanKinds(rendered, kept)) > 0 {
		return c.guardOrphans(ctx, parent, rendered, kept)
	}
	if !orphanGuard.has(parent) {
		return parent, nil
	}
	left, err := c.listOrphans(ctx, parent)
	if err != nil || len(left) > 0 {
		return parent, err
	}
	return c.removeFinalizer(ctx, parent, orphanGuard)
}

// liveList returns the objects of live, in no particular order.
func liveList(live map[object.Ref]*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(live))
	for _, l := range live {
		out = append(out, l)
	}
	return out
}

// finalize runs when parent is being deleted: it releases the parent's
// children to keep and removes the orphan finalizer, then deletes its
// cluster-scoped children and, once they are gone, removes the
// cluster-children finalizer (clusterchildren.go). A parent without either
// finalizer has nothing to do: the garbage collector deletes its children.
// Any failure leaves the finalizer, and is retried; while the deletion
// waits on anything but Loom's own pace, the parent's status says why
// (Degraded: DeletionBlocked), and so does the Warning Event of that
// condition's transition.
func (c *parentController) finalize(ctx context.Context, parent *unstructured.Unstructured) error {
	id, err := c.identityFinalizing(parent)
	if err != nil {
		return err
	}
	ctx = withIdentity(ctx, id)
	if orphanGuard.has(parent) {
		err = c.releaseOrphans(ctx, parent)
		if err == nil {
			parent, err = c.removeFinalizer(ctx, parent, orphanGuard)
		}
		if err != nil && !apierrors.IsConflict(err) {
			c.m.recorder.Eventf(parent, corev1.EventTypeWarning, "OrphanReleaseFailed",
				"%s waits for its children to keep to be released (finalizer %s): %v", c.gvk.Kind, object.FinalizerOrphan, err)
		}
	}
	if err == nil && clusterGuard.has(parent) {
		var pending bool
		pending, err = c.deleteClusterChildren(ctx, parent)
		switch {
		case err == nil && pending:
			// Deleted just now: their delete events bring the parent back;
			// the delay is a bound should an event be missed.
			c.queue.AddAfter(cache.NewObjectName(parent.GetNamespace(), parent.GetName()), time.Second)
			return nil
		case err == nil:
			parent, err = c.removeFinalizer(ctx, parent, clusterGuard)
		}
	}
	if err != nil && !apierrors.IsConflict(err) {
		// A conflict is only a cache behind the parent, retried at once.
		rev, _, _ := unstructured.NestedString(parent.Object, "status", "templateRevision")
		if serr := c.writeStatus(ctx, c.set.Load(), parent, status.Input{Deleting: err, Revision: rev}); serr != nil {
			return errors.Join(err, serr)
		}
	}
	return err
}

// releaseOrphans releases parent's children to keep, listed afresh.
func (c *parentController) releaseOrphans(ctx context.Context, parent *unstructured.Unstructured) error {
	kept, err := c.listOrphans(ctx, parent)
	if err != nil {
		return err
	}
	cs := c.applier(ctx).Release(ctx, kept, parent.GetUID())
	c.m.metrics.observeChanges(c.gvk.Kind, cs)
	c.recordOrphans(ctx, parent, cs, "before "+c.gvk.Kind+" "+parent.GetName()+" is deleted")
	return cs.Err()
}

// removeFinalizer removes g's finalizer and annotation from parent, and
// returns the parent as that patch left it (or parent, when there was
// nothing to remove or the parent is gone).
func (c *parentController) removeFinalizer(ctx context.Context, parent *unstructured.Unstructured, g guard) (*unstructured.Unstructured, error) {
	ops := removeFinalizerPatch(parent, g)
	if ops == nil {
		return parent, nil
	}
	resp, err := c.patchParent(ctx, parent, ops)
	if apierrors.IsNotFound(err) {
		return parent, nil
	}
	if err != nil {
		return parent, fmt.Errorf("remove finalizer %s from %s %s/%s: %w", g.finalizer, c.gvk.Kind, parent.GetNamespace(), parent.GetName(), err)
	}
	klog.FromContext(ctx).V(2).Info("Removed a finalizer", "finalizer", g.finalizer)
	return resp, nil
}

// patchParent JSON-patches parent with ops (which are conditional on its
// resourceVersion).
func (c *parentController) patchParent(ctx context.Context, parent *unstructured.Unstructured, ops []patchOp) (*unstructured.Unstructured, error) {
	body, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	return c.m.client.Resource(c.gvr).Namespace(parent.GetNamespace()).Patch(ctx, parent.GetName(), types.JSONPatchType, body,
		metav1.PatchOptions{FieldManager: c.m.opts.FieldManager})
}

// isOrDroppedChildOf reports whether obj is parent's child, or was until
// the garbage collector dropped its reference to parent (a child to keep
// also owned by its Namespace, when parent is deleted in the foreground or
// while Loom is stopped): it has no controller and parent's ApplySet label.
func isOrDroppedChildOf(obj, parent *unstructured.Unstructured) bool {
	if object.IsChildOf(obj, parent) {
		return true
	}
	return metav1.GetControllerOfNoCopy(obj) == nil && obj.GetLabels()[object.LabelPartOf] == object.ParentApplySetID(parent)
}

// listOrphans lists afresh, from the API server rather than the cache
// (which may not hold a child just applied), parent's children to keep
// (isOrDroppedChildOf): of the kinds its annotation lists, and of those
// its cached children to keep have.
func (c *parentController) listOrphans(ctx context.Context, parent *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	return c.listGuarded(ctx, parent, orphanGuard, orphanKinds(c.m.cache.Owned(parent.GetUID())), func(o *unstructured.Unstructured) bool {
		return object.IsOrphan(o.GetAnnotations()) && isOrDroppedChildOf(o, parent)
	})
}

// listGuarded lists afresh, from the API server, the objects of the kinds
// g's annotation on parent lists that its set declares (guardedKinds), and
// of cached, that carry parent's ApplySet label and that match.
func (c *parentController) listGuarded(ctx context.Context, parent *unstructured.Unstructured, g guard, cached []schema.GroupKind, match func(*unstructured.Unstructured) bool) ([]*unstructured.Unstructured, error) {
	kinds, ignored := guardedKinds(parent, g, declaredKinds(c.set.Load(), g))
	if len(ignored) > 0 {
		klog.FromContext(ctx).Info("Ignored kinds that a parent's annotation lists but its set does not declare",
			"annotation", g.annotation, "kinds", object.FormatGroupKinds(ignored))
	}
	kinds = append(kinds, cached...)
	seen := map[schema.GroupKind]bool{}
	var out []*unstructured.Unstructured
	for _, gk := range kinds {
		if seen[gk] {
			continue
		}
		seen[gk] = true
		m, err := c.m.mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			continue // not served, so none exists
		}
		if err != nil {
			return nil, err
		}
		ns := parent.GetNamespace()
		if ns == "" {
			ns = c.m.opts.Namespace
		}
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			ns = ""
		}
		list, err := c.m.client.Resource(m.Resource).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: object.ChildSelector(parent)})
		if err != nil {
			return nil, fmt.Errorf("list %s children of %s %s/%s: %w", gk, c.gvk.Kind, parent.GetNamespace(), parent.GetName(), err)
		}
		for i := range list.Items {
			if o := &list.Items[i]; match(o) {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// recordOrphans records a Normal Event on the parent, and logs, for each
// child released rather than deleted; when says when.
func (c *parentController) recordOrphans(ctx context.Context, parent *unstructured.Unstructured, cs object.ChangeSet, when string) {
	for _, r := range cs {
		if r.Action != object.Orphaned {
			continue
		}
		klog.FromContext(ctx).Info("Released a child to keep", "child", r.Ref.String(), "when", when)
		c.m.recorder.Eventf(parent, corev1.EventTypeNormal, "Orphaned",
			"%s kept (%s: %s): released %s; Loom no longer manages it", r.Ref, object.AnnotationDeletePolicy, object.DeletePolicyOrphan, when)
	}
}
