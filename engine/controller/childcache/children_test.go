package childcache

import (
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/engine/shard"
)

// shardChild returns the ConfigMap ns/name controlled by the parent with
// uid, packed as the child informers hold it.
func shardChild(t *testing.T, name string, uid types.UID) *pack.Packed {
	t.Helper()
	return packChild(t, u(t, fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: ns
  resourceVersion: "1"
  labels: {loom.dev/shard-bucket: %q}
  ownerReferences:
  - {apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: p, uid: %s, controller: true}
`, name, shard.BucketLabel(uid), uid)))
}

func TestChildWatcherKeep(t *testing.T) {
	const kept = types.UID("parent-kept")
	released := uidOutside(t, shard.Set(0).Add(shard.Bucket(kept)))
	cms := schema.GroupResource{Resource: "configmaps"}
	secrets := schema.GroupResource{Resource: "secrets"}
	w := &childWatcher{sharded: true, informers: map[childKey]*childInformer{}, owners: newOwnerIndex()}
	stopped := map[childKey]bool{}
	// One informer per kind and bucket, as ensure starts them, filled as
	// their handlers fill the store and the index.
	for _, in := range []struct {
		gr    schema.GroupResource
		uid   types.UID
		child string
	}{
		{cms, kept, "kept-cm"},
		{secrets, kept, "kept-secret"},
		{cms, released, "released-cm"},
		{secrets, released, "released-secret"},
	} {
		k := childKey{gr: in.gr, bucket: shard.Bucket(in.uid)}
		ci := &childInformer{
			inf:  cache.NewSharedIndexInformer(&cache.ListWatch{}, &pack.Packed{}, 0, cache.Indexers{}),
			stop: func() { stopped[k] = true },
		}
		w.informers[k] = ci
		obj := shardChild(t, in.child, in.uid)
		if err := ci.inf.GetIndexer().Add(obj); err != nil {
			t.Fatal(err)
		}
		w.owners.update(ci, nil, obj)
	}

	w.keep(shard.Set(0).Add(shard.Bucket(kept)))

	owned := func(uid types.UID) []string {
		var out []string
		for _, c := range w.owned(uid) {
			out = append(out, c.GetName())
		}
		sort.Strings(out)
		return out
	}
	if diff := cmp.Diff([]string{"kept-cm", "kept-secret"}, owned(kept)); diff != "" {
		t.Errorf("children of a kept bucket's parent (-want +got):\n%s", diff)
	}
	if got := owned(released); len(got) != 0 {
		t.Errorf("children of a released bucket's parent = %v, want none", got)
	}
	for _, tt := range []struct {
		gr   schema.GroupResource
		name string
		want bool
	}{
		{cms, "kept-cm", true},
		{secrets, "kept-secret", true},
		{cms, "released-cm", false},
		{secrets, "released-secret", false},
	} {
		if got := w.get(tt.gr, "ns", tt.name) != nil; got != tt.want {
			t.Errorf("get(%s ns/%s) found = %v, want %v", tt.gr, tt.name, got, tt.want)
		}
	}
	want := map[childKey]bool{
		{gr: cms, bucket: shard.Bucket(released)}:     true,
		{gr: secrets, bucket: shard.Bucket(released)}: true,
	}
	if diff := cmp.Diff(want, stopped); diff != "" {
		t.Errorf("informers stopped (-want +got):\n%s", diff)
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
	cms := schema.GroupResource{Resource: "configmaps"}
	w := &childWatcher{sharded: true, informers: map[childKey]*childInformer{}, owners: newOwnerIndex()}
	const perBucket = 50
	var want []string
	for _, uid := range []types.UID{kept, released} {
		ci := &childInformer{inf: cache.NewSharedIndexInformer(&cache.ListWatch{}, &pack.Packed{}, 0, cache.Indexers{}), stop: func() {}}
		w.informers[childKey{gr: cms, bucket: shard.Bucket(uid)}] = ci
		for i := range perBucket {
			obj := shardChild(t, fmt.Sprintf("%s-%d", uid, i), uid)
			if err := ci.inf.GetIndexer().Add(obj); err != nil {
				t.Fatal(err)
			}
			w.owners.update(ci, nil, obj)
			if uid == released {
				want = append(want, obj.Ref().String())
			}
		}
	}

	var got []string
	for _, ref := range w.keep(shard.Set(0).Add(shard.Bucket(kept))) {
		got = append(got, ref.String())
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children let go (-want +got):\n%s", diff)
	}
}
