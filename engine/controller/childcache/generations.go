package childcache

import (
	"context"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/shard"
)

// childSelector selects only Loom's children, so that informers on child
// kinds cache nothing else.
var childSelector = object.LabelManagedBy + "=" + object.ManagedByValue + "," + object.LabelPartOf

// selectorOf is the label selector of a child informer: Loom's children
// and, on a sharded replica, only those of the parents of held's buckets
// (shard.LabelSelector). held must not be empty there: an empty set
// would select every bucket.
func selectorOf(sharded bool, held shard.Set) string {
	if !sharded {
		return childSelector
	}
	return childSelector + "," + shard.LabelSelector(held)
}

// noBucket is the bucket of a reconcile on an unsharded replica: every
// informer covers it.
const noBucket = -1

// kindWatch is the watch of one child group-resource: the generation of
// its informer that serves reads and, on a sharded replica whose buckets
// changed, the next one, which lists the new set and takes over once it
// has synced (promote).
type kindWatch struct {
	gvr       schema.GroupVersionResource
	namespace string
	// live serves get, owned and ensure; nil while a sharded replica
	// holds no bucket. It is written under childWatcher.mu, and read
	// without it.
	live atomic.Pointer[childInformer]
	// next is the generation started for the buckets held now, while
	// live still lists the previous set (under childWatcher.mu).
	next *childInformer
}

// cover returns the generation whose children a reconcile of a parent
// of bucket needs, and whether it serves already: the live one if it
// lists bucket (it may not have synced yet, if it is the first), the next
// one if that lists it, or nil if none will.
func (kw *kindWatch) cover(bucket int) (*childInformer, bool) {
	live := kw.live.Load()
	if live != nil && (bucket == noBucket || live.held.Has(bucket)) {
		return live, true
	}
	// next is read under the watcher's lock by moveLocked only; a
	// reconcile reads it through the generation it points to.
	if next := live.successor(); next != nil && next.held.Has(bucket) {
		return next, false
	}
	return nil, false
}

// childInformer is one generation of a child kind's informer and what its
// list last said.
type childInformer struct {
	inf cache.SharedIndexInformer
	// kind is the watch the generation belongs to: it serves while it is
	// kind's live one (nil in tests of one informer: it always serves).
	kind *kindWatch
	// held is the set of buckets it lists (sharded only).
	held shard.Set
	// stop ends the informer.
	stop context.CancelFunc
	// done is closed when the informer ends.
	done <-chan struct{}
	// reg is Loom's handler on inf, which feeds the owner index: its sync
	// means the index holds the informer's first list.
	reg cache.ResourceEventHandlerRegistration
	// retired is set when a newer generation took over, or none is
	// wanted: its events are ignored from then on.
	retired atomic.Bool
	// unindexed is set, under ownerIndex.mu, when the owner index dropped
	// the generation's children: it adds none of them again.
	unindexed bool

	mu sync.Mutex
	// listErr is the last list or watch error seen before the first sync.
	listErr error
	// waited is set once a reconcile gave up waiting for the generation.
	waited bool
	// live is set once the generation serves. Before, prev (the
	// generation that serves meanwhile) routes the events of the
	// children it lists, and early keeps those this one sees differently
	// in pending, for when it serves.
	live    bool
	prev    *childInformer
	pending []pendingEvent
	// after is the generation started to replace this one, while it
	// serves (under childWatcher.mu for writes).
	after atomic.Pointer[childInformer]
}

// successor returns the generation started to replace ci, or nil.
func (ci *childInformer) successor() *childInformer {
	if ci == nil {
		return nil
	}
	return ci.after.Load()
}

// serving reports whether ci is the generation its kind's reads use.
func (ci *childInformer) serving() bool { return ci.kind == nil || ci.kind.live.Load() == ci }

// eventType is the kind of an informer event.
type eventType int

const (
	eventAdd eventType = iota
	eventUpdate
	eventDelete
)

// pendingEvent is an event a generation saw before it served, routed
// when it does.
type pendingEvent struct {
	obj any
	ev  eventType
}

// earlyStep is what a generation that does not serve yet does with an
// event of one of its children.
type earlyStep int

const (
	// earlyRoute routes it now: the serving generation does not list the
	// child's bucket (the replica just gained it).
	earlyRoute earlyStep = iota
	// earlyDrop drops it: the serving generation holds the child as it
	// is, and routed it when it came.
	earlyDrop
	// earlyKeep keeps it until the generation serves: the serving one
	// lists the child's bucket but may not have routed this change yet.
	earlyKeep
)

