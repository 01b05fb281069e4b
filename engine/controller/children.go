package controller

// Applying, watching and pruning a parent's children: the pieces the
// reconcile's apply and prune steps (reconcile.go) are made of.

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/clusters"
	"github.com/loom-operator/loom/engine/controller/finalizer"
	"github.com/loom-operator/loom/engine/controller/hookrun"
	"github.com/loom-operator/loom/engine/controller/identity"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/status"
)

// groupResource maps a child's kind to the resource its informer watches,
// or the zero value when the kind is not served.
func (c *Controller) groupResource(ref object.Ref) schema.GroupResource {
	m, err := c.sh.Mapper.RESTMapping(ref.GroupKind)
	if err != nil {
		return schema.GroupResource{}
	}
	return m.Resource.GroupResource()
}

// applyAll applies each rendered child and returns the results, with the
// best-known live object of each child. A child that held holds back fails
// with its error: the parent could not be given the finalizer that
// protects it.
//
// fresh holds children an earlier pass of this reconcile applied, as the
// API server answered; they stand for the cache, which may lag behind.
// Each child is applied as its mode says (apply.ApplyManaged): an
// observed one is read with a's lookups.
func (c *Controller) applyAll(ctx context.Context, rendered []*unstructured.Unstructured, fresh map[object.Ref]*unstructured.Unstructured, held finalizer.Holds, a *attempt) (object.ChangeSet, map[object.Ref]*unstructured.Unstructured) {
	results := make(object.ChangeSet, 0, len(rendered))
	live := make(map[object.Ref]*unstructured.Unstructured, len(rendered))
	for _, child := range rendered {
		ref := object.RefOf(child)
		if err := held.Of(child); err != nil {
			results = append(results, object.Result{Ref: ref, APIVersion: child.GetAPIVersion(), Action: object.Failed, Err: err})
			continue
		}
		pl, err := c.place(ctx, ref.Cluster)
		gr := schema.GroupResource{}
		if err == nil {
			gr, err = pl.WatchKind(ctx, child.GroupVersionKind())
		}
		if err != nil {
			results = append(results, object.Result{Ref: ref, APIVersion: child.GetAPIVersion(), Action: object.Failed,
				Err: fmt.Errorf("apply %s: %w", ref, err)})
			continue
		}
		cached := fresh[ref]
		if cached == nil {
			cached = pl.Cache.Get(gr, ref.Namespace, ref.Name)
		}
		r := pl.Applier.ApplyManaged(ctx, child, cached, a.parent.GetUID(), a.reader)
		results = append(results, r)
		if object.NamespaceTerminating(r.Err) {
			// Every other create in the namespace is refused alike.
			klog.FromContext(ctx).V(2).Info("The parent's namespace is being deleted; creating no children", "child", ref.String())
			break
		}
		if r.Object != nil {
			live[ref] = r.Object
		} else if cached != nil {
			live[ref] = cached
		}
	}
	return results, live
}

// place is the cluster a reconcile writes children to: the one Loom runs
// in (""), or the workload cluster of that name, acting as the identity
// ctx carries.
func (c *Controller) place(ctx context.Context, cluster string) (clusters.Place, error) {
	if cluster == "" {
		return clusters.Place{Cache: c.sh.Cache, Applier: c.applier(ctx), Mapper: c.sh.Mapper}, nil
	}
	return c.sh.Fleet.Place(cluster, identity.FromContext(ctx))
}

// prune deletes the cached children of parent that did not render, and
// releases those to keep (object.AnnotationDeletePolicy orphan), in the
// cluster Loom runs in and in each workload cluster the parent places
// children in or did (its status.children say which), but those that did
// not answer. It only
// runs when every child kind resolved and its cache synced, so that a kind
// that is temporarily not served, or not readable, never causes its
// children to be deleted. Children are matched by group, kind, namespace
// and name: a child rendered at a new version is the same child.
func (c *Controller) prune(ctx context.Context, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured, unreachable map[string]error) (object.ChangeSet, error) {
	keep := make(map[object.Ref]bool, len(rendered))
	for _, r := range rendered {
		keep[object.RefOf(r)] = true
	}
	var cs object.ChangeSet
	for _, cl := range clusters.Targeted(rendered, status.ChildClusters(parent)) {
		if unreachable[cl] != nil {
			continue // its children there are not known
		}
		pl, err := c.place(ctx, cl)
		if err != nil {
			return cs, err
		}
		part, err := c.prunePlace(ctx, pl, parent, keep)
		if cs = append(cs, part...); err != nil {
			return cs, err
		}
	}
	return cs, cs.Retryable()
}

// prunePlace is prune in one cluster: keep are the children rendered, in
// every cluster.
func (c *Controller) prunePlace(ctx context.Context, pl clusters.Place, parent *unstructured.Unstructured, keep map[object.Ref]bool) (object.ChangeSet, error) {
	// Kinds listed in the parent's status were rendered before; watch them
	// so that children of a kind no template renders any more are found.
	for _, gvk := range status.ChildKinds(parent) {
		if _, err := pl.WatchGroupKind(ctx, gvk.GroupKind()); err != nil && !meta.IsNoMatchError(err) {
			return nil, err
		}
	}
	var stale, orphans []*unstructured.Unstructured
	for _, child := range pl.Cache.Owned(parent.GetUID()) {
		switch {
		case keep[object.RefOf(child)] || !object.IsChildOf(child, parent) || child.GetDeletionTimestamp() != nil:
		case hookrun.IsRun(child):
			// A hook's run is not pruned when it no longer renders (it
			// is done, or of another event): as under Helm, it stays
			// until its delete policy, its next run or the parent's
			// deletion removes it.
		case object.IsOrphan(child.GetAnnotations()):
			orphans = append(orphans, child)
		default:
			stale = append(stale, child)
		}
	}
	cs := pl.Applier.Prune(ctx, stale)
	return append(cs, pl.Applier.Release(ctx, orphans, parent.GetUID())...), nil
}

// hasUnwatched reports whether a local child's kind is not served by the
// cluster, or its cache could not be filled: the parent waits for a CRD
// change or for that informer to sync. (A workload cluster's are
// clusters.Unanswered.)
func hasUnwatched(results object.ChangeSet) bool {
	for _, r := range results {
		var nw *childcache.NotWatchedError
		if r.Err != nil && r.Ref.Cluster == "" && (meta.IsNoMatchError(r.Err) || errors.As(r.Err, &nw)) {
			return true
		}
	}
	return false
}
