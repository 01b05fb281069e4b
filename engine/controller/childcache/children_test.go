package childcache

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/engine/shard"
)

// shardChild returns the ConfigMap ns/name controlled by the parent with
// uid, at resourceVersion rv, packed as the child informers hold it.
func shardChild(t *testing.T, name string, uid types.UID, rv string) *pack.Packed {
	t.Helper()
	return packChild(t, u(t, fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: ns
  resourceVersion: %q
  labels: {loom.dev/shard-bucket: %q}
  ownerReferences:
  - {apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: p, uid: %s, controller: true}
`, name, rv, shard.BucketLabel(uid), uid)))
}

func TestSelectorOf(t *testing.T) {
	if got := selectorOf(false, 0); got != childSelector {
		t.Errorf("unsharded selector = %q, want %q", got, childSelector)
	}
	held := shard.Set(0).Add(3).Add(12)
	want := childSelector + ",loom.dev/shard-bucket in (12,3)"
	if got := selectorOf(true, held); got != want {
		t.Errorf("selector of {3,12} = %q, want %q", got, want)
	}
}

func TestNextStep(t *testing.T) {
	a, b := shard.Set(0).Add(1), shard.Set(0).Add(1).Add(2)
	tests := []struct {
		name string
		want shard.Set
		g    gens
		step genStep
	}{
		{"nothing runs, none held", 0, gens{}, stepNone},
		{"nothing runs, some held", a, gens{}, stepStart},
		{"live lists them", a, gens{live: a, hasLive: true}, stepNone},
		{"live lists others", b, gens{live: a, hasLive: true}, stepStart},
		{"next lists them", b, gens{live: a, hasLive: true, next: b, hasNext: true}, stepNone},
		{"back to what live lists", a, gens{live: a, hasLive: true, next: b, hasNext: true}, stepDropNext},
		{"a third set while next syncs", shard.Set(0).Add(5), gens{live: a, hasLive: true, next: b, hasNext: true}, stepStart},
		{"none held any more", 0, gens{live: a, hasLive: true, next: b, hasNext: true}, stepStopAll},
		{"none held, live only", 0, gens{live: a, hasLive: true}, stepStopAll},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextStep(tt.want, tt.g); got != tt.step {
				t.Errorf("nextStep(%s, %+v) = %d, want %d", tt.want, tt.g, got, tt.step)
			}
		})
	}
}

func TestEarlyFor(t *testing.T) {
	tests := []struct {
		name                string
		ev                  eventType
		prevLists, prevSame bool
		want                earlyStep
	}{
		{"first list of a child already held as it is", eventAdd, true, true, earlyDrop},
		{"first list of a child held at another version", eventAdd, true, false, earlyKeep},
		{"first list of a gained bucket's child", eventAdd, false, false, earlyRoute},
		{"change of a child already held", eventUpdate, true, true, earlyKeep},
		{"delete of a child already held", eventDelete, true, false, earlyKeep},
		{"change of a gained bucket's child", eventUpdate, false, false, earlyRoute},
		{"delete of a gained bucket's child", eventDelete, false, false, earlyRoute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := earlyFor(tt.ev, tt.prevLists, tt.prevSame); got != tt.want {
				t.Errorf("earlyFor = %d, want %d", got, tt.want)
			}
		})
	}
}

// routes records the events a childWatcher routes, by child name.
type routes struct {
	mu  sync.Mutex
	got []string
}

func (r *routes) add(ev OwnerEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := ev.Child.GetName()
	if ev.Deleted {
		name += " deleted"
	}
	r.got = append(r.got, name)
}

// take returns the names routed since the last take, sorted.
func (r *routes) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	sort.Strings(out)
	return out
}

// uidKey is the context key of the parent a test's reconcile works for.
type uidKey struct{}

func forParent(uid types.UID) context.Context {
	return context.WithValue(context.Background(), uidKey{}, uid)
}

// shardedWatcher returns a sharded childWatcher over f that holds held
// until keep says otherwise.
func shardedWatcher(t *testing.T, f *fakeChildren, held shard.Set) (*childWatcher, *routes) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &routes{}
	w := newChildWatcher(ctx, nil, "", 0, r.add, nil)
	w.listWatch = f.listWatch
	w.sharded, w.held = true, func() shard.Set { return held }
	w.parentUID = func(ctx context.Context) types.UID { uid, _ := ctx.Value(uidKey{}).(types.UID); return uid }
	return w, r
}

var (
	cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cmGR  = cmGVR.GroupResource()
)

// names returns the names of a parent's cached children, sorted.
func names(w *childWatcher, uid types.UID) []string {
	var out []string
	for _, c := range w.owned(uid) {
		out = append(out, c.GetName())
	}
	sort.Strings(out)
	return out
}

// waitLive waits until the live informer of ConfigMaps lists held.
func waitLive(t *testing.T, w *childWatcher, held shard.Set) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		kw := w.kinds[cmGR]
		w.mu.Unlock()
		if ci := kw.live.Load(); ci != nil && ci.held == held && ci.synced() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no informer of ConfigMaps serves %s", held)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A sharded replica watches each child kind with one informer that lists
// its buckets. When it gains a bucket, the informer that replaces it routes
// only the gained bucket's children (the others were routed when they
// came), and a reconcile of a gained parent waits for it; when it lets a
// bucket go, nothing is routed and its children are returned; when it
// holds nothing, nothing is watched.
func TestChildInformerFollowsHeldBuckets(t *testing.T) {
	const a = types.UID("parent-a")
	bA := shard.Bucket(a)
	b := uidOutside(t, shard.Set(0).Add(bA))
	bB := shard.Bucket(b)
	f := &fakeChildren{}
	f.add(t, "a-cm", a, "1")
	f.add(t, "b-cm", b, "1")
	onlyA, both, onlyB := shard.Set(0).Add(bA), shard.Set(0).Add(bA).Add(bB), shard.Set(0).Add(bB)
	w, r := shardedWatcher(t, f, onlyA)

	if err := w.ensure(forParent(a), cmGVR, true); err != nil {
		t.Fatalf("ensure for a parent of a held bucket: %v", err)
	}
	if diff := cmp.Diff([]string{"a-cm"}, r.take()); diff != "" {
		t.Errorf("routed by the first informer (-want +got):\n%s", diff)
	}
	if err := w.ensure(forParent(b), cmGVR, true); !errors.Is(err, errNotHeld) {
		t.Errorf("ensure for a parent of a bucket not held = %v, want errNotHeld", err)
	}

	// Gain b's bucket.
	if refs := w.keep(both); len(refs) != 0 {
		t.Errorf("keep of a larger set let children go: %v", refs)
	}
	if err := w.ensure(forParent(b), cmGVR, true); err != nil {
		t.Fatalf("ensure for a parent of a gained bucket: %v", err)
	}
	if diff := cmp.Diff([]string{"b-cm"}, r.take()); diff != "" {
		t.Errorf("routed when a bucket was gained (-want +got):\n%s", diff)
	}
	for uid, want := range map[types.UID][]string{a: {"a-cm"}, b: {"b-cm"}} {
		if diff := cmp.Diff(want, names(w, uid)); diff != "" {
			t.Errorf("children of %s (-want +got):\n%s", uid, diff)
		}
	}

	// Let a's bucket go.
	refs := w.keep(onlyB)
	if diff := cmp.Diff([]string{"ConfigMap ns/a-cm"}, refStrings(refs)); diff != "" {
		t.Errorf("children let go (-want +got):\n%s", diff)
	}
	waitLive(t, w, onlyB)
	if got := r.take(); len(got) != 0 {
		t.Errorf("routed when a bucket was let go: %v, want nothing", got)
	}
	if got := names(w, a); len(got) != 0 {
		t.Errorf("children of a parent of a bucket let go: %v, want none", got)
	}
	if diff := cmp.Diff([]string{"b-cm"}, names(w, b)); diff != "" {
		t.Errorf("children of the kept parent (-want +got):\n%s", diff)
	}
	if w.get(cmGR, "ns", "a-cm") != nil || w.get(cmGR, "ns", "b-cm") == nil {
		t.Errorf("get: a-cm found %v, b-cm found %v; want only b-cm", w.get(cmGR, "ns", "a-cm") != nil, w.get(cmGR, "ns", "b-cm") != nil)
	}

	// Hold nothing: no informer at all.
	if diff := cmp.Diff([]string{"ConfigMap ns/b-cm"}, refStrings(w.keep(0))); diff != "" {
		t.Errorf("children let go with the last bucket (-want +got):\n%s", diff)
	}
	if err := w.ensure(forParent(b), cmGVR, true); !errors.Is(err, errNotHeld) {
		t.Errorf("ensure with nothing held = %v, want errNotHeld", err)
	}
	if got := names(w, b); len(got) != 0 {
		t.Errorf("children cached with nothing held: %v", got)
	}
	want := []string{selectorOf(true, onlyA), selectorOf(true, both), selectorOf(true, onlyB)}
	if diff := cmp.Diff(want, f.selectorsSent()); diff != "" {
		t.Errorf("label selectors listed and watched, one per generation (-want +got):\n%s", diff)
	}
}

// A reconcile of a parent of a gained bucket reads no informer that does
// not list its bucket: it waits for the new generation, within the
// reconcile's bound, and is retried once it serves; the parents of the
// buckets held before read the old one meanwhile.
func TestGainedBucketWaitsForTheNewGeneration(t *testing.T) {
	const a = types.UID("parent-a")
	b := uidOutside(t, shard.Set(0).Add(shard.Bucket(a)))
	f := &fakeChildren{}
	f.add(t, "a-cm", a, "1")
	f.add(t, "b-cm", b, "1")
	w, r := shardedWatcher(t, f, shard.Set(0).Add(shard.Bucket(a)))
	synced := make(chan schema.GroupResource, 1)
	w.synced = func(gr schema.GroupResource) { synced <- gr }
	if err := w.ensure(forParent(a), cmGVR, true); err != nil {
		t.Fatal(err)
	}
	r.take()

	release := f.blockLists()
	w.keep(shard.Set(0).Add(shard.Bucket(a)).Add(shard.Bucket(b)))
	w.syncTimeout = 200 * time.Millisecond
	err := w.ensure(forParent(b), cmGVR, true)
	var nw *NotWatchedError
	if !errors.As(err, &nw) || errors.Is(err, errNotHeld) {
		t.Errorf("ensure for a gained parent while its informer lists = %v, want a NotWatchedError for the wait", err)
	}
	if err := w.ensure(forParent(a), cmGVR, true); err != nil {
		t.Errorf("ensure for a parent held before, while the new informer lists: %v", err)
	}
	if diff := cmp.Diff([]string{"a-cm"}, names(w, a)); diff != "" {
		t.Errorf("children of a parent held before, while the new informer lists (-want +got):\n%s", diff)
	}
	release()
	select {
	case gr := <-synced:
		if gr != cmGR {
			t.Errorf("synced(%s), want %s", gr, cmGR)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the parents that waited were not told the new informer serves")
	}
	if err := w.ensure(forParent(b), cmGVR, true); err != nil {
		t.Errorf("ensure for a gained parent once its informer serves: %v", err)
	}
	if diff := cmp.Diff([]string{"b-cm"}, r.take()); diff != "" {
		t.Errorf("routed when a bucket was gained (-want +got):\n%s", diff)
	}
}

// While a new generation syncs beside the one it replaces, the owner
// index holds the children of both and returns each child once, from the
// generation that serves; Keep's caller relies on that to reconcile on a
// whole view.
func TestOwnedDuringSwapReturnsEachChildOnce(t *testing.T) {
	const a = types.UID("parent-a")
	b := uidOutside(t, shard.Set(0).Add(shard.Bucket(a)))
	w := &childWatcher{owners: newOwnerIndex()}
	kw := &kindWatch{}
	gen := func(children ...*pack.Packed) *childInformer {
		ci := &childInformer{kind: kw, inf: cache.NewSharedIndexInformer(&cache.ListWatch{}, &pack.Packed{}, 0, cache.Indexers{})}
		for _, c := range children {
			if err := ci.inf.GetIndexer().Add(c); err != nil {
				t.Fatal(err)
			}
			w.owners.update(ci, nil, c)
		}
		return ci
	}
	old := gen(shardChild(t, "a-cm", a, "1"))
	kw.live.Store(old)
	next := gen(shardChild(t, "a-cm", a, "1"), shardChild(t, "b-cm", b, "1"))
	check := func(when string, want map[types.UID][]string) {
		t.Helper()
		for uid, names := range want {
			var got []string
			for _, c := range w.owned(uid) {
				got = append(got, c.GetName())
			}
			if diff := cmp.Diff(names, got); diff != "" {
				t.Errorf("%s: children of %s (-want +got):\n%s", when, uid, diff)
			}
		}
	}
	check("before the swap", map[types.UID][]string{a: {"a-cm"}, b: nil})
	kw.live.Store(next)
	check("after the swap", map[types.UID][]string{a: {"a-cm"}, b: {"b-cm"}})
	old.stop = func() {}
	w.retire(old)
	check("once the old one is retired", map[types.UID][]string{a: {"a-cm"}, b: {"b-cm"}})
	w.owners.update(old, nil, shardChild(t, "late", a, "2"))
	check("after a late event of the retired one", map[types.UID][]string{a: {"a-cm"}})
}

// Before a generation serves, the events of children that the serving one
// lists are dropped if it holds them as they are, and kept for the swap
// otherwise; those of a gained bucket are routed at once. The kept ones
// are routed when the generation serves.
func TestEarlyEventsAreRoutedOnce(t *testing.T) {
	const a = types.UID("parent-a")
	b := uidOutside(t, shard.Set(0).Add(shard.Bucket(a)))
	r := &routes{}
	w := &childWatcher{owners: newOwnerIndex(), route: r.add, ctx: context.Background()}
	kw := &kindWatch{gvr: cmGVR}
	newGen := func(held shard.Set) *childInformer {
		return &childInformer{kind: kw, held: held, stop: func() {},
			inf: cache.NewSharedIndexInformer(&cache.ListWatch{}, &pack.Packed{}, 0, cache.Indexers{})}
	}
	old := newGen(shard.Set(0).Add(shard.Bucket(a)))
	if err := old.inf.GetIndexer().Add(shardChild(t, "a-same", a, "1")); err != nil {
		t.Fatal(err)
	}
	if err := old.inf.GetIndexer().Add(shardChild(t, "a-changed", a, "1")); err != nil {
		t.Fatal(err)
	}
	old.live = true
	kw.live.Store(old)
	next := newGen(old.held.Add(shard.Bucket(b)))
	next.prev = old
	kw.next = next
	old.after.Store(next)

	for _, ev := range []struct {
		obj  *pack.Packed
		ev   eventType
		want bool
	}{
		{shardChild(t, "a-same", a, "1"), eventAdd, true},
		{shardChild(t, "a-changed", a, "2"), eventAdd, true},
		{shardChild(t, "b-new", b, "1"), eventAdd, false},
		{shardChild(t, "a-same", a, "3"), eventUpdate, true},
	} {
		if got := next.early(ev.obj, ev.ev); got != ev.want {
			t.Errorf("early(%s at %s) = %v, want %v", ev.obj.GetName(), ev.obj.GetResourceVersion(), got, ev.want)
		}
	}
	if got := r.take(); len(got) != 0 {
		t.Errorf("early routed %v itself, want nothing (deliver routes)", got)
	}
	if !w.promote(next) {
		t.Fatal("promote refused the next generation")
	}
	if diff := cmp.Diff([]string{"a-changed", "a-same"}, r.take()); diff != "" {
		t.Errorf("routed at the swap (-want +got):\n%s", diff)
	}
	if kw.live.Load() != next || !old.retired.Load() {
		t.Errorf("after promote: next serves %v, old retired %v; want both", kw.live.Load() == next, old.retired.Load())
	}
	if next.early(shardChild(t, "a-same", a, "4"), eventUpdate) {
		t.Errorf("a serving generation kept an event back")
	}
}

func TestChildEventsReachTheirControllerOwner(t *testing.T) {
	const owned = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  ownerReferences:
  - {apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: other, uid: u0}
  - {apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: u1, controller: true}
`
	const unowned = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  ownerReferences:
  - {apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: web, uid: u1}
`
	tests := []struct {
		name    string
		obj     func(t *testing.T) any
		deleted bool
		want    []string
	}{
		{"controller owner", func(t *testing.T) any { return packChild(t, u(t, owned)) }, false, []string{"ns/web u1 deleted=false"}},
		{"tombstone of a deleted child", func(t *testing.T) any {
			return cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: packChild(t, u(t, owned))}
		}, true, []string{"ns/web u1 deleted=true"}},
		{"owner but not controller", func(t *testing.T) any { return packChild(t, u(t, unowned)) }, false, nil},
		{"not an object", func(t *testing.T) any { return "junk" }, false, nil},
		{"not packed", func(t *testing.T) any { return u(t, owned) }, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			w := &childWatcher{route: func(ev OwnerEvent) {
				got = append(got, fmt.Sprintf("%s/%s %s deleted=%v", ev.Namespace, ev.Ref.Name, ev.Ref.UID, ev.Deleted))
			}}
			w.handle(tt.obj(t), tt.deleted)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("routed (-want +got):\n%s", diff)
			}
		})
	}
}

// keep returns the children of the buckets it let go, so that the caller
// can forget what it applied to them (see the controller's
// TestReleasedBucketsForgetTheirApplyRecords).
func TestKeepReturnsTheChildrenOfReleasedBuckets(t *testing.T) {
	const kept = types.UID("parent-kept")
	released := uidOutside(t, shard.Set(0).Add(shard.Bucket(kept)))
	f := &fakeChildren{}
	const perBucket = 50
	var want []string
	for _, uid := range []types.UID{kept, released} {
		for i := range perBucket {
			name := fmt.Sprintf("%s-%d", uid, i)
			f.add(t, name, uid, "1")
			if uid == released {
				want = append(want, "ConfigMap ns/"+name)
			}
		}
	}
	w, _ := shardedWatcher(t, f, shard.Set(0).Add(shard.Bucket(kept)).Add(shard.Bucket(released)))
	if err := w.ensure(forParent(kept), cmGVR, true); err != nil {
		t.Fatal(err)
	}
	got := refStrings(w.keep(shard.Set(0).Add(shard.Bucket(kept))))
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children let go (-want +got):\n%s", diff)
	}
}

// refStrings returns refs as strings, sorted.
func refStrings(refs []object.Ref) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.String())
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil
	}
	return out
}
