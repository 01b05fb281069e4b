package childcache

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/shard"
)

// Config is what one cluster's child cache is built from.
type Config struct {
	// Children lists and watches children, packed as packwatch.Child
	// packs them for the field manager Loom applies as.
	Children *packwatch.Client
	// Dynamic reads looked-up objects.
	Dynamic dynamic.Interface
	// Metadata runs the metadata-only informers of looked-up kinds.
	Metadata metadata.Interface
	// Mapper maps looked-up kinds to their resources.
	Mapper meta.RESTMapper
	// Namespace limits the cache to one namespace; "" means all.
	Namespace string
	// Resync is the informers' resync period; 0 disables it.
	Resync time.Duration
	// ParentUID, when set, makes the cache sharded: it watches each child
	// kind with one informer that lists the children of the buckets this
	// replica holds (Held, then Keep), and a reconcile reads it once it
	// lists the bucket of the parent that ParentUID says the reconcile's
	// context works for.
	ParentUID func(context.Context) types.UID
	// Held says which buckets a sharded replica holds, until the first
	// Keep says so; nil reads as none.
	Held func() shard.Set
	// Route receives each change to a child, for its controller owner.
	Route func(OwnerEvent)
	// Synced is called when a child kind's informer syncs after a
	// reconcile gave up waiting for it, so that the parents that waited
	// are retried.
	Synced func(schema.GroupResource)
	// Enqueue re-reconciles a parent that read an object that changed.
	Enqueue func(ParentKey)
}

// Cache is one cluster's child cache: the informers of Loom's children
// there, the index of them by controller owner, and the lookup cache
// that answers templates' lookups from that cluster. Each cluster Loom
// writes children to has a Cache of its own; a Cache holds no state
// outside itself.
type Cache struct {
	children *childWatcher
	lookups  *lookupCache
}

// New returns the child cache of the cluster cfg reaches. Its informers
// start lazily, the first time a kind is ensured or looked up, and stop
// when ctx is done.
func New(ctx context.Context, cfg Config) *Cache {
	w := newChildWatcher(ctx, cfg.Children, cfg.Namespace, cfg.Resync, cfg.Route, cfg.Synced)
	if cfg.ParentUID != nil {
		w.sharded, w.parentUID, w.held = true, cfg.ParentUID, cfg.Held
	}
	return &Cache{
		children: w,
		lookups:  newLookupCache(ctx, cfg.Dynamic, cfg.Metadata, cfg.Mapper, w, cfg.Namespace, cfg.Resync, cfg.Enqueue),
	}
}

// Ensure starts the informer of gvr's children if needed and waits, for a
// short bound, until it has synced; a *NotWatchedError says the kind
// cannot be read (see childWatcher.ensure).
func (c *Cache) Ensure(ctx context.Context, gvr schema.GroupVersionResource, namespaced bool) error {
	return c.children.ensure(ctx, gvr, namespaced)
}

// Get returns the cached child as a copy the caller owns, or nil.
func (c *Cache) Get(gr schema.GroupResource, namespace, name string) *unstructured.Unstructured {
	return c.children.get(gr, namespace, name)
}

// Owned returns the cached children whose controller has uid, across
// every child kind watched so far, as copies the caller owns.
func (c *Cache) Owned(uid types.UID) []*unstructured.Unstructured {
	return c.children.owned(uid)
}

// Keep makes a sharded cache watch the children of held's buckets only:
// each child kind's informer is replaced, once the new one has synced, by
// one that lists held (none if held is empty), and the children of the
// other buckets are no longer routed. It returns the children of the
// buckets let go that the cache held, and does not wait (see
// childWatcher.keep).
func (c *Cache) Keep(held shard.Set) []object.Ref {
	return c.children.keep(held)
}

// Reader returns the render.Reader of one reconcile of parent p, whose
// set declares rules; authorize, if not nil, checks each lookup of a
// declared kind.
func (c *Cache) Reader(ctx context.Context, p ParentKey, rules []config.LookupRule, authorize Authorizer) *Reader {
	return c.lookups.reader(ctx, p, rules, authorize)
}

// Forget drops everything parent p read: it is gone.
func (c *Cache) Forget(p ParentKey) { c.lookups.forget(p) }

// ForgetKind drops everything the parents of kind gk read: its set is
// gone.
func (c *Cache) ForgetKind(gk schema.GroupKind) { c.lookups.forgetKind(gk) }

// Stats returns the sizes of what the lookup cache holds.
func (c *Cache) Stats() Stats { return c.lookups.stats() }
