package rollouts

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/loom-operator/loom/engine/render"
)

// Host is what a rollout needs of the parent controller of its set: the
// set as its folder holds it now, the parents the rollout decides over,
// and a way to have the parents whose revision moved reconciled. It is the
// seam between the rollout and the parent controller, which implements
// it; a test hands the rollout a fake one.
type Host interface {
	// Folder is the set as loaded from its folder now (a reload replaces
	// it).
	Folder() *render.Set
	// Parents returns each parent the controller caches and that is not
	// being deleted; each carries the newest status Loom knows of.
	Parents() []Parent
	// CountParents is the number of parents the controller caches; none
	// is decoded.
	CountParents() int
	// AllParents reads every parent of the kind that is not being deleted
	// from the API server, not only those this replica caches, and hands
	// each to each, with the newest status Loom knows of: the decider of
	// a sharded rollout decides over the parents of every replica, and
	// keeps only what Decide needs of each.
	AllParents(ctx context.Context, each func(Parent)) error
	// Enqueue asks for a reconcile of one parent.
	Enqueue(name cache.ObjectName)
	// EnqueueAll asks for a reconcile of every cached parent once the
	// controller runs; before, it does nothing.
	EnqueueAll()
	// Sharded reports whether this replica is one of a sharded group.
	Sharded() bool
	// EnterShard starts work for uid on a sharded replica, as a reconcile
	// of a parent does: ok is false when this replica does not hold uid's
	// bucket; else the returned context marks the writes made with it as
	// work for uid, and leave ends the work.
	EnterShard(ctx context.Context, uid types.UID) (wctx context.Context, leave func(), ok bool)
}

// Resolver resolves a kind to the resource the cluster serves it as; an
// error means the cluster does not serve it.
type Resolver interface {
	Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error)
}

// Config is what a rollout needs of the Manager: the same for every set.
type Config struct {
	// Client reads and writes TemplateSets and TemplateRevisions.
	Client dynamic.Interface
	// Resolver tells whether the cluster serves the rollout CRDs.
	Resolver Resolver
	// Recorder records the rollout's Events.
	Recorder record.EventRecorder
	// Metrics are the series the rollout publishes.
	Metrics Metrics
	// Clock is the time rollout decisions are made at.
	Clock clock.PassiveClock
	// Namespace is the one namespace Loom watches; empty for all.
	Namespace string
	// FieldManager writes the TemplateSets and TemplateRevisions.
	FieldManager string
	// Timeout bounds each request of the rollout.
	Timeout time.Duration
}
