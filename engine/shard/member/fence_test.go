package member

import (
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/loom-operator/loom/engine/shard"
)

// TestClaimOnlyFromFencedMembers: self claims the buckets of the member
// "other" only once this replica deleted other's Lease (or was told it is
// NotFound) and other's deadline, as this replica saw it, has passed. A
// fence that fails with a timeout, 429 or 5xx leaves them where they are,
// and so does a Lease missing from the cache (deleted by hand), until its
// holder could no longer be writing.
func TestClaimOnlyFromFencedMembers(t *testing.T) {
	leases := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	timeout := apierrors.NewTimeoutError("request did not complete within the allowed duration", 1)
	tooMany := apierrors.NewTooManyRequests("slow down", 1)
	internal := apierrors.NewInternalError(errors.New("etcd is unhappy"))
	type step struct {
		advance time.Duration
		cached  bool  // whether other's Lease (version 1) is in the cache
		stored  bool  // whether the API server still has it
		fail    error // what every delete and get of other's Lease answers, if set
		want    bool  // whether self holds other's buckets after this step
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"expired, and the fence deleted its Lease", []step{
			{0, true, true, nil, false},
			{7 * time.Second, true, true, nil, true},
		}},
		{"expired, and the fence found it NotFound", []step{
			{0, true, false, nil, false},
			{7 * time.Second, true, false, nil, true},
		}},
		{"expired, and the fence timed out", []step{
			{0, true, true, nil, false},
			{7 * time.Second, true, true, timeout, false},
			{time.Minute, true, true, timeout, false},
			{0, true, true, nil, true}, // the next fence that succeeds
		}},
		{"expired, and the fence was throttled (429)", []step{
			{0, true, true, nil, false},
			{7 * time.Second, true, true, tooMany, false},
		}},
		{"expired, and the fence met a 500", []step{
			{0, true, true, nil, false},
			{7 * time.Second, true, true, internal, false},
		}},
		{"deleted by hand while live: claimed once its holder's deadline passed", []step{
			{0, true, true, nil, false},
			{3 * time.Second, false, false, nil, false},
			{2900 * time.Millisecond, false, false, nil, false},
			{200 * time.Millisecond, false, false, nil, true},
		}},
		{"never seen: claimed a LeaseDuration after its absence was confirmed", []step{
			{0, false, false, nil, false},
			{5900 * time.Millisecond, false, false, nil, false},
			{200 * time.Millisecond, false, false, nil, true},
		}},
		{"missing from the cache, and the API server cannot say", []step{
			{0, false, false, internal, false},
			{time.Minute, false, false, timeout, false},
		}},
		{"missing from the cache but still on the API server: fenced when it expires", []step{
			{0, false, true, nil, false},
			{3 * time.Second, false, true, nil, false},
			{4 * time.Second, false, true, nil, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var theirs shard.Table
			for b := range theirs {
				theirs[b] = "other"
			}
			table := tableLease("1", theirs)
			m, client := newTestMember(t, table.DeepCopy())
			var fail error
			for _, verb := range []string{"delete", "get"} {
				client.PrependReactor(verb, "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.(interface{ GetName() string }).GetName() == "other" && fail != nil {
						return true, nil, fail
					}
					return false, nil, nil
				})
			}
			logger := ktesting.NewLogger(t, ktesting.NewConfig())
			ctx := klog.NewContext(t.Context(), logger)
			gvr := leases.WithVersion("v1")
			for i, s := range tt.steps {
				advance(m, s.advance)
				fail = s.fail
				m.store.Replace(nil, "")
				if err := m.store.Add(table); err != nil {
					t.Fatal(err)
				}
				if s.cached {
					if err := m.store.Add(memberLease("other", "1", 0)); err != nil {
						t.Fatal(err)
					}
				}
				_, err := client.Tracker().Get(gvr, testNamespace, "other")
				switch {
				case s.stored && apierrors.IsNotFound(err):
					if err := client.Tracker().Add(memberLease("other", "1", 0)); err != nil {
						t.Fatal(err)
					}
				case !s.stored && err == nil:
					if err := client.Tracker().Delete(gvr, testNamespace, "other"); err != nil {
						t.Fatal(err)
					}
				}
				m.rebalance(ctx, logger)
				want := shard.Set(0)
				if s.want {
					want = shard.All()
				}
				if got := shard.Set(m.held.Load()); got != want {
					t.Fatalf("step %d: self holds %s, want %s", i, got, want)
				}
				stored, err := client.Tracker().Get(gvr, testNamespace, table.Name)
				if err != nil {
					t.Fatal(err)
				}
				got, err := m.decode(stored.(*coordinationv1.Lease))
				if err != nil {
					t.Fatal(err)
				}
				if wantTable := theirs; s.want && got.Of(self) != shard.All() || !s.want && got != wantTable {
					t.Fatalf("step %d: table %s", i, got.Encode())
				}
			}
		})
	}
}
