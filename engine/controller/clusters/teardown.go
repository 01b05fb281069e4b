package clusters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/finalizer"
	"github.com/loom-operator/loom/engine/controller/identity"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/status"
)

// Delete deletes parent's children in each of the workload clusters
// named, listed afresh there, as the identity ctx carries (finalizer.Remote).
// A cluster whose registration is gone, or that does not answer, fails
// the whole: the parent keeps its finalizer, and says why and what to do.
// A cluster whose registration is gone and that the parent's
// object.AnnotationAbandonClusterChildren names is skipped: its children
// there are left.
func (f *Fleet) Delete(ctx context.Context, parent *unstructured.Unstructured, clusters []string) (pending bool, err error) {
	var blocked []string
	abandon := strings.Split(parent.GetAnnotations()[object.AnnotationAbandonClusterChildren], ",")
	for _, name := range clusters {
		pl, err := f.Place(name, identity.FromContext(ctx))
		if errors.Is(err, ErrNotRegistered) && slices.Contains(abandon, name) {
			klog.FromContext(ctx).Info("Left the children of a deleted parent in a cluster no longer registered, as its annotation says",
				"cluster", name, "annotation", object.AnnotationAbandonClusterChildren)
			continue
		}
		if errors.Is(err, ErrNotRegistered) {
			return false, fmt.Errorf("delete the children in cluster %s: %w: register the cluster again (a Secret in Loom's namespace), "+
				"or, to leave its children there, annotate the parent %s=%s", name, err, object.AnnotationAbandonClusterChildren, name)
		}
		if err != nil {
			return false, fmt.Errorf("delete the children in cluster %s: %w", name, err)
		}
		left, err := pl.children(ctx, parent)
		if err != nil {
			return false, err
		}
		var now []*unstructured.Unstructured
		for _, o := range left {
			if o.GetDeletionTimestamp() == nil {
				now = append(now, o)
				continue
			}
			fins := o.GetFinalizers()
			slices.Sort(fins)
			blocked = append(blocked, fmt.Sprintf("%s (finalizers: %s)", object.RefOf(o), strings.Join(fins, ", ")))
		}
		cs := pl.Applier.Prune(ctx, now)
		for _, r := range cs {
			if r.Err == nil {
				klog.FromContext(ctx).V(2).Info("Deleted a child of a deleted parent in a workload cluster", "child", r.Ref.String())
			}
		}
		if err := cs.Err(); err != nil {
			return false, err
		}
		pending = pending || len(now) > 0
	}
	if len(blocked) > 0 && !pending {
		return false, &finalizer.DeletionBlockedError{Children: blocked, Remote: true}
	}
	return pending, nil
}

// Left counts parent's children in the workload clusters named, listed
// afresh there (finalizer.Remote).
func (f *Fleet) Left(ctx context.Context, parent *unstructured.Unstructured, clusters []string) (int, error) {
	n := 0
	for _, name := range clusters {
		pl, err := f.Place(name, identity.FromContext(ctx))
		if err != nil {
			return 0, fmt.Errorf("find the children in cluster %s: %w", name, err)
		}
		left, err := pl.children(ctx, parent)
		if err != nil {
			return 0, err
		}
		n += len(left)
	}
	return n, nil
}

// children lists afresh, from the cluster's API server rather than its
// cache (which may not hold a child just applied), parent's children
// there: of the kinds its status lists and its cached children have, the
// objects that carry its ApplySet label and name it as their owner.
func (p Place) children(ctx context.Context, parent *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var kinds []schema.GroupKind
	for _, gvk := range status.ChildKinds(parent) {
		kinds = append(kinds, gvk.GroupKind())
	}
	for _, o := range p.Cache.Owned(parent.GetUID()) {
		kinds = append(kinds, o.GroupVersionKind().GroupKind())
	}
	seen := map[schema.GroupKind]bool{}
	var out []*unstructured.Unstructured
	for _, gk := range kinds {
		if seen[gk] {
			continue
		}
		seen[gk] = true
		m, err := p.Mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			continue // not served there, so none exists
		}
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", p.Cluster, err)
		}
		ns := parent.GetNamespace()
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			ns = ""
		}
		list, err := p.Client.Resource(m.Resource).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: object.ChildSelector(parent)})
		if err != nil {
			return nil, fmt.Errorf("list %s children in cluster %s: %w", gk, p.Cluster, err)
		}
		for i := range list.Items {
			if o := &list.Items[i]; object.IsChildOf(o, parent) {
				out = append(out, o)
			}
		}
	}
	return out, nil
}
