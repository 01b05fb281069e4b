package childcache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/engine/shard"
)

// childSelector selects only Loom's children, so that informers on child
// kinds cache nothing else.
var childSelector = object.LabelManagedBy + "=" + object.ManagedByValue + "," + object.LabelPartOf

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
// shared by every parent controller.
type childWatcher struct {
	// packed lists and watches children, each packed from the API
	// server's JSON as pack.SlimJSON keeps it: identity, owners, labels,
	// Loom's annotations, a fingerprint of Loom's managedFields entry, the
	// spec fields kstatus reads, and status. The rest of a child is what
	// Loom applied, which it knows from its templates.
	packed    *packwatch.Client
	namespace string
	resync    time.Duration
	route     func(OwnerEvent)
	// synced is called when an informer syncs after a reconcile found it
	// not synced, so that the parents that waited for it are retried.
	synced func(schema.GroupResource)
	// syncTimeout bounds how long a reconcile waits for a new informer's
	// first list; after that, and at once while its list fails, the
	// reconcile reports the kind as not watchable and goes on.
	syncTimeout time.Duration

	// owners finds a parent's children across every child kind.
	owners *ownerIndex

	// sharded watches each child kind per bucket of parents this replica
	// holds: informers are keyed by bucket too, and stopped when the
	// bucket goes.
	sharded bool
	// parentUID says which parent a reconcile's context works for, to
	// pick the bucket of its children (sharded only).
	parentUID func(context.Context) types.UID

	mu        sync.Mutex
	ctx       context.Context
	informers map[childKey]*childInformer
}

// childKey names a child informer: its group-resource and, on a sharded
// replica, the bucket of parents whose children it holds (noBucket
// otherwise).
type childKey struct {
	gr     schema.GroupResource
	bucket int
}

// noBucket is the bucket of an unsharded replica's child informers.
const noBucket = -1

// childInformer is one child kind's informer and what its list last said.
type childInformer struct {
	inf cache.SharedIndexInformer
	// stop ends the informer.
	stop context.CancelFunc
	// reg is Loom's handler on inf, which feeds the owner index: its sync
	// means the index holds the informer's first list.
	reg cache.ResourceEventHandlerRegistration

	mu sync.Mutex
	// listErr is the last list or watch error seen before the first sync.
	listErr error
	// waited is set once a reconcile gave up waiting for the first sync.
	waited bool
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

func newChildWatcher(ctx context.Context, packed *packwatch.Client, namespace string, resync time.Duration,
	route func(OwnerEvent), synced func(schema.GroupResource)) *childWatcher {
	return &childWatcher{
		packed: packed, namespace: namespace, resync: resync, route: route, synced: synced, ctx: ctx,
		syncTimeout: 5 * time.Second, informers: map[childKey]*childInformer{}, owners: newOwnerIndex(),
	}
}

// ensure starts the informer for gvr's group-resource if needed (in the
// watched namespace, or cluster-wide for a kind that is not namespaced)
// and waits,
// for a short bound of its own, until its cache has synced, so that the
// caller can trust what the cache says. It fails at once while the
// informer's list fails (say, forbidden by RBAC), so that a kind Loom may
// not list costs the parents that render it a NotWatchedError each, not a
// blocked worker.
func (w *childWatcher) ensure(ctx context.Context, gvr schema.GroupVersionResource, namespaced bool) error {
	gr := gvr.GroupResource()
	key := childKey{gr: gr, bucket: noBucket}
	if w.sharded {
		uid := w.parentUID(ctx)
		if uid == "" {
			return &NotWatchedError{Resource: gr, Err: errors.New("no parent to pick the bucket of children by")}
		}
		key.bucket = shard.Bucket(uid)
	}
	w.mu.Lock()
	ci, ok := w.informers[key]
	if !ok {
		ns := w.namespace
		if !namespaced {
			ns = ""
		}
		ci = w.newInformer(gvr, ns, key.bucket)
		w.informers[key] = ci
		go w.notifySynced(gr, ci)
		klog.FromContext(ctx).V(2).Info("Watching child kind", "resource", gvr.String(), "bucket", key.bucket)
	}
	w.mu.Unlock()
	if ci.synced() {
		return nil
	}
	if err := ci.err(); err != nil {
		return &NotWatchedError{Resource: gr, Err: err}
	}
	wctx, cancel := context.WithTimeout(ctx, w.syncTimeout)
	defer cancel()
	if cache.WaitForCacheSync(wctx.Done(), ci.synced) {
		return nil
	}
	ci.mu.Lock()
	ci.waited = true
	ci.mu.Unlock()
	if err := ci.err(); err != nil {
		return &NotWatchedError{Resource: gr, Err: err}
	}
	return &NotWatchedError{Resource: gr, Err: fmt.Errorf("its first list did not finish within %s", w.syncTimeout)}
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

// notifySynced waits for the informer's first sync and, if a reconcile
// gave up on it before, reports it, so that the waiting parents are
// reconciled without waiting for their backoff.
func (w *childWatcher) notifySynced(gr schema.GroupResource, ci *childInformer) {
	if !cache.WaitForCacheSync(w.ctx.Done(), ci.synced) {
		return
	}
	ci.mu.Lock()
	waited := ci.waited || ci.listErr != nil
	ci.listErr = nil
	ci.mu.Unlock()
	if waited && w.synced != nil {
		klog.FromContext(w.ctx).Info("Child kind is watched now", "resource", gr.String())
		w.synced(gr)
	}
}

func (w *childWatcher) newInformer(gvr schema.GroupVersionResource, namespace string, bucket int) *childInformer {
	selector := childSelector
	if bucket != noBucket {
		selector += "," + shard.LabelBucket + "=" + strconv.Itoa(bucket)
	}
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = selector }
	inf := packwatch.NewInformer(w.packed, gvr, namespace, w.resync, tweak)
	ctx, stop := context.WithCancel(w.ctx)
	ci := &childInformer{inf: inf, stop: stop}
	defer func() { go inf.Run(ctx.Done()) }()
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if !inf.HasSynced() {
			ci.mu.Lock()
			ci.listErr = err
			ci.mu.Unlock()
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	ci.reg, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			w.owners.update(ci, nil, obj)
			w.handle(obj, false)
		},
		UpdateFunc: func(old, cur any) {
			// Before the resync check: a relist brings new objects with
			// the same resourceVersion, and the index must not keep the
			// ones the store let go.
			w.owners.update(ci, old, cur)
			w.handleUpdate(old, cur)
		},
		DeleteFunc: func(obj any) {
			w.owners.delete(ci, obj)
			w.handle(obj, true)
		},
	})
	return ci
}

