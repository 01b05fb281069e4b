package finalizer

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/object"
)

// Children placed in a workload cluster (object.AnnotationCluster) carry
// no ownerReference, which cannot cross clusters, so no garbage collector
// deletes them with their parent. The parent carries
// object.FinalizerRemoteChildren, with the clusters in
// object.AnnotationRemoteClusters, from before the first such child is
// applied until none is left; when the parent is deleted, Remote deletes
// its children in each of those clusters, and the finalizer goes only
// once none is left there. A cluster whose registration is gone, or that
// does not answer, keeps the parent, whose status says which and why.
//
// The guard's annotation is written as group-kinds are for the other two
// guards: a cluster's name (a DNS subdomain) reads back as the same
// string through schema.ParseGroupKind and GroupKind.String.

// Remote deletes and finds a parent's children in workload clusters
// (clusters.Fleet), listed afresh there, as the identity the context
// carries.
type Remote interface {
	// Delete deletes parent's children in the clusters named. pending is
	// true when it asked for a delete just now; it returns a
	// *DeletionBlockedError when children it asked to delete before are
	// still there, and the failure of a cluster it cannot reach.
	Delete(ctx context.Context, parent *unstructured.Unstructured, clusters []string) (pending bool, err error)
	// Left counts parent's children in the clusters named.
	Left(ctx context.Context, parent *unstructured.Unstructured, clusters []string) (int, error)
}

// remoteGuard keeps a parent until its children in workload clusters are
// deleted.
var remoteGuard = &guard{
	finalizer: object.FinalizerRemoteChildren, annotation: object.AnnotationRemoteClusters,
	name: "remote-children", guarded: "children in workload clusters", kinds: remoteClusters,
}

// remoteClusters returns the workload clusters of the children in lists,
// as the guard's annotation holds them.
func remoteClusters(lists ...[]*unstructured.Unstructured) []schema.GroupKind {
	var out []schema.GroupKind
	for _, list := range lists {
		for _, o := range list {
			if cl := object.TargetCluster(o); cl != "" {
				out = append(out, schema.ParseGroupKind(cl))
			}
		}
	}
	return out
}

// listedClusters returns the clusters parent's remote guard lists.
func listedClusters(parent *unstructured.Unstructured) []string {
	var out []string
	for _, gk := range object.ParseGroupKinds(parent.GetAnnotations()[object.AnnotationRemoteClusters]) {
		out = append(out, gk.String())
	}
	return out
}

// settleRemote is settleGuard for the remote guard: while a child renders
// or lives in a workload cluster, the finalizer lists its cluster; once
// none does, and none is left in any cluster listed, it goes.
func (gs *Guards) settleRemote(ctx context.Context, parent *unstructured.Unstructured, rendered []*unstructured.Unstructured, live map[object.Ref]*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	current := liveList(live)
	if len(remoteClusters(rendered, current)) > 0 {
		return gs.ensureGuard(ctx, remoteGuard, parent, rendered, current)
	}
	if !remoteGuard.has(parent) || gs.Remote == nil {
		return parent, nil
	}
	left, err := gs.Remote.Left(ctx, parent, listedClusters(parent))
	if err != nil || left > 0 {
		return parent, err
	}
	return gs.removeFinalizer(ctx, parent, remoteGuard)
}

// finalizeRemote deletes a deleted parent's children in workload clusters
// and, once none is left, removes the remote guard.
func (gs *Guards) finalizeRemote(ctx context.Context, parent *unstructured.Unstructured) (_ *unstructured.Unstructured, pending bool, err error) {
	if gs.Remote != nil {
		if pending, err = gs.Remote.Delete(ctx, parent, listedClusters(parent)); err != nil || pending {
			return parent, pending, err
		}
	}
	parent, err = gs.removeFinalizer(ctx, parent, remoteGuard)
	return parent, false, err
}
