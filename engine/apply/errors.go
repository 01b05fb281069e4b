package apply

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// failed returns r as a failure with err.
func failed(r object.Result, err error) object.Result {
	r.Action, r.Err = object.Failed, err
	return r
}

// conflict turns the API server's refusal of a second controller
// ownerReference into an OwnedByAnotherError naming the object's owner. It
// costs one read, on that failure only.
// applyError is the error of a failed apply of desired, naming it; an
// ownerReference conflict becomes an OwnedByAnotherError.
func (a *Applier) applyError(ctx context.Context, gvr schema.GroupVersionResource, desired *unstructured.Unstructured, err error) error {
	if c := a.conflict(ctx, gvr, desired, err); c != nil {
		return c
	}
	return fmt.Errorf("apply %s: %w", object.RefOf(desired), err)
}

func (a *Applier) conflict(ctx context.Context, gvr schema.GroupVersionResource, desired *unstructured.Unstructured, err error) error {
	if !apierrors.IsInvalid(err) || !hasCause(err, "metadata.ownerReferences") {
		return nil
	}
	want := metav1.GetControllerOfNoCopy(desired)
	if want == nil {
		return nil
	}
	cur, gerr := a.client.Resource(gvr).Namespace(desired.GetNamespace()).Get(ctx, desired.GetName(), metav1.GetOptions{})
	if gerr != nil {
		return nil
	}
	owner := metav1.GetControllerOfNoCopy(cur)
	if owner == nil || owner.UID == want.UID {
		return nil
	}
	return &object.OwnedByAnotherError{Ref: object.RefOf(desired), Owner: *owner, Want: *want, Err: err}
}

// hasCause reports whether an API error names field among its causes.
func hasCause(err error, field string) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return false
	}
	for _, c := range st.Status().Details.Causes {
		if c.Field == field {
			return true
		}
	}
	return false
}
