package finalizer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/object"
)

// Cluster-scoped children of a namespaced parent (kinds loom.yaml declares
// in clusterScoped) carry no ownerReference: the garbage collector refuses
// a namespaced owner of a cluster-scoped object, so it would never delete
// them with their parent. Render names the parent in object.AnnotationOwner
// instead, and the parent carries object.FinalizerClusterChildren, with the
// children's group-kinds in object.AnnotationClusterKinds, from before the
// first such child is applied until none is left. When the parent is
// deleted, Loom lists those kinds afresh, deletes the parent's children of
// them (each delete conditional on the child's UID), and removes the
// finalizer only once a list finds none: a child held by a finalizer of
// its own keeps the parent, whose status and Events say which child waits
// on what. A cluster-scoped child the template keeps (delete-policy
// orphan) is released instead, under the orphan finalizer (orphan.go).

// isClusterChild reports whether o is a cluster-scoped child that names
// its namespaced parent in object.AnnotationOwner, and is not one to keep.
func isClusterChild(o *unstructured.Unstructured) bool {
	if o.GetNamespace() != "" || metav1.GetControllerOfNoCopy(o) != nil {
		return false
	}
	ann := o.GetAnnotations()
	_, named := ann[object.AnnotationOwner]
	return named && !object.IsOrphan(ann)
}

// clusterKinds returns the group-kinds of the cluster-scoped children
// (isClusterChild) in lists.
func clusterKinds(lists ...[]*unstructured.Unstructured) []schema.GroupKind {
	var out []schema.GroupKind
	for _, list := range lists {
		for _, o := range list {
			if isClusterChild(o) {
				out = append(out, o.GroupVersionKind().GroupKind())
			}
		}
	}
	return out
}

// deleteClusterChildren deletes parent's cluster-scoped children, listed
// afresh. pending is true when it asked for a delete just now; it returns
// a DeletionBlockedError when children it asked to delete before are
// still there (their own finalizers hold them), and a delete's failure.
func (gs *Guards) deleteClusterChildren(ctx context.Context, parent *unstructured.Unstructured) (pending bool, err error) {
	left, err := gs.listGuarded(ctx, clusterGuard, parent)
	if err != nil {
		return false, err
	}
	var now []*unstructured.Unstructured
	var blocked []string
	for _, o := range left {
		if o.GetDeletionTimestamp() == nil {
			now = append(now, o)
			continue
		}
		fins := o.GetFinalizers()
		slices.Sort(fins)
		blocked = append(blocked, fmt.Sprintf("%s %s (finalizers: %s)", o.GetKind(), o.GetName(), strings.Join(fins, ", ")))
	}
	cs := gs.Applier(ctx).Prune(ctx, now)
	gs.Observe(cs)
	for _, r := range cs {
		if r.Err == nil {
			klog.FromContext(ctx).V(2).Info("Deleted a cluster-scoped child of a deleted parent", "child", r.Ref.String())
		}
	}
	if err := cs.Err(); err != nil {
		return false, err
	}
	if len(blocked) > 0 {
		return false, &DeletionBlockedError{Children: blocked}
	}
	return len(now) > 0, nil
}

// DeletionBlockedError means a deleted parent waits for cluster-scoped
// children that Loom asked to delete, which their own finalizers still
// hold.
type DeletionBlockedError struct {
	// Children name each child and its finalizers.
	Children []string
	// Remote is set for children in workload clusters.
	Remote bool
}

// Error names the children the deletion waits for.
func (e *DeletionBlockedError) Error() string {
	what := "cluster-scoped children"
	if len(e.Children) == 1 {
		what = "cluster-scoped child"
	}
	if e.Remote {
		what = "children in workload clusters"
		if len(e.Children) == 1 {
			what = "child in a workload cluster"
		}
	}
	return fmt.Sprintf("waiting for %d %s to be deleted: %s", len(e.Children), what, strings.Join(e.Children, "; "))
}

// Protect readies rendered, a render pass's children, for the apply: the
// children to keep (protectOrphans) and the cluster-scoped children
// (ensureGuard) get the parent's finalizers first. It returns the
// parent as last written, and what it could not protect.
func (gs *Guards) Protect(ctx context.Context, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured) (*unstructured.Unstructured, Holds) {
	var h Holds
	parent, h.orphans = gs.protectOrphans(ctx, parent, rendered)
	parent, h.cluster = gs.ensureGuard(ctx, clusterGuard, parent, rendered)
	parent, h.patches = gs.protectPatches(ctx, parent, rendered)
	return parent, h
}

// Holds says which rendered children may not be applied yet, because the
// parent lacks the finalizer that protects them.
type Holds struct {
	// orphans holds the children to keep: the parent could not be given
	// the orphan finalizer.
	orphans error
	// cluster holds the cluster-scoped children: the parent could not be
	// given the cluster-children finalizer.
	cluster error
	// patches holds the patch children: the parent could not be given
	// their record and the patches finalizer.
	patches error
}

// Of returns why child may not be applied, or nil.
func (h Holds) Of(child *unstructured.Unstructured) error {
	switch {
	case h.orphans != nil && object.IsOrphan(child.GetAnnotations()):
		return h.orphans
	case h.cluster != nil && isClusterChild(child):
		return h.cluster
	case h.patches != nil && object.ManageOf(child.GetAnnotations(), "") == object.ManagePatch:
		return h.patches
	}
	return nil
}
