package controller

// A suspended parent (object.SuspensionOf): Loom reads its children and
// writes its status, and writes nothing else for it.

import (
	"context"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/clusters"
	"github.com/loom-operator/loom/engine/controller/statuswriter"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/status"
)

// suspension is why parent is suspended, by its annotation, its set's
// TemplateSet, or its set's loom.yaml (the folder's, whatever revision
// the parent renders: a freeze is for now), or nil.
func (c *Controller) suspension(parent *unstructured.Unstructured) *object.Suspension {
	var name string
	var setSuspended bool
	if c.rollouts != nil {
		name, setSuspended = c.rollouts.Name(), c.rollouts.Suspended()
	}
	if s := object.SuspensionOf(parent.GetAnnotations(), name, setSuspended); s != nil {
		return s
	}
	if set := c.set.Load(); set != nil && set.Config.Suspend {
		return object.SetSuspension(filepath.Base(set.Dir))
	}
	return nil
}

// suspended reconciles a suspended parent: it writes its status and
// nothing else. Nothing is rendered (a render may write a chart's seed
// and generated keys, or mark the seed on the parent), applied, created,
// pruned or released; no finalizer is added or removed and no hook runs,
// in the cluster Loom runs in or in a workload cluster. The status lists
// the children as the last reconcile before the suspension did, each
// judged against its live object, with a Suspended condition that says
// where the suspension comes from (status.Input.Suspended).
//
// A parent that is deleted while suspended is finalized as any other
// (reconcile calls gone first): the deletion is the later, explicit
// request (docs/how-to/suspend-a-parent.md).
func (c *Controller) suspended(ctx context.Context, key cache.ObjectName, parent *unstructured.Unstructured, s *object.Suspension) error {
	klog.FromContext(ctx).V(2).Info("The parent is suspended; writing none of its children", "reason", s.Reason)
	c.setUnserved(key, false)
	rev, _, _ := unstructured.NestedString(parent.Object, "status", "templateRevision")
	in := status.Input{Suspended: s, Live: clusters.Listed(ctx, parent, func(cl string) (clusters.Place, error) { return c.place(ctx, cl) }), Revision: rev}
	return c.status.Write(ctx, c.set.Load(), parent, statuswriter.Hub{}, in)
}
