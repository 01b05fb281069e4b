package childcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/engine/shard"
)

// OwnerEvent is a change to a child, routed to the child's controller owner.
type OwnerEvent struct {
	// Ref is the child's controller owner (see pack.Owner).
	Ref metav1.OwnerReference
	// Namespace is the owner's namespace.
	Namespace string
	// Child is the child as the informer holds it.
	Child *pack.Packed
	// Deleted is set when the child left the cache.
	Deleted bool
}

// childWatcher runs one informer per child group-resource, whatever
// version the templates name (one object served at two versions is one
// object), started lazily the first time a template renders that kind, and
// shared by every parent controller. On a sharded replica each informer
// lists the children of the buckets the replica holds, and is replaced by
// a new generation when they change (generations.go).
type childWatcher struct {
	// listWatch lists and watches one child kind in a namespace ("" for
	// all) with a label selector: from the packed client, each child
	// packed from the API server's JSON as pack.SlimJSON keeps it:
	// identity, owners, labels, Loom's annotations, a fingerprint of
	// Loom's managedFields entry, the spec fields kstatus reads, and
	// status. The rest of a child is what Loom applied, which it knows
	// from its templates.
	listWatch func(gvr schema.GroupVersionResource, namespace, selector string) cache.ListerWatcher
	namespace string
	resync    time.Duration
	route     func(OwnerEvent)
	// synced is called when an informer serves after a reconcile found it
	// not serving, so that the parents that waited for it are retried.
	synced func(schema.GroupResource)
	// syncTimeout bounds how long a reconcile waits for an informer that
	// covers its parent's bucket to serve; after that, and at once while
	// its list fails, the reconcile reports the kind as not watchable and
	// goes on.
	syncTimeout time.Duration

	// owners finds a parent's children across every child kind.
	owners *ownerIndex

	// sharded watches only the children of the buckets this replica
	// holds.
	sharded bool
	// parentUID says which parent a reconcile's context works for, to
	// pick the bucket of its children (sharded only).
	parentUID func(context.Context) types.UID
	// held says which buckets this replica holds, until keep says so
	// (sharded only; nil reads as none).
	held func() shard.Set
	// routed is the set of buckets whose children's events are routed:
	// want, read without the lock (sharded only).
	routed atomic.Uint64

	mu  sync.Mutex
	ctx context.Context
	// kinds are the child kinds watched, by group-resource.
	kinds map[schema.GroupResource]*kindWatch
	// want is the set of buckets the informers list, from keep or, until
	// keep was called (wantKnown), from held (sharded only).
	want      shard.Set
	wantKnown bool
}

// NotWatchedError means Loom cannot read a child kind: its informer has
// not synced, usually because listing it is forbidden. The children of
// that kind are neither applied nor pruned until it syncs.
type NotWatchedError struct {
	Resource schema.GroupResource
	// Err is the list error, or the wait that ran out.
	Err error
}

// Error says which kind cannot be watched, and why.
func (e *NotWatchedError) Error() string {
	return fmt.Sprintf("cannot watch %s: %v", e.Resource, e.Err)
}

// Unwrap returns the list error.
func (e *NotWatchedError) Unwrap() error { return e.Err }

// errNotHeld says a reconcile's parent is in a bucket this replica does
// not hold, so that no informer lists its children.
var errNotHeld = errors.New("the parent's bucket is not held by this replica")

func newChildWatcher(ctx context.Context, packed *packwatch.Client, namespace string, resync time.Duration,
	route func(OwnerEvent), synced func(schema.GroupResource)) *childWatcher {
	w := &childWatcher{
		namespace: namespace, resync: resync, route: route, synced: synced, ctx: ctx,
		syncTimeout: 5 * time.Second, kinds: map[schema.GroupResource]*kindWatch{}, owners: newOwnerIndex(),
	}
	if packed != nil {
		w.listWatch = func(gvr schema.GroupVersionResource, namespace, selector string) cache.ListerWatcher {
			return packed.ListWatch(gvr, namespace, func(o *metav1.ListOptions) { o.LabelSelector = selector })
		}
	}
	return w
}

// ensurePoll is how often ensure looks again whether an informer that
// covers its parent serves: as often as client-go's WaitForCacheSync.
const ensurePoll = 100 * time.Millisecond

