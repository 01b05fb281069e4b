package finalizer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/object"
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
func (gs *Guards) protectOrphans(ctx context.Context, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	uids := map[string]types.UID{}
	for _, child := range rendered {
		ns := child.GetNamespace()
		if ns == "" || !object.IsOrphan(child.GetAnnotations()) {
			continue
		}
		if _, ok := uids[ns]; !ok {
			n, err := gs.Client.Resource(namespacesGVR).Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return parent, fmt.Errorf("read namespace %s, the owner of children to keep: %w", ns, err)
			}
			uids[ns] = n.GetUID()
		}
		object.AddNamespaceOwner(child, uids[ns])
	}
	return gs.ensureGuard(ctx, orphanGuard, parent, rendered)
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Finalize runs when parent is being deleted: it releases the parent's
// children to keep and removes the orphan finalizer, then deletes its
// cluster-scoped children and, once they are gone, removes the
// cluster-children finalizer (clusterchildren.go), then deletes its
// children in workload clusters and, once they are gone, removes the
// remote-children finalizer (remote.go). A parent without any of them has
// nothing to do: the garbage collector deletes its children.
// pending is true when it deleted cluster-scoped children just now: their
// delete events bring the parent back. Any failure leaves the finalizer;
// a failure to release children to keep is also a Warning Event. It
// returns the parent as last written (or parent).
func (gs *Guards) Finalize(ctx context.Context, parent *unstructured.Unstructured) (_ *unstructured.Unstructured, pending bool, err error) {
	if patchGuard.has(parent) {
		if parent, err = gs.finalizePatches(ctx, parent); err != nil {
			return parent, false, err
		}
	}
	if orphanGuard.has(parent) {
		err = gs.releaseOrphans(ctx, parent)
		if err == nil {
			parent, err = gs.removeFinalizer(ctx, parent, orphanGuard)
		}
		if err != nil && !apierrors.IsConflict(err) {
			gs.Recorder.Eventf(parent, corev1.EventTypeWarning, "OrphanReleaseFailed",
				"%s waits for its children to keep to be released (finalizer %s): %v", gs.Kind, object.FinalizerOrphan, err)
		}
	}
	if err == nil && clusterGuard.has(parent) {
		pending, err = gs.deleteClusterChildren(ctx, parent)
		switch {
		case err == nil && pending:
			return parent, true, nil
		case err == nil:
			parent, err = gs.removeFinalizer(ctx, parent, clusterGuard)
		}
	}
	if err == nil && remoteGuard.has(parent) {
		return gs.finalizeRemote(ctx, parent)
	}
	return parent, false, err
}

// releaseOrphans releases parent's children to keep, listed afresh.
func (gs *Guards) releaseOrphans(ctx context.Context, parent *unstructured.Unstructured) error {
	kept, err := gs.listGuarded(ctx, orphanGuard, parent)
	if err != nil {
		return err
	}
	cs := gs.Applier(ctx).Release(ctx, kept, parent.GetUID())
	gs.Observe(cs)
	gs.RecordOrphans(ctx, parent, cs, "before "+gs.Kind+" "+parent.GetName()+" is deleted")
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

// RecordOrphans records a Normal Event on the parent, and logs, for each
// child released rather than deleted; when says when.
func (gs *Guards) RecordOrphans(ctx context.Context, parent *unstructured.Unstructured, cs object.ChangeSet, when string) {
	for _, r := range cs {
		if r.Action != object.Orphaned {
			continue
		}
		klog.FromContext(ctx).Info("Released a child to keep", "child", r.Ref.String(), "when", when)
		gs.Recorder.Eventf(parent, corev1.EventTypeNormal, "Orphaned",
			"%s kept (%s: %s): released %s; Loom no longer manages it", r.Ref, object.AnnotationDeletePolicy, object.DeletePolicyOrphan, when)
	}
}