// earlyFor decides an event's earlyStep: prevLists says whether the
// serving generation lists the child's bucket, prevSame whether it holds
// the child at the same UID and resourceVersion.
func earlyFor(ev eventType, prevLists, prevSame bool) earlyStep {
	switch {
	case !prevLists:
		return earlyRoute
	case ev == eventAdd && prevSame:
		return earlyDrop
	}
	return earlyKeep
}

// early reports whether the event is not to be routed now: the
// generation does not serve yet, and earlyFor says to drop it or keep it
// for when it does (in pending).
func (ci *childInformer) early(obj any, ev eventType) bool {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if ci.live || ci.prev == nil {
		return false
	}
	p, ok := packed(obj)
	if !ok {
		return true
	}
	same := false
	if old, exists, _ := ci.prev.inf.GetIndexer().Get(p); exists {
		if o, ok := packwatch.ID(old); ok && o.GetUID() == p.GetUID() && o.GetResourceVersion() == p.GetResourceVersion() {
			same = true
		}
	}
	switch earlyFor(ev, ci.prev.held.Has(shard.Bucket(p.OwnerUID())), same) {
	case earlyDrop:
		return true
	case earlyKeep:
		ci.pending = append(ci.pending, pendingEvent{obj: obj, ev: ev})
		return true
	}
	return false
}

// genStep is what a child kind's watch does when the buckets it should
// list change (nextStep).
type genStep int

const (
	// stepNone: the live or the next generation lists them already.
	stepNone genStep = iota
	// stepStart: start a generation that lists them, dropping a next
	// one that lists another set.
	stepStart
	// stepDropNext: the live generation lists them; drop the next one.
	stepDropNext
	// stepStopAll: none is held; stop every generation (an empty set is
	// never sent as a selector, which would select every bucket).
	stepStopAll
)

// gens is what a child kind's watch runs: its live and next generations'
// sets, if it has them.
type gens struct {
	live, next       shard.Set
	hasLive, hasNext bool
}

// nextStep decides how a kind's watch that runs g follows want.
func nextStep(want shard.Set, g gens) genStep {
	switch {
	case want == 0:
		if g.hasLive || g.hasNext {
			return stepStopAll
		}
		return stepNone
	case g.hasNext && g.next == want:
		return stepNone
	case g.hasLive && g.live == want:
		if g.hasNext {
			return stepDropNext
		}
		return stepNone
	}
	return stepStart
}

// setWantLocked makes held the buckets the informers list and whose
// children's events are routed.
func (w *childWatcher) setWantLocked(held shard.Set) {
	w.want, w.wantKnown = held, true
	w.routed.Store(uint64(held))
}

// moveLocked makes kw's generations follow w.want (every child, once,
// unsharded).
func (w *childWatcher) moveLocked(kw *kindWatch) {
	live := kw.live.Load()
	if !w.sharded {
		if live == nil {
			w.startLocked(kw, 0)
		}
		return
	}
	g := gens{hasLive: live != nil, hasNext: kw.next != nil}
	if live != nil {
		g.live = live.held
	}
	if kw.next != nil {
		g.next = kw.next.held
	}
	switch nextStep(w.want, g) {
	case stepStart:
		w.dropNextLocked(kw)
		w.startLocked(kw, w.want)
	case stepDropNext:
		w.dropNextLocked(kw)
	case stepStopAll:
		w.dropNextLocked(kw)
		if live != nil {
			kw.live.Store(nil)
			w.retire(live)
		}
	}
}

// dropNextLocked retires kw's next generation, if any.
func (w *childWatcher) dropNextLocked(kw *kindWatch) {
	if kw.next == nil {
		return
	}
	next := kw.next
	kw.next = nil
	if live := kw.live.Load(); live != nil {
		live.after.Store(nil)
	}
	w.retire(next)
}

// startLocked starts a generation of kw's informer that lists held's
// children (every child, unsharded). It serves at once if no generation
// does; otherwise it is kw's next, and takes over once synced (follow).
func (w *childWatcher) startLocked(kw *kindWatch, held shard.Set) {
	ci := w.newInformer(kw, held)
	if live := kw.live.Load(); live == nil {
		ci.live = true
		kw.live.Store(ci)
	} else {
		ci.prev = live
		kw.next = ci
		live.after.Store(ci)
	}
	go ci.inf.Run(ci.done)
	go w.follow(ci)
}

