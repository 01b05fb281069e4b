package controller

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/loom-operator/loom/engine/controller/finalizer"
	"github.com/loom-operator/loom/engine/controller/identity"
	"github.com/loom-operator/loom/engine/controller/statuswriter"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/status"
)

// newGuards builds the finalizer guards of the controller's parents
// (package finalizer), once their resource is known.
func (c *Controller) newGuards() *finalizer.Guards {
	return &finalizer.Guards{
		Client: c.sh.Client, Parents: c.gvr, Kind: c.gvk.Kind, Mapper: c.sh.Mapper,
		FieldManager: c.sh.FieldManager, Namespace: c.sh.Namespace,
		Owned:    func(uid types.UID) []*unstructured.Unstructured { return c.sh.Cache.Owned(uid) },
		Set:      c.set.Load,
		Applier:  func(ctx context.Context) finalizer.Applier { return c.applier(ctx) },
		Observe:  func(cs object.ChangeSet) { c.sh.Metrics.ObserveChanges(c.gvk.Kind, cs) },
		Recorder: c.sh.Recorder, Remote: c.sh.Fleet,
	}
}

// finalize runs when parent is being deleted: the guards release its
// children to keep and delete its cluster-scoped children, as the set's
// ServiceAccount (finalizer.Guards.Finalize). Any failure leaves the
// finalizer, and is retried; while the deletion waits on anything but
// Loom's own pace, the parent's status says why (Degraded:
// DeletionBlocked), and so does the Warning Event of that condition's
// transition.
func (c *Controller) finalize(ctx context.Context, parent *unstructured.Unstructured) error {
	id, err := c.identityFinalizing(parent)
	if err != nil {
		return err
	}
	ctx = identity.WithAccount(ctx, id)
	parent, pending, err := c.guards.Finalize(ctx, parent)
	if pending {
		// Deleted just now: their delete events bring the parent back;
		// the delay is a bound should an event be missed.
		c.queue.AddAfter(cache.NewObjectName(parent.GetNamespace(), parent.GetName()), time.Second)
		return nil
	}
	if err != nil && !apierrors.IsConflict(err) {
		// A conflict is only a cache behind the parent, retried at once.
		rev, _, _ := unstructured.NestedString(parent.Object, "status", "templateRevision")
		if serr := c.status.Write(ctx, c.set.Load(), parent, statuswriter.Hub{}, status.Input{Deleting: err, Revision: rev}); serr != nil {
			return errors.Join(err, serr)
		}
	}
	return err
}
