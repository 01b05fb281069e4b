package object

// Which failures of a reconcile are retried, and the namespace being
// deleted, which stops a reconcile where it is.

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// Retryable joins the failures of a change set that are worth retrying
// (see Retryable).
func (cs ChangeSet) Retryable() error {
	var errs []error
	for _, r := range cs {
		errs = append(errs, Retryable(r.Err))
	}
	return errors.Join(errs...)
}

// NamespaceTerminating reports whether err is the API server's refusal to
// create an object in a namespace that is being deleted: the cause the
// NamespaceLifecycle admission plugin gives, not its message.
func NamespaceTerminating(err error) bool {
	return err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// Terminating reports whether an apply of the change set met a namespace
// being deleted. The reconcile then stops where it is: the namespace
// controller is deleting the parent and its children, the parent gets no
// new children, no status and no retry, and nothing counts as failed.
func (cs ChangeSet) Terminating() bool {
	for _, r := range cs {
		if NamespaceTerminating(r.Err) {
			return true
		}
	}
	return false
}

// Retryable keeps the errors worth retrying with backoff. An object the
// API server rejects as invalid, or a kind it does not serve, will fail the
// same way until the spec, the template or the CRDs change, and each of
// those enqueues the parent again.
//
// A child name taken by an object that is not Loom's is refused until the
// spec or the template changes, or the periodic resync: Loom cannot watch
// objects that do not carry its labels. A create in a namespace being
// deleted is refused until the namespace and the parent are gone.
func Retryable(err error) error {
	var owned *OwnedByAnotherError
	var notAdopted *NotAdoptedError
	if err == nil || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || meta.IsNoMatchError(err) ||
		errors.As(err, &owned) || errors.As(err, &notAdopted) || NamespaceTerminating(err) {
		return nil
	}
	return err
}
