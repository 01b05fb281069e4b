package clusters

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/object"
)

// Cache is what a reconcile uses of one cluster's child cache
// (childcache.Cache): the informers of Loom's children there.
type Cache interface {
	// Ensure starts watching the children of gvr's group-resource, if
	// needed, and waits a short while for the first list; a
	// *childcache.NotWatchedError says the kind cannot be read.
	Ensure(ctx context.Context, gvr schema.GroupVersionResource, namespaced bool) error
	// Get returns a cached child as a copy the caller owns, or nil.
	Get(gr schema.GroupResource, namespace, name string) *unstructured.Unstructured
	// Owned returns the cached children whose controller has uid, as
	// copies the caller owns.
	Owned(uid types.UID) []*unstructured.Unstructured
}

// Place is one cluster as a reconcile writes children there: the cluster
// Loom runs in (Cluster ""), or a workload cluster. Its applier acts as
// the reconcile's identity (the set's ServiceAccount, impersonated in
// that cluster, or Loom's own).
type Place struct {
	// Cluster is the workload cluster's name, "" for the cluster Loom
	// runs in.
	Cluster string
	// Cache holds Loom's children in that cluster.
	Cache Cache
	// Applier applies and prunes there.
	Applier *apply.Applier
	// Mapper maps kinds to that cluster's resources.
	Mapper meta.RESTMapper
	// Client reads that cluster as Loom (lists afresh, at teardown).
	Client dynamic.Interface
}

// WatchKind checks that the version a template names is served there (the
// apply uses it), and makes sure the informer of the kind's group-resource
// runs and has synced. The informer watches the kind at the cluster's
// preferred version, whatever version the templates name.
func (p Place) WatchKind(ctx context.Context, gvk schema.GroupVersionKind) (schema.GroupResource, error) {
	if _, _, err := p.Applier.Resource(gvk); err != nil {
		return schema.GroupResource{}, err
	}
	return p.WatchGroupKind(ctx, gvk.GroupKind())
}

// WatchGroupKind makes sure the informer of a kind runs and has synced.
func (p Place) WatchGroupKind(ctx context.Context, gk schema.GroupKind) (schema.GroupResource, error) {
	m, err := p.Mapper.RESTMapping(gk)
	if err != nil {
		return schema.GroupResource{}, err
	}
	return m.Resource.GroupResource(), p.Cache.Ensure(ctx, m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace)
}

// Targeted returns the clusters a parent's children are in: the cluster
// Loom runs in ("") first, then, in name order, each workload cluster a
// rendered child names and each of listed (those its status.children
// name: where it placed children before, which may have to be pruned).
func Targeted(rendered []*unstructured.Unstructured, listed []string) []string {
	seen := map[string]bool{"": true}
	var out []string
	for _, c := range rendered {
		if cl := object.TargetCluster(c); !seen[cl] {
			seen[cl] = true
			out = append(out, cl)
		}
	}
	for _, cl := range listed {
		if !seen[cl] {
			seen[cl] = true
			out = append(out, cl)
		}
	}
	slices.Sort(out)
	return append([]string{""}, out...)
}
