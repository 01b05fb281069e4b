package controller

// Which failures of a reconcile are retried, and the namespace being
// deleted, which stops a reconcile where it is.

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/loom-operator/loom/engine/object"
)

// retryableOf joins the failures of a change set that are worth retrying.
func retryableOf(cs object.ChangeSet) error {
	var errs []error
	for _, r := range cs {
		errs = append(errs, retryable(r.Err))
	}
	return errors.Join(errs...)
}

// namespaceTerminating reports whether err is the API server's refusal to
// create an object in a namespace that is being deleted: the cause the
// NamespaceLifecycle admission plugin gives, not its message.
func namespaceTerminating(err error) bool {
	return err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// terminatingIn reports whether an apply of results met a namespace being
// deleted. The reconcile then stops where it is: the namespace controller
// is deleting the parent and its children, the parent gets no new
// children, no status and no retry, and nothing counts as failed.
func terminatingIn(results object.ChangeSet) bool {
	for _, r := range results {
		if namespaceTerminating(r.Err) {
			return true
		}
	}
	return false
}

// retryable keeps the errors worth retrying with backoff. An object the
// API server rejects as invalid, or a kind it does not serve, will fail the
// same way until the spec, the template or the CRDs change, and each of
// those enqueues the parent again.
//
// A child name taken by an object that is not Loom's is refused until the
// spec or the template changes, or the periodic resync: Loom cannot watch
// objects that do not carry its labels. A create in a namespace being
// deleted is refused until the namespace and the parent are gone.
func retryable(err error) error {
	var owned *object.OwnedByAnotherError
	var notAdopted *object.NotAdoptedError
	if err == nil || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || meta.IsNoMatchError(err) ||
		errors.As(err, &owned) || errors.As(err, &notAdopted) || namespaceTerminating(err) {
		return nil
	}
	return err
}
