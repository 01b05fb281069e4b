package clusters

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/status"
)

// Listed reads, from the caches of the clusters place returns, the live
// object of each child that parent's status lists, keyed as
// status.Compute looks the listed children up: a suspended parent's
// status judges them so, with nothing rendered. A kind that cannot be
// watched, or a workload cluster that does not answer, leaves its
// children as last listed. It only reads.
func Listed(ctx context.Context, parent *unstructured.Unstructured, place func(cluster string) (Place, error)) map[object.Ref]*unstructured.Unstructured {
	live := map[object.Ref]*unstructured.Unstructured{}
	kinds := status.ChildKinds(parent)
	for _, cl := range Targeted(nil, status.ChildClusters(parent)) {
		pl, err := place(cl)
		if err != nil {
			continue
		}
		for _, gvk := range kinds {
			_, _ = pl.WatchGroupKind(ctx, gvk.GroupKind()) // the informer of a listed kind
		}
		for _, o := range pl.Cache.Owned(parent.GetUID()) {
			if !object.IsChildOf(o, parent) {
				continue
			}
			ref := object.RefOf(o)
			ref.Namespace, ref.Cluster = parent.GetNamespace(), cl
			live[ref] = o
		}
	}
	return live
}