// handleUpdate ignores resyncs that changed nothing.
func (w *childWatcher) handleUpdate(old, cur any) {
	o, ok1 := packwatch.ID(old)
	c, ok2 := packwatch.ID(cur)
	if ok1 && ok2 && o.GetResourceVersion() == c.GetResourceVersion() {
		return
	}
	w.handle(cur, false)
}

// handle maps a child event to its controller owner (see pack.Owner).
func (w *childWatcher) handle(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*pack.Packed)
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
	for _, ci := range w.informersOf(gr) {
		if obj, exists, _ := ci.inf.GetIndexer().GetByKey(key); exists {
			u, _ := packwatch.Unpack(obj)
			return u
		}
	}
	return nil
}

// informersOf returns the informers of gr's children: one, or one per
// bucket this replica watches.
func (w *childWatcher) informersOf(gr schema.GroupResource) []*childInformer {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.sharded {
		if ci, ok := w.informers[childKey{gr: gr, bucket: noBucket}]; ok {
			return []*childInformer{ci}
		}
		return nil
	}
	var out []*childInformer
	for b := range shard.Buckets {
		if ci, ok := w.informers[childKey{gr: gr, bucket: b}]; ok {
			out = append(out, ci)
		}
	}
	return out
}

// keep stops the informers of buckets outside held, and forgets what they
// cached: this replica no longer reconciles those parents. It returns the
// children they cached, whose other records (what Loom applied to them)
// the caller drops too.
func (w *childWatcher) keep(held shard.Set) []object.Ref {
	w.mu.Lock()
	var gone []*childInformer
	for k, ci := range w.informers {
		if k.bucket != noBucket && !held.Has(k.bucket) {
			delete(w.informers, k)
			gone = append(gone, ci)
		}
	}
	w.mu.Unlock()
	var refs []object.Ref
	for _, ci := range gone {
		ci.stop()
		for _, obj := range ci.inf.GetStore().List() {
			if p, ok := packwatch.ID(obj); ok {
				refs = append(refs, p.Ref())
			}
		}
		w.owners.drop(ci)
	}
	return refs
}
