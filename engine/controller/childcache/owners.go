package childcache

import (
	"sync"

	"github.com/loom-operator/loom/engine/pack"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// ownerIndex maps the UID of a controller owner to its cached children,
// across every child kind. It replaces client-go's per-informer indexer,
// which keeps a Go map per owner UID per child kind (about 300 bytes for
// each child at 10 000 parents): here an owner costs one map entry and a
// short slice of pointers to the objects the informers' stores already
// hold.
//
// It is fed by the informers' event handlers, so it trails their stores
// by the time a notification takes; ensure waits for the handler's own
// sync before a reconcile trusts it. A reconcile that misses a child the
// store already has is followed by the reconcile that the child's event
// causes, and a child seen here is read again from the object it points
// to, so that a decision is never made on another owner's child.
type ownerIndex struct {
	mu sync.RWMutex
	m  map[types.UID][]indexed
}

// indexed is one cached child: the informer of its kind, and the object as
// that informer's last event gave it.
type indexed struct {
	ci  *childInformer
	obj any
}

func newOwnerIndex() *ownerIndex { return &ownerIndex{m: map[types.UID][]indexed{}} }

// update records cur, the new state of a child of ci's kind whose previous
// state was old (nil when it is new). A child whose controller changed
// moves to its new owner. Nothing is recorded for a generation the index
// dropped (an event it delivered as it stopped).
func (x *ownerIndex) update(ci *childInformer, old, cur any) {
	from, to := controllerUID(old), controllerUID(cur)
	x.mu.Lock()
	defer x.mu.Unlock()
	if ci.unindexed {
		return
	}
	if old != nil && from != to {
		x.removeLocked(from, ci, old)
	}
	if to == "" {
		return
	}
	list := x.m[to]
	for i := range list {
		if list[i].ci == ci && sameName(list[i].obj, cur) {
			list[i].obj = cur
			return
		}
	}
	x.m[to] = append(list, indexed{ci: ci, obj: cur})
}

// delete forgets a child of ci's kind that left the cache.
func (x *ownerIndex) delete(ci *childInformer, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	uid := controllerUID(obj)
	if uid == "" {
		return
	}
	x.mu.Lock()
	x.removeLocked(uid, ci, obj)
	x.mu.Unlock()
}

func (x *ownerIndex) removeLocked(uid types.UID, ci *childInformer, obj any) {
	list := x.m[uid]
	for i := range list {
		if list[i].ci == ci && sameName(list[i].obj, obj) {
			last := len(list) - 1
			list[i] = list[last]
			list[last] = indexed{}
			list = list[:last]
			break
		}
	}
	if len(list) == 0 {
		delete(x.m, uid)
		return
	}
	x.m[uid] = list
}

// drop forgets every child that ci cached, and any it would record
// later: its informer stopped.
func (x *ownerIndex) drop(ci *childInformer) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ci.unindexed = true
	for uid, list := range x.m {
		kept := list[:0]
		for _, e := range list {
			if e.ci != ci {
				kept = append(kept, e)
			}
		}
		clear(list[len(kept):])
		if len(kept) == 0 {
			delete(x.m, uid)
		} else {
			x.m[uid] = kept
		}
	}
}

// children returns the cached objects whose controller owner has uid,
// from the generation of each kind that serves: while a new generation
// of a kind's informer syncs beside the one it replaces, the index holds
// the children of both, and returns each child once.
func (x *ownerIndex) children(uid types.UID) []any {
	x.mu.RLock()
	defer x.mu.RUnlock()
	list := x.m[uid]
	out := make([]any, 0, len(list))
	for _, e := range list {
		if e.ci.serving() {
			out = append(out, e.obj)
		}
	}
	return out
}

// controllerUID returns the UID of a cached object's controller owner (its
// controller ownerReference or, on a cluster-scoped child of a namespaced
// parent, the parent loom.dev/owner names), or "" when it has none.
func controllerUID(obj any) types.UID {
	if p, ok := obj.(*pack.Packed); ok {
		return p.OwnerUID()
	}
	return ""
}

// sameName reports whether two cached objects of one kind have the same
// namespace and name: the same entry of an informer's store.
func sameName(a, b any) bool {
	na, oka := a.(namedObject)
	nb, okb := b.(namedObject)
	return oka && okb && na.GetName() == nb.GetName() && na.GetNamespace() == nb.GetNamespace()
}

// namedObject is what both cache forms have to tell one object from another.
type namedObject interface {
	GetName() string
	GetNamespace() string
}
