package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/object"
)

// hookCluster is the cluster as a chart's hooks see it through the parent
// controller (hookrun.Cluster): its child cache, Loom's client, and the
// reconcile's applier.
type hookCluster struct{ c *Controller }

func (h hookCluster) Cached(ref object.Ref) *unstructured.Unstructured {
	return h.c.sh.Cache.Get(h.c.groupResource(ref), ref.Namespace, ref.Name)
}

func (h hookCluster) Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	return h.c.sh.Applier.Resource(gvk)
}

func (h hookCluster) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	return h.c.sh.Client.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (h hookCluster) Prune(ctx context.Context, objs []*unstructured.Unstructured) object.ChangeSet {
	return h.c.applier(ctx).Prune(ctx, objs)
}