// newInformer builds a generation of kw's informer, listing held's
// children; startLocked runs it.
func (w *childWatcher) newInformer(kw *kindWatch, held shard.Set) *childInformer {
	lw := w.listWatch(kw.gvr, kw.namespace, selectorOf(w.sharded, held))
	inf := packwatch.InformerOf(lw, kw.gvr, w.resync)
	ctx, stop := context.WithCancel(w.ctx)
	ci := &childInformer{inf: inf, kind: kw, held: held, stop: stop, done: ctx.Done()}
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if !inf.HasSynced() {
			ci.mu.Lock()
			ci.listErr = err
			ci.mu.Unlock()
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	ci.reg, _ = inf.AddEventHandler(w.handler(ci))
	return ci
}

// follow waits for generation ci's first sync, makes it serve if it is
// its kind's next (promote), and, if a reconcile gave up on it before,
// reports it, so that the waiting parents are reconciled without waiting
// for their backoff.
func (w *childWatcher) follow(ci *childInformer) {
	if !cache.WaitForCacheSync(ci.done, ci.synced) {
		return
	}
	if !w.promote(ci) {
		return
	}
	ci.mu.Lock()
	waited := ci.waited || ci.listErr != nil
	ci.listErr = nil
	ci.mu.Unlock()
	if waited && w.synced != nil {
		klog.FromContext(w.ctx).Info("Child kind is watched now", "resource", ci.kind.gvr.String())
		w.synced(ci.kind.gvr.GroupResource())
	}
}

// promote makes ci, synced, serve: the reads use it from now on, the
// events it kept are routed, and the generation it replaces is retired.
// It reports false if ci was dropped meanwhile.
func (w *childWatcher) promote(ci *childInformer) bool {
	kw := ci.kind
	w.mu.Lock()
	if kw.live.Load() == ci {
		w.mu.Unlock()
		return true // it served from the start
	}
	if kw.next != ci {
		w.mu.Unlock()
		return false
	}
	old := kw.live.Load()
	kw.next = nil
	kw.live.Store(ci)
	// Under ci.mu, so that the events ci sees from now on are routed
	// after the ones it kept.
	ci.mu.Lock()
	w.mu.Unlock()
	ci.live, ci.prev = true, nil
	pending := ci.pending
	ci.pending = nil
	for _, e := range pending {
		if !w.sharded || w.routable(e.obj) {
			w.handle(e.obj, e.ev == eventDelete)
		}
	}
	ci.mu.Unlock()
	if old != nil {
		w.retire(old)
	}
	klog.FromContext(w.ctx).V(2).Info("Child informer swapped", "resource", kw.gvr.String(),
		"holds", ci.held.String(), "children", len(ci.inf.GetStore().ListKeys()), "routed", len(pending))
	return true
}

// routable reports whether the child's bucket is one whose events are
// routed.
func (w *childWatcher) routable(obj any) bool {
	p, ok := packed(obj)
	return ok && shard.Set(w.routed.Load()).Has(shard.Bucket(p.OwnerUID()))
}

// retire ends generation ci: its events are ignored, its informer stops,
// and the owner index forgets its children.
func (w *childWatcher) retire(ci *childInformer) {
	ci.retired.Store(true)
	ci.stop()
	w.owners.drop(ci)
	ci.mu.Lock()
	ci.prev, ci.pending = nil, nil
	ci.mu.Unlock()
	ci.after.Store(nil)
}

// keep makes the informers list the children of held's buckets only:
// each kind's informer is replaced by a generation that lists held (or
// stopped, if held is empty), and the events of the children of other
// buckets are no longer routed: this replica no longer reconciles those
// parents. It returns the children of the buckets let go that the
// informers cached, whose other records (what Loom applied to them) the
// caller drops too. It does not wait for the new generations.
func (w *childWatcher) keep(held shard.Set) []object.Ref {
	if !w.sharded {
		return nil
	}
	w.mu.Lock()
	var scan []*childInformer
	for _, kw := range w.kinds {
		for _, ci := range []*childInformer{kw.live.Load(), kw.next} {
			if ci != nil && ci.held.Minus(held) != 0 {
				scan = append(scan, ci)
			}
		}
	}
	w.setWantLocked(held)
	for _, kw := range w.kinds {
		w.moveLocked(kw)
	}
	w.mu.Unlock()
	seen := map[object.Ref]bool{}
	var refs []object.Ref
	for _, ci := range scan {
		for _, obj := range ci.inf.GetStore().List() {
			p, ok := packwatch.ID(obj)
			if !ok || held.Has(shard.Bucket(p.OwnerUID())) || seen[p.Ref()] {
				continue
			}
			seen[p.Ref()] = true
			refs = append(refs, p.Ref())
		}
	}
	return refs
}
