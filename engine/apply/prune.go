package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Prune deletes objects that no longer render. Each delete is conditional
// on the object's UID, so an object recreated under the same name by
// someone else is never deleted by mistake. An object already gone counts
// as pruned.
func (a *Applier) Prune(ctx context.Context, objs []*unstructured.Unstructured) object.ChangeSet {
	cs := make(object.ChangeSet, 0, len(objs))
	for _, o := range objs {
		ref := object.RefOf(o)
		res := object.Result{Ref: ref, APIVersion: o.GetAPIVersion()}
		gvr, _, err := a.Resource(o.GroupVersionKind())
		if err != nil {
			cs = append(cs, failed(res, fmt.Errorf("prune %s: %w", ref, err)))
			continue
		}
		uid := o.GetUID()
		policy := metav1.DeletePropagationBackground
		err = a.client.Resource(gvr).Namespace(ref.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: &uid},
			PropagationPolicy: &policy,
		})
		if err != nil && !apierrors.IsNotFound(err) {
			cs = append(cs, failed(res, fmt.Errorf("prune %s: %w", ref, err)))
			continue
		}
		a.Forget(ref)
		res.Action = object.Pruned
		cs = append(cs, res)
	}
	return cs
}
