package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/reader"
	"github.com/loom-operator/loom/engine/controller/seed"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/engine/shard"
)

// childCache is what the parent controllers use of a cluster's child
// cache (childcache.Cache): the children Loom wrote there, and the
// lookups templates make of it. It is the seam between the controllers
// and a cluster, so that each cluster can have a cache of its own, and a
// test can stand in for one.
type childCache interface {
	// Ensure starts watching the children of gvr's group-resource, if
	// needed, and waits a short while for the first list; a
	// *childcache.NotWatchedError says the kind cannot be read.
	Ensure(ctx context.Context, gvr schema.GroupVersionResource, namespaced bool) error
	// Get returns a cached child as a copy the caller owns, or nil.
	Get(gr schema.GroupResource, namespace, name string) *unstructured.Unstructured
	// Owned returns the cached children whose controller has uid, as
	// copies the caller owns.
	Owned(uid types.UID) []*unstructured.Unstructured
	// Keep makes a sharded replica watch the children of held's buckets
	// only (it let the others go, or gained some), and returns the
	// children of the buckets let go, which it no longer routes.
	Keep(held shard.Set) []object.Ref
	// Lookups gives the reader of one reconcile's lookups (package
	// reader).
	reader.Lookups
	// Forget drops what parent p read: it is gone.
	Forget(p childcache.ParentKey)
	// ForgetKind drops what the parents of gk read: their set is gone.
	ForgetKind(gk schema.GroupKind)
	// Stats are the sizes of the lookup cache, for metrics.
	Stats() childcache.Stats
}

// reader returns the render.Reader of one reconcile of parent p, whose set
// is set.
func (c *Controller) reader(ctx context.Context, p childcache.ParentKey, set *render.Set) *reader.Reader {
	return reader.New(ctx, c.sh.Cache, p, set.Config.Lookups, c.sh.Seeds, c.sh.Capabilities)
}

// markSeed writes, on the parent, the fingerprint of the seed its render
// read (seed.AnnotationSeed), when the parent does not hold it yet: from
// then on a deleted or replaced seed Secret is found (seed.Store.Seed). It is
// written before any child is applied with values from that seed.
func (c *Controller) markSeed(ctx context.Context, r *reader.Reader, parent *unstructured.Unstructured) error {
	fp := r.SeedMark()
	if fp == "" || seed.MarkOf(parent) == fp {
		return nil
	}
	if err := c.sh.Seeds.WriteMark(ctx, c.gvr, c.sh.FieldManager, parent, fp); err != nil {
		return r.Fail(err)
	}
	r.SeedMarked()
	return nil
}
