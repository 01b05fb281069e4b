package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/identity"
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

// protectOrphans readies rendered, a render pass's children, for the apply:
// each namespaced child to keep is given its Namespace as an owner, and the
// parent the orphan finalizer (ensureGuard). It returns the parent as last
// written, and an error that holds the children to keep back.
func (c *Controller) protectOrphans(ctx context.Context, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	uids := map[string]types.UID{}
	for _, child := range rendered {
		ns := child.GetNamespace()
		if ns == "" || !object.IsOrphan(child.GetAnnotations()) {
			continue
		}
		if _, ok := uids[ns]; !ok {
			n, err := c.sh.Client.Resource(namespacesGVR).Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return parent, fmt.Errorf("read namespace %s, the owner of children to keep: %w", ns, err)
			}
			uids[ns] = n.GetUID()
		}
		object.AddNamespaceOwner(child, uids[ns])
	}
	return c.ensureGuard(ctx, orphanGuard, parent, rendered)
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// finalize runs when parent is being deleted: it releases the parent's
// children to keep and removes the orphan finalizer, then deletes its
// cluster-scoped children and, once they are gone, removes the
// cluster-children finalizer (clusterchildren.go). A parent without either
// finalizer has nothing to do: the garbage collector deletes its children.
// Any failure leaves the finalizer, and is retried; while the deletion
// waits on anything but Loom's own pace, the parent's status says why
// (Degraded: DeletionBlocked), and so does the Warning Event of that
// condition's transition.
func (c *Controller) finalize(ctx context.Context, parent *unstructured.Unstructured) error {
	id, err := c.identityFinalizing(parent)
	if err != nil {
		return err
	}
	ctx = identity.WithAccount(ctx, id)
	if orphanGuard.has(parent) {
		err = c.releaseOrphans(ctx, parent)
		if err == nil {
			parent, err = c.removeFinalizer(ctx, parent, orphanGuard)
		}
		if err != nil && !apierrors.IsConflict(err) {
			c.sh.Recorder.Eventf(parent, corev1.EventTypeWarning, "OrphanReleaseFailed",
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
		if serr := c.status.Write(ctx, c.set.Load(), parent, status.Input{Deleting: err, Revision: rev}); serr != nil {
			return errors.Join(err, serr)
		}
	}
	return err
}

// releaseOrphans releases parent's children to keep, listed afresh.
func (c *Controller) releaseOrphans(ctx context.Context, parent *unstructured.Unstructured) error {
	kept, err := c.listGuarded(ctx, orphanGuard, parent)
	if err != nil {
		return err
	}
	cs := c.applier(ctx).Release(ctx, kept, parent.GetUID())
	c.sh.Metrics.observeChanges(c.gvk.Kind, cs)
	c.recordOrphans(ctx, parent, cs, "before "+c.gvk.Kind+" "+parent.GetName()+" is deleted")
	return cs.Err()
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

// recordOrphans records a Normal Event on the parent, and logs, for each
// child released rather than deleted; when says when.
func (c *Controller) recordOrphans(ctx context.Context, parent *unstructured.Unstructured, cs object.ChangeSet, when string) {
	for _, r := range cs {
		if r.Action != object.Orphaned {
			continue
		}
		klog.FromContext(ctx).Info("Released a child to keep", "child", r.Ref.String(), "when", when)
		c.sh.Recorder.Eventf(parent, corev1.EventTypeNormal, "Orphaned",
			"%s kept (%s: %s): released %s; Loom no longer manages it", r.Ref, object.AnnotationDeletePolicy, object.DeletePolicyOrphan, when)
	}
}
