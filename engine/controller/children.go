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
	"github.com/loom-operator/loom/engine/controller/finalizer"
	"github.com/loom-operator/loom/engine/controller/hookrun"
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
func (c *Controller) applyAll(ctx context.Context, rendered []*unstructured.Unstructured, fresh map[object.Ref]*unstructured.Unstructured, held finalizer.Holds) (object.ChangeSet, map[object.Ref]*unstructured.Unstructured) {
	results := make(object.ChangeSet, 0, len(rendered))
	live := make(map[object.Ref]*unstructured.Unstructured, len(rendered))
	for _, child := range rendered {
		ref := object.RefOf(child)
		if err := held.Of(child); err != nil {
			results = append(results, object.Result{Ref: ref, APIVersion: child.GetAPIVersion(), Action: object.Failed, Err: err})
			continue
		}
		gr, err := c.watchChildKind(ctx, child.GroupVersionKind())
		if cl := object.TargetCluster(child); cl != "" && err == nil {
			err = fmt.Errorf("cluster %s: placing children in workload clusters is not wired yet", cl) // until the clusters' appliers are
		}
		if err != nil {
			results = append(results, object.Result{Ref: ref, APIVersion: child.GetAPIVersion(), Action: object.Failed,
				Err: fmt.Errorf("apply %s: %w", ref, err)})
			continue
		}
		cached := fresh[ref]
		if cached == nil {
			cached = c.sh.Cache.Get(gr, ref.Namespace, ref.Name)
		}
		r := c.applier(ctx).Apply(ctx, child, cached)
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

// watchChildKind checks that the version a template names is served (the
// apply uses it), and makes sure the informer of the kind's group-resource
// runs and has synced. The informer watches the kind at the cluster's
// preferred version, whatever version the templates name.
func (c *Controller) watchChildKind(ctx context.Context, gvk schema.GroupVersionKind) (schema.GroupResource, error) {
	if _, _, err := c.sh.Applier.Resource(gvk); err != nil {
		return schema.GroupResource{}, err
	}
	return c.watchGroupKind(ctx, gvk.GroupKind())
}

// watchGroupKind makes sure the informer of a kind runs and has synced.
func (c *Controller) watchGroupKind(ctx context.Context, gk schema.GroupKind) (schema.GroupResource, error) {
	m, err := c.sh.Mapper.RESTMapping(gk)
	if err != nil {
		return schema.GroupResource{}, err
	}
	return m.Resource.GroupResource(), c.sh.Cache.Ensure(ctx, m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace)
}

// prune deletes the cached children of parent that did not render, and
// releases those to keep (object.AnnotationDeletePolicy orphan). It only
// runs when every child kind resolved and its cache synced, so that a kind
// that is temporarily not served, or not readable, never causes its
// children to be deleted. Children are matched by group, kind, namespace
// and name: a child rendered at a new version is the same child.
func (c *Controller) prune(ctx context.Context, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured) (object.ChangeSet, error) {
	// Kinds listed in the parent's status were rendered before; watch them
	// so that children of a kind no template renders any more are found.
	for _, gvk := range status.ChildKinds(parent) {
		if _, err := c.watchGroupKind(ctx, gvk.GroupKind()); err != nil && !meta.IsNoMatchError(err) {
			return nil, err
		}
	}
	keep := make(map[object.Ref]bool, len(rendered))
	for _, r := range rendered {
		keep[object.RefOf(r)] = true
	}
	var stale, orphans []*unstructured.Unstructured
	for _, child := range c.sh.Cache.Owned(parent.GetUID()) {
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
	cs := c.applier(ctx).Prune(ctx, stale)
	cs = append(cs, c.applier(ctx).Release(ctx, orphans, parent.GetUID())...)
	return cs, cs.Retryable()
}

// hasUnwatched reports whether a child's kind is not served by the
// cluster, or its cache could not be filled: the parent waits for a CRD
// change or for that informer to sync.
func hasUnwatched(results object.ChangeSet) bool {
	for _, r := range results {
		var nw *childcache.NotWatchedError
		if r.Err != nil && (meta.IsNoMatchError(r.Err) || errors.As(r.Err, &nw)) {
			return true
		}
	}
	return false
}
