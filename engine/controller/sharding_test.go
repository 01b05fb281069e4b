package controller

// Unit tests of a sharded replica's parent filter, which keeps only its
// parents in the parent cache (the write guard's are in package
// transport).

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/engine/shard"
)

// fakeSharder owns the parents of the buckets in held.
type fakeSharder struct{ held shard.Set }

func (f *fakeSharder) Held() shard.Set           { return f.held }
func (f *fakeSharder) Owns(uid types.UID) bool   { return shard.Matches(f.held, uid) }
func (f *fakeSharder) Subscribe(func(shard.Set)) {}
func (f *fakeSharder) ID() string                { return "fake" }
func (f *fakeSharder) Enter(uid types.UID) (func(), bool) {
	return func() {}, f.Owns(uid)
}

// uidOutside returns a parent UID whose bucket is not in s.
func uidOutside(t *testing.T, s shard.Set) types.UID {
	t.Helper()
	for i := range 10000 {
		if uid := types.UID(fmt.Sprintf("parent-%d", i)); !shard.Matches(s, uid) {
			return uid
		}
	}
	t.Fatalf("no UID outside %s", s)
	return ""
}

// shardParent returns a parent named name with uid, packed as the parent
// informers hold it.
func shardParent(t *testing.T, name string, uid types.UID) *pack.Packed {
	t.Helper()
	return packParent(t, u(t, fmt.Sprintf(`
apiVersion: example.loom.dev/v1alpha1
kind: MyResource
metadata: {name: %s, namespace: ns, uid: %s, resourceVersion: "1"}
`, name, uid)))
}

func TestFilterShardList(t *testing.T) {
	const in1, in2 = types.UID("in-1"), types.UID("in-2")
	held := shard.Set(0).Add(shard.Bucket(in1)).Add(shard.Bucket(in2))
	out := uidOutside(t, held)
	tests := []struct {
		name  string
		held  shard.Set
		items map[string]types.UID
		want  []string
	}{
		{"keeps the held parents only", held, map[string]types.UID{"a": in1, "b": out, "c": in2}, []string{"a", "c"}},
		{"all held", held, map[string]types.UID{"a": in1, "c": in2}, []string{"a", "c"}},
		{"none held", held, map[string]types.UID{"b": out}, nil},
		{"the empty set holds nothing", 0, map[string]types.UID{"a": in1, "b": out}, nil},
		{"every bucket", shard.All(), map[string]types.UID{"a": in1, "b": out}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := &packwatch.List{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}
			for _, name := range []string{"a", "b", "c"} {
				if uid, ok := tt.items[name]; ok {
					list.Items = append(list.Items, shardParent(t, name, uid))
				}
			}
			lw := packwatch.FilterShard(&cache.ListWatch{
				ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list, nil },
			}, tt.held, ktesting.NewLogger(t, ktesting.NewConfig()))
			obj, err := lw.ListWithContextFunc(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := obj.(*packwatch.List)
			if !ok {
				t.Fatalf("list is a %T, want *packwatch.List", obj)
			}
			var names []string
			for _, p := range got.Items {
				names = append(names, p.GetName())
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("listed parents (-want +got):\n%s", diff)
			}
			if got.ResourceVersion != "7" {
				t.Errorf("list resourceVersion = %q, want 7", got.ResourceVersion)
			}
		})
	}
}

func TestFilterShardWatch(t *testing.T) {
	const in = types.UID("in-1")
	held := shard.Set(0).Add(shard.Bucket(in))
	out := uidOutside(t, held)
	if shard.Matches(held, "") {
		t.Fatal("the bucket of a bookmark's empty UID is held; pick another held UID")
	}
	events := []watch.Event{
		{Type: watch.Added, Object: shardParent(t, "a", in)},
		{Type: watch.Added, Object: shardParent(t, "b", out)},
		{Type: watch.Modified, Object: shardParent(t, "a", in)},
		{Type: watch.Modified, Object: shardParent(t, "b", out)},
		// A bookmark has no UID, and "" is outside held; it must reach the
		// reflector all the same (it ends the initial events of a
		// streaming list and moves the resourceVersion on).
		{Type: watch.Bookmark, Object: packParent(t, u(t, `
apiVersion: example.loom.dev/v1alpha1
kind: MyResource
metadata: {resourceVersion: "9", annotations: {k8s.io/initial-events-end: "true"}}
`))},
		{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired}},
		{Type: watch.Deleted, Object: shardParent(t, "b", out)},
		{Type: watch.Deleted, Object: shardParent(t, "a", in)},
	}
	fw := watch.NewFake()
	lw := packwatch.FilterShard(&cache.ListWatch{
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return fw, nil },
	}, held, ktesting.NewLogger(t, ktesting.NewConfig()))
	w, err := lw.WatchFuncWithContext(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for _, e := range events {
			fw.Action(e.Type, e.Object)
		}
		fw.Stop()
	}()
	var got []string
	for e := range w.ResultChan() {
		name := ""
		if p, ok := e.Object.(*pack.Packed); ok {
			name = p.GetName()
		}
		got = append(got, fmt.Sprintf("%s %s", e.Type, name))
	}
	want := []string{"ADDED a", "MODIFIED a", "BOOKMARK ", "ERROR ", "DELETED a"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("watch events (-want +got):\n%s", diff)
	}
}

// keepCache is a child cache whose children are grouped by bucket: Keep
// lets go of those of the buckets not held, as childcache.Cache does.
type keepCache struct {
	childCache
	byBucket map[int][]object.Ref
}

func (k *keepCache) Keep(held shard.Set) []object.Ref {
	var out []object.Ref
	for b, refs := range k.byBucket {
		if !held.Has(b) {
			out = append(out, refs...)
			delete(k.byBucket, b)
		}
	}
	return out
}

// A replica that lets buckets go forgets what it applied to their
// parents' children: the records would otherwise stay for as long as it
// runs, and its memory would tend towards every child it ever held.
func TestReleasedBucketsForgetTheirApplyRecords(t *testing.T) {
	const kept = types.UID("parent-kept")
	released := uidOutside(t, shard.Set(0).Add(shard.Bucket(kept)))
	cc := &keepCache{byBucket: map[int][]object.Ref{}}
	m := &Manager{cache: cc, applier: apply.New(nil, nil, ""), controllers: map[schema.GroupKind]*Controller{}}
	const perBucket = 50
	for _, uid := range []types.UID{kept, released} {
		for i := range perBucket {
			ref := object.Ref{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "ns", Name: fmt.Sprintf("%s-%d", uid, i)}
			cc.byBucket[shard.Bucket(uid)] = append(cc.byBucket[shard.Bucket(uid)], ref)
			m.applier.Observe(ref, "1") // as the child's watch event does
		}
	}
	if got := m.applier.Len(); got != 2*perBucket {
		t.Fatalf("the applier keeps %d records before the release, want %d", got, 2*perBucket)
	}

	m.resharded(shard.Set(0).Add(shard.Bucket(kept)))

	if got := m.applier.Len(); got != perBucket {
		t.Errorf("the applier keeps %d records after one of two buckets went, want %d (the kept bucket's)", got, perBucket)
	}
}