// ensure starts the informer for gvr's group-resource if needed (in the
// watched namespace, or cluster-wide for a kind that is not namespaced)
// and waits, for a short bound of its own, until an informer that covers
// the reconcile's parent (on a sharded replica, one that lists its
// bucket) serves, with its first list in its store and in the owner
// index, so that the caller can trust what the cache says. It fails at
// once while that informer's list fails (say, forbidden by RBAC), so that
// a kind Loom may not list costs the parents that render it a
// NotWatchedError each, not a blocked worker.
func (w *childWatcher) ensure(ctx context.Context, gvr schema.GroupVersionResource, namespaced bool) error {
	gr := gvr.GroupResource()
	bucket := noBucket
	if w.sharded {
		uid := w.parentUID(ctx)
		if uid == "" {
			return &NotWatchedError{Resource: gr, Err: errors.New("no parent to pick the bucket of children by")}
		}
		bucket = shard.Bucket(uid)
	}
	kw := w.kind(ctx, gvr, namespaced)
	if ci, serving := kw.cover(bucket); serving && ci.synced() {
		return nil // the common case: no wait to set up
	}
	var ci *childInformer
	var listErr error
	wctx, cancel := context.WithTimeout(ctx, w.syncTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(wctx, ensurePoll, true, func(context.Context) (bool, error) {
		var serving bool
		ci, serving = kw.cover(bucket)
		switch {
		case ci == nil:
			return false, errNotHeld
		case serving && ci.synced():
			return true, nil
		}
		listErr = ci.err()
		return listErr != nil, nil
	})
	switch {
	case err == nil && listErr != nil:
		return &NotWatchedError{Resource: gr, Err: listErr}
	case err == nil:
		return nil
	case errors.Is(err, errNotHeld):
		return &NotWatchedError{Resource: gr, Err: fmt.Errorf("bucket %d: %w", bucket, err)}
	case ci == nil:
		return &NotWatchedError{Resource: gr, Err: err}
	}
	ci.mu.Lock()
	ci.waited = true
	ci.mu.Unlock()
	if err := ci.err(); err != nil {
		return &NotWatchedError{Resource: gr, Err: err}
	}
	return &NotWatchedError{Resource: gr, Err: fmt.Errorf("its first list did not finish within %s", w.syncTimeout)}
}

// kind returns the watch of gvr's group-resource, starting it, and its
// first informer, if it is new.
func (w *childWatcher) kind(ctx context.Context, gvr schema.GroupVersionResource, namespaced bool) *kindWatch {
	gr := gvr.GroupResource()
	w.mu.Lock()
	defer w.mu.Unlock()
	if kw, ok := w.kinds[gr]; ok {
		return kw
	}
	kw := &kindWatch{gvr: gvr, namespace: w.namespace}
	if !namespaced {
		kw.namespace = ""
	}
	w.kinds[gr] = kw
	if w.sharded && !w.wantKnown {
		w.setWantLocked(w.heldNow())
	}
	w.moveLocked(kw)
	logger := klog.FromContext(ctx).V(2)
	if w.sharded {
		logger.Info("Watching child kind", "resource", gvr.String(), "holds", w.want.String())
	} else {
		logger.Info("Watching child kind", "resource", gvr.String())
	}
	return kw
}

// heldNow is what held says, or none.
func (w *childWatcher) heldNow() shard.Set {
	if w.held == nil {
		return 0
	}
	return w.held()
}

// synced reports whether the informer's first list is in its store and
// has reached Loom's handler, so in the owner index too.
func (ci *childInformer) synced() bool {
	return ci.inf.HasSynced() && ci.reg != nil && ci.reg.HasSynced()
}

// err returns the list error seen before the first sync, if any.
func (ci *childInformer) err() error {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	return ci.listErr
}

// handler is Loom's handler of one generation's events: it feeds the
// owner index and routes each change to the child's owner (deliver), and
// does nothing once the generation is retired.
func (w *childWatcher) handler(ci *childInformer) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if ci.retired.Load() {
				return
			}
			w.owners.update(ci, nil, obj)
			w.deliver(ci, obj, eventAdd)
		},
		UpdateFunc: func(old, cur any) {
			if ci.retired.Load() {
				return
			}
			// Before the resync check: a relist brings new objects with
			// the same resourceVersion, and the index must not keep the
			// ones the store let go.
			w.owners.update(ci, old, cur)
			if o, ok1 := packwatch.ID(old); ok1 {
				if c, ok2 := packwatch.ID(cur); ok2 && o.GetResourceVersion() == c.GetResourceVersion() {
					return // a resync that changed nothing
				}
			}
			w.deliver(ci, cur, eventUpdate)
		},
		DeleteFunc: func(obj any) {
			if ci.retired.Load() {
				return
			}
			w.owners.delete(ci, obj)
			w.deliver(ci, obj, eventDelete)
		},
	}
}

// deliver routes a child event of generation ci to the child's owner:
// not at all on a sharded replica that let the child's bucket go, and
// before ci serves only as early decides.
func (w *childWatcher) deliver(ci *childInformer, obj any, ev eventType) {
	if w.sharded {
		p, ok := packed(obj)
		if !ok || !shard.Set(w.routed.Load()).Has(shard.Bucket(p.OwnerUID())) {
			return
		}
	}
	if ci.early(obj, ev) {
		return
	}
	w.handle(obj, ev == eventDelete)
}

// packed returns the child an event carries, out of a tombstone if need
// be.
func packed(obj any) (*pack.Packed, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*pack.Packed)
	return p, ok
}

// handle maps a child event to its controller owner (see pack.Owner).
func (w *childWatcher) handle(obj any, deleted bool) {
	p, ok := packed(obj)
	if !ok {
		return
	}
	ref, ns := p.Owner()
	if ref == nil {
		return
	}
	w.route(OwnerEvent{Ref: *ref, Namespace: ns, Child: p, Deleted: deleted})
}

// owned returns the cached children whose controller (see pack.Owner) has uid, across
// every child kind watched so far, as copies the caller owns.
func (w *childWatcher) owned(uid types.UID) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range w.owners.children(uid) {
		if u, ok := packwatch.Unpack(o); ok {
			out = append(out, u)
		}
	}
	return out
}

// get returns the cached child as a copy the caller owns, or nil.
func (w *childWatcher) get(gr schema.GroupResource, namespace, name string) *unstructured.Unstructured {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	w.mu.Lock()
	kw := w.kinds[gr]
	w.mu.Unlock()
	if kw == nil {
		return nil
	}
	ci := kw.live.Load()
	if ci == nil {
		return nil
	}
	if obj, exists, _ := ci.inf.GetIndexer().GetByKey(key); exists {
		u, _ := packwatch.Unpack(obj)
		return u
	}
	return nil
}
