package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/chart"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/controller/childcache"
	"github.com/loom-operator/loom/engine/controller/identity"
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
	// Keep stops watching the children of buckets outside held (a
	// sharded replica let them go), and returns the children dropped.
	Keep(held shard.Set) []object.Ref
	// Reader returns the reader of one reconcile's lookups of parent p,
	// whose set declares rules; authorize, if not nil, checks each lookup
	// of a declared kind.
	Reader(ctx context.Context, p childcache.ParentKey, rules []config.LookupRule, authorize childcache.Authorizer) *childcache.Reader
	// Forget drops what parent p read: it is gone.
	Forget(p childcache.ParentKey)
	// ForgetKind drops what the parents of gk read: their set is gone.
	ForgetKind(gk schema.GroupKind)
	// Stats are the sizes of the lookup cache, for metrics.
	Stats() childcache.Stats
}

// lookupReader is the render.Reader of one reconcile: the child cache's
// reader of lookups, with what only the controller knows: the parent's
// seed (package seed), the cluster's capabilities (Shared.Capabilities), and the
// set's ServiceAccount that lookups of declared kinds are made as
// (package identity).
type lookupReader struct {
	*childcache.Reader
	// ctx is the reconcile's, which the seed's reads and writes use.
	ctx context.Context
	// seeds and caps answer Seed and Capabilities (render.Seeder,
	// render.CapabilitiesReader).
	seeds *seed.Store
	caps  func() (*chart.Capabilities, error)
	// as, when set, is the set's ServiceAccount: a lookup of a declared
	// kind is answered only if the account may make it (package identity).
	as     *identity.Account
	idents identity.Source
	// seedMark, when set, is the fingerprint of the seed this render
	// read, to be written on the parent (seed.AnnotationSeed).
	seedMark string
}

// reader returns the render.Reader of one reconcile of parent p, whose set
// declares rules.
func (c *Controller) reader(ctx context.Context, p childcache.ParentKey, rules []config.LookupRule) *lookupReader {
	r := &lookupReader{ctx: ctx, seeds: c.sh.Seeds, caps: c.sh.Capabilities}
	r.Reader = c.sh.Cache.Reader(ctx, p, rules, r.authorize)
	return r
}

// authorize checks that the set's ServiceAccount, if it has one, may
// make a lookup of a declared kind.
func (r *lookupReader) authorize(ctx context.Context, verb string, gvr schema.GroupVersionResource, namespace, name string) error {
	if r.as == nil {
		return nil
	}
	return r.idents.Authorize(ctx, r.as, verb, gvr, namespace, name)
}

// Seed is the parent's seed (render.Seeder). A lost seed is the
// parent's to settle (a *seed.LostError, not retried: the annotation that
// accepts a new seed brings the next reconcile); any other failure is the
// environment's, retried like a lookup that failed.
func (r *lookupReader) Seed(parent *unstructured.Unstructured) (render.Seed, error) {
	b, mark, err := r.seeds.Seed(r.ctx, parent)
	var lost *seed.LostError
	if errors.As(err, &lost) {
		return render.Seed{}, err
	}
	if err != nil {
		return render.Seed{}, r.Fail(err)
	}
	if mark {
		r.seedMark = seed.Fingerprint(b.Bytes)
	}
	return b, nil
}

// keep keeps the values a render's generating functions made in the
// parent's seed Secret (seed.Store.Keep). A failure is retried.
func (r *lookupReader) keep(parent *unstructured.Unstructured, generated map[string]string) error {
	if err := r.seeds.Keep(r.ctx, parent, generated); err != nil {
		return r.Fail(err)
	}
	return nil
}

// markSeed writes, on the parent, the fingerprint of the seed its render
// read (seed.AnnotationSeed), when the parent does not hold it yet: from
// then on a deleted or replaced seed Secret is found (seed.Store.Seed). It is
// written before any child is applied with values from that seed.
func (c *Controller) markSeed(reader *lookupReader, parent *unstructured.Unstructured) error {
	fp := reader.seedMark
	if fp == "" || seed.MarkOf(parent) == fp {
		return nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": string(parent.GetUID()), "annotations": map[string]any{seed.AnnotationSeed: seed.Mark(parent, fp)},
	}})
	if err != nil {
		return err
	}
	_, err = c.sh.Client.Resource(c.gvr).Namespace(parent.GetNamespace()).Patch(reader.ctx, parent.GetName(), types.MergePatchType, body,
		metav1.PatchOptions{FieldManager: c.sh.FieldManager})
	if err != nil {
		return reader.Fail(fmt.Errorf("write %s on %s %s/%s: %w", seed.AnnotationSeed, c.gvk.Kind, parent.GetNamespace(), parent.GetName(), err))
	}
	reader.seedMark = ""
	return nil
}

// Capabilities are the cluster's, for a chart's .Capabilities
// (render.CapabilitiesReader). A failure is the environment's, retried.
func (r *lookupReader) Capabilities() (*chart.Capabilities, error) {
	caps, err := r.caps()
	if err != nil {
		return nil, r.Fail(err)
	}
	return caps, nil
}
