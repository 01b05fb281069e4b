package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/loom-operator/loom/engine/object"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// releaseAttempts bounds the reads and patches Release makes of one object
// that other writers keep changing in between.
const releaseAttempts = 3

// Release lets go of objects to keep (object.AnnotationDeletePolicy
// orphan) instead of deleting them: each loses its controller
// ownerReference to the parent with UID parent (and the one to its
// Namespace that Loom adds to a child to keep), Loom's labels, the hash of
// what Loom applied, and Loom's field manager entry, so that the garbage
// collector does not delete it with the parent and Loom no longer claims
// it. Nothing else changes: the release is a JSON patch of those entries
// only, never an apply of a smaller object (which would remove the fields
// Loom stops applying), made on the object as read just before and
// conditional on its resourceVersion, so it cannot clobber a concurrent
// writer: a write in between makes it read and try again. An object gone,
// or replaced by another of the same name, is left alone and reported as
// nothing.
func (a *Applier) Release(ctx context.Context, objs []*unstructured.Unstructured, parent types.UID) object.ChangeSet {
	cs := make(object.ChangeSet, 0, len(objs))
	for _, o := range objs {
		if r, ok := a.release(ctx, o, parent); ok {
			cs = append(cs, r)
		}
	}
	return cs
}

// release releases one object; ok is false when it is gone.
func (a *Applier) release(ctx context.Context, o *unstructured.Unstructured, parent types.UID) (object.Result, bool) {
	ref := object.RefOf(o)
	res := object.Result{Ref: ref, APIVersion: o.GetAPIVersion()}
	gvr, _, err := a.Resource(o.GroupVersionKind())
	if err != nil {
		return failed(res, fmt.Errorf("release %s: %w", ref, err)), true
	}
	client := a.client.Resource(gvr).Namespace(ref.Namespace)
	for attempt := 1; ; attempt++ {
		cur, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && cur.GetUID() != o.GetUID()) {
			a.Forget(ref)
			return res, false
		}
		if err != nil {
			return failed(res, fmt.Errorf("release %s: read it: %w", ref, err)), true
		}
		ops, changed := releasePatch(cur, parent, a.manager)
		if !changed {
			a.Forget(ref)
			res.Action, res.Object = object.Orphaned, cur
			return res, true
		}
		body, err := json.Marshal(ops)
		if err != nil {
			return failed(res, fmt.Errorf("release %s: %w", ref, err)), true
		}
		resp, err := client.Patch(ctx, ref.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: a.manager})
		if (apierrors.IsConflict(err) || apierrors.IsInvalid(err)) && attempt < releaseAttempts {
			continue // changed since the read (a failed test is Invalid): read it again
		}
		if err != nil {
			return failed(res, fmt.Errorf("release %s: %w", ref, err)), true
		}
		a.Forget(ref)
		res.Action, res.Object = object.Orphaned, resp
		return res, true
	}
}

// jsonOp is one operation of a JSON patch (RFC 6902).
type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// releasePatch returns the JSON patch that releases obj from the parent
// with UID parent and from the field manager manager, and whether it
// changes anything. It holds, in order: a test of obj's UID and its
// resourceVersion as a precondition (the API server refuses the patch with
// a Conflict if the object changed since it was read, so the indexes below
// are the ones of the object written); the removal of the parent's
// ownerReferences and of the object's Namespace (which Loom adds to a
// child to keep, see the controller); of the part-of and managed-by labels; of the applied
// hash and of the loom.dev/owner annotation naming the parent (on a
// cluster-scoped child); and of manager's managedFields entries (a list with one empty
// entry, which clears managedFields, when they were the only ones: an empty
// list would leave them as they were).
func releasePatch(obj *unstructured.Unstructured, parent types.UID, manager string) ([]jsonOp, bool) {
	ops := []jsonOp{
		{Op: "test", Path: "/metadata/uid", Value: string(obj.GetUID())},
		{Op: "replace", Path: "/metadata/resourceVersion", Value: obj.GetResourceVersion()},
	}
	pre := len(ops)
	var owners []int
	for i, r := range obj.GetOwnerReferences() {
		if r.UID == parent || isNamespaceOwner(r, obj.GetNamespace()) {
			owners = append(owners, i)
		}
	}
	ops = append(ops, removeAll("/metadata/ownerReferences", owners, len(obj.GetOwnerReferences()), nil)...)
	labels := obj.GetLabels()
	if _, ok := labels[object.LabelPartOf]; ok {
		ops = append(ops, jsonOp{Op: "remove", Path: "/metadata/labels/" + escape(object.LabelPartOf)})
	}
	if labels[object.LabelManagedBy] == object.ManagedByValue {
		ops = append(ops, jsonOp{Op: "remove", Path: "/metadata/labels/" + escape(object.LabelManagedBy)})
	}
	if _, ok := obj.GetAnnotations()[AnnotationApplied]; ok {
		ops = append(ops, jsonOp{Op: "remove", Path: "/metadata/annotations/" + escape(AnnotationApplied)})
	}
	if ref, _ := object.AnnotatedOwner(obj.GetAnnotations()); ref != nil && ref.UID == parent {
		// A cluster-scoped child's reference to its namespaced parent.
		ops = append(ops, jsonOp{Op: "remove", Path: "/metadata/annotations/" + escape(object.AnnotationOwner)})
	}
	var mine []int
	mfs := obj.GetManagedFields()
	for i, mf := range mfs {
		if mf.Manager == manager && mf.Subresource == "" {
			mine = append(mine, i)
		}
	}
	ops = append(ops, removeAll("/metadata/managedFields", mine, len(mfs), []any{map[string]any{}})...)
	return ops, len(ops) > pre
}

// isNamespaceOwner reports whether r names the Namespace ns (a child to
// keep's second owner).
func isNamespaceOwner(r metav1.OwnerReference, ns string) bool {
	return ns != "" && r.APIVersion == "v1" && r.Kind == "Namespace" && r.Name == ns
}

// removeAll returns the operations that remove the elements at indexes
// (ascending) from the list at path, of length n: one by one from the last,
// so that each index is still right, or the whole list when they are all
// of it (replaced by whole, when not nil).
func removeAll(path string, indexes []int, n int, whole any) []jsonOp {
	if len(indexes) == 0 {
		return nil
	}
	if len(indexes) == n {
		if whole != nil {
			return []jsonOp{{Op: "replace", Path: path, Value: whole}}
		}
		return []jsonOp{{Op: "remove", Path: path}}
	}
	ops := make([]jsonOp, 0, len(indexes))
	for i := len(indexes) - 1; i >= 0; i-- {
		ops = append(ops, jsonOp{Op: "remove", Path: path + "/" + strconv.Itoa(indexes[i])})
	}
	return ops
}

// escape escapes a JSON pointer reference token (RFC 6901).
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
