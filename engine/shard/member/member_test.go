package member

// Unit tests of a member's gate, its drain and its view of the Leases,
// with no API server: the sets, the clock origin and the Lease cache are
// set directly. Joining, renewing and fencing are not tested here: they
// need an API server that enforces resourceVersions, which the fake
// clientset does not.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/loom-operator/loom/engine/shard"
)

const (
	testNamespace = "loom"
	testGroup     = "g"
	self          = "self"
)

// newTestMember returns a member that joined as self, its Lease valid for
// an hour, holding nothing, with an empty Lease cache.
func newTestMember(t *testing.T, objs ...runtime.Object) (*Member, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	m := New(Options{Client: client, Namespace: testNamespace, Group: testGroup})
	m.id = self
	m.validUntil.Store(int64(time.Hour))
	m.store = cache.NewStore(cache.MetaNamespaceKeyFunc)
	return m, client
}

// advance moves the member's monotonic clock d forward.
func advance(m *Member, d time.Duration) { m.base = m.base.Add(-d) }

// uidIn returns a parent UID whose bucket is in s.
func uidIn(t *testing.T, s shard.Set) types.UID {
	t.Helper()
	for i := range 10000 {
		if uid := types.UID(fmt.Sprintf("parent-%d", i)); shard.Matches(s, uid) {
			return uid
		}
	}
	t.Fatalf("no UID in %s", s)
	return ""
}

func TestEnter(t *testing.T) {
	const uid = types.UID("parent")
	b := shard.Set(0).Add(shard.Bucket(uid))
	others := shard.All().Minus(b)
	tests := []struct {
		name          string
		held, accept  shard.Set
		leaseValidFor time.Duration
		want          bool
	}{
		{"held and accepted", b, b, time.Hour, true},
		{"held, not accepted: being released", b, 0, time.Hour, false},
		{"accepted, not held", others, b.Union(others), time.Hour, false},
		{"other buckets only", others, others, time.Hour, false},
		{"held and accepted, but the Lease is no longer safe", b, b, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newTestMember(t)
			m.held.Store(uint64(tt.held))
			m.accept.Store(uint64(tt.accept))
			m.validUntil.Store(int64(m.now() + tt.leaseValidFor))
			leave, ok := m.Enter(uid)
			if ok != tt.want {
				t.Fatalf("Enter = %v, want %v", ok, tt.want)
			}
			if ok {
				leave()
			}
			// A refused Enter leaves nothing held: a drain does not wait.
			m.drain(context.Background(), klog.Background(), b)
		})
	}
}

func TestHeldLapsesWithTheLease(t *testing.T) {
	const uid = types.UID("parent")
	m, _ := newTestMember(t)
	m.give(shard.All())
	// As a renewal that started now sets it.
	m.validUntil.Store(int64(m.now() + m.opts.LeaseDuration - m.opts.Margin))
	steps := []struct {
		name    string
		advance time.Duration
		want    bool
	}{
		{"just renewed", 0, true},
		{"just before the margin", m.opts.LeaseDuration - m.opts.Margin - 100*time.Millisecond, true},
		{"once the margin before others may take over is reached", 100 * time.Millisecond, false},
		{"later", time.Hour, false},
	}
	for _, s := range steps { // in order, on one member
		advance(m, s.advance)
		want := shard.Set(0)
		if s.want {
			want = shard.All()
		}
		if got := m.Held(); got != want {
			t.Errorf("%s: Held = %s, want %s", s.name, got, want)
		}
		if got := m.Owns(uid); got != s.want {
			t.Errorf("%s: Owns = %v, want %v", s.name, got, s.want)
		}
		leave, ok := m.Enter(uid)
		if ok != s.want {
			t.Errorf("%s: Enter = %v, want %v", s.name, ok, s.want)
		}
		if ok {
			leave()
		}
	}
}

// memberLease is a member's Lease at resourceVersion rv; seconds 0 leaves
// its duration unset.
func memberLease(name, rv string, seconds int32) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, ResourceVersion: rv,
		Labels: map[string]string{LabelGroup: testGroup, LabelRole: "member"}}}
	if seconds > 0 {
		l.Spec.LeaseDurationSeconds = &seconds
	}
	return l
}

// tableLease is the group's table at resourceVersion rv.
func tableLease(rv string, t shard.Table) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: testGroup + "-shards", Namespace: testNamespace,
		ResourceVersion: rv, Labels: map[string]string{LabelGroup: testGroup, LabelRole: "table"},
		Annotations: map[string]string{AnnotationTable: t.Encode()}}}
}

func TestReleaseWaitsForEnteredWork(t *testing.T) {
	var all shard.Table
	for b := range all {
		all[b] = self
	}
	// A second member is live: self releases half its buckets.
	_, release := shard.Plan(all, self, []string{"other", self}, nil)
	if release == 0 {
		t.Fatal("Plan releases nothing; the test needs a release")
	}
	uid := uidIn(t, release)
	table := tableLease("1", all)
	m, client := newTestMember(t, table.DeepCopy())
	for _, l := range []*coordinationv1.Lease{table, memberLease("other", "1", 0)} {
		if err := m.store.Add(l); err != nil {
			t.Fatal(err)
		}
	}
	m.give(shard.All())
	// The table must be told only once the bucket has left the held set.
	ownedAtTableWrite := make(chan bool, 1)
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		select { // the first write only
		case ownedAtTableWrite <- m.Owns(uid):
		default:
		}
		return false, nil, nil
	})

	leave, ok := m.Enter(uid)
	if !ok {
		t.Fatal("Enter refused a held bucket")
	}
	rebalanced := make(chan struct{})
	go func() {
		defer close(rebalanced)
		logger := ktesting.NewLogger(t, ktesting.NewConfig())
		m.rebalance(klog.NewContext(t.Context(), logger), logger)
	}()
	// The release starts: no new work is accepted for the bucket.
	err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return !shard.Set(m.accept.Load()).Has(shard.Bucket(uid)), nil
	})
	if err != nil {
		t.Fatalf("the release did not stop accepting the bucket: %v", err)
	}
	// Then it waits for the work entered: without the gate it would be
	// done in well under a millisecond, so 200ms of nothing proves it waits.
	select {
	case <-rebalanced:
		t.Fatal("the release finished while work entered for its bucket had not left")
	case <-time.After(200 * time.Millisecond):
	}
	if !m.Owns(uid) {
		t.Error("work entered for a bucket being released may no longer write")
	}

	leave()
	select {
	case <-rebalanced:
	case <-time.After(10 * time.Second):
		t.Fatal("the release did not finish after the work left")
	}
	if m.Owns(uid) {
		t.Error("the released bucket is still owned")
	}
	if _, ok := m.Enter(uid); ok {
		t.Error("Enter accepted work for a released bucket")
	}
	if got, want := m.Held(), shard.All().Minus(release); got != want {
		t.Errorf("Held = %s, want %s", got, want)
	}
	select {
	case owned := <-ownedAtTableWrite:
		if owned {
			t.Error("the table was told of the release while the bucket was still held")
		}
	default:
		t.Error("the table was not updated")
	}
}

func TestObserveMemberLiveness(t *testing.T) {
	type step struct {
		advance time.Duration
		lease   *coordinationv1.Lease // the other member's Lease now; nil: gone
		live    bool                  // whether it counts as live
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"live for LeaseDuration after first seen at a version", []step{
			{0, memberLease("other", "1", 0), true},
			{5900 * time.Millisecond, memberLease("other", "1", 0), true},
			{100 * time.Millisecond, memberLease("other", "1", 0), false},
		}},
		{"a new version counts from when it is seen", []step{
			{0, memberLease("other", "1", 0), true},
			{5 * time.Second, memberLease("other", "2", 0), true},
			{5 * time.Second, memberLease("other", "2", 0), true},
			{time.Second, memberLease("other", "2", 0), false},
			{time.Second, memberLease("other", "3", 0), true},
		}},
		{"the Lease's own duration", []step{
			{0, memberLease("other", "1", 10), true},
			{9 * time.Second, memberLease("other", "1", 10), true},
			{time.Second, memberLease("other", "1", 10), false},
		}},
		{"gone and back at the version last seen: counts afresh", []step{
			{0, memberLease("other", "1", 0), true},
			{4 * time.Second, nil, false},
			{4 * time.Second, memberLease("other", "1", 0), true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newTestMember(t)
			for i, s := range tt.steps {
				advance(m, s.advance)
				m.store.Replace(nil, "")
				if s.lease != nil {
					if err := m.store.Add(s.lease); err != nil {
						t.Fatal(err)
					}
				}
				v := m.observe()
				var expired []string
				for _, l := range v.expired {
					expired = append(expired, l.Name)
				}
				wantLive, wantExpired := []string{"other", self}, []string(nil)
				switch {
				case s.lease == nil:
					wantLive = []string{self}
				case !s.live:
					wantLive, wantExpired = []string{self}, []string{"other"}
				}
				if diff := cmp.Diff(wantLive, v.live); diff != "" {
					t.Errorf("step %d: live (-want +got):\n%s", i, diff)
				}
				if diff := cmp.Diff(wantExpired, expired); diff != "" {
					t.Errorf("step %d: expired (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestObserveTable(t *testing.T) {
	var mine, theirs shard.Table
	mine[0], theirs[0] = self, "other"
	tests := []struct {
		name   string
		cached *coordinationv1.Lease // nil: no table in the cache
		wrote  *coordinationv1.Lease
		behind []string
		want   *coordinationv1.Lease
		// wantWrote is whether the member still keeps its write.
		wantWrote bool
	}{
		{"nothing written: the cache", tableLease("4", theirs), nil, nil, tableLease("4", theirs), false},
		{"the cache holds the version the write was based on", tableLease("4", theirs), tableLease("5", mine), []string{"4"},
			tableLease("5", mine), true},
		{"the cache holds a version an earlier write was based on", tableLease("3", theirs), tableLease("5", mine), []string{"3", "4"},
			tableLease("5", mine), true},
		{"the cache has no table yet, which the write created", nil, tableLease("1", mine), []string{""},
			tableLease("1", mine), true},
		{"the cache caught up with the write", tableLease("5", mine), tableLease("5", mine), []string{"4"},
			tableLease("5", mine), false},
		{"the cache moved past the write", tableLease("6", theirs), tableLease("5", mine), []string{"4"},
			tableLease("6", theirs), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newTestMember(t)
			if tt.cached != nil {
				if err := m.store.Add(tt.cached); err != nil {
					t.Fatal(err)
				}
			}
			m.wrote, m.behind = tt.wrote, tt.behind
			v := m.observe()
			if diff := cmp.Diff(tt.want, v.table); diff != "" {
				t.Errorf("table (-want +got):\n%s", diff)
			}
			if got := m.wrote != nil; got != tt.wantWrote {
				t.Errorf("kept its write = %v, want %v", got, tt.wantWrote)
			}
		})
	}
}

// TestObserveWake checks when the view says it next changes by time alone:
// when a live member's Lease expires, or a gone member's deadline passes.
// Run wakes then, so that a replica claims a dead member's buckets at the
// moment its Lease expires rather than at its next tick.
func TestObserveWake(t *testing.T) {
	var theirs shard.Table
	theirs[0] = "gone"
	type step struct {
		advance time.Duration
		leases  []*coordinationv1.Lease
		gone    bool          // mark "gone" as fenced before observing
		want    time.Duration // 0: nothing changes by time alone
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"alone", []step{{0, nil, false, 0}}},
		{"a live member expires LeaseDuration after its renewal was seen", []step{
			{0, []*coordinationv1.Lease{memberLease("other", "1", 0)}, false, 6 * time.Second},
			{4 * time.Second, []*coordinationv1.Lease{memberLease("other", "1", 0)}, false, 2 * time.Second},
			{time.Second, []*coordinationv1.Lease{memberLease("other", "2", 0)}, false, 6 * time.Second},
		}},
		{"the first of two to expire", []step{
			{0, []*coordinationv1.Lease{memberLease("a", "1", 0)}, false, 6 * time.Second},
			{3 * time.Second, []*coordinationv1.Lease{memberLease("a", "1", 0), memberLease("b", "1", 10)}, false, 3 * time.Second},
			{4 * time.Second, []*coordinationv1.Lease{memberLease("a", "1", 0), memberLease("b", "1", 10)}, false, 6 * time.Second},
		}},
		{"a gone member's deadline", []step{
			{0, []*coordinationv1.Lease{memberLease("gone", "1", 0), tableLease("1", theirs)}, false, 6 * time.Second},
			{2 * time.Second, []*coordinationv1.Lease{tableLease("1", theirs)}, true, 4 * time.Second},
			{4 * time.Second, []*coordinationv1.Lease{tableLease("1", theirs)}, true, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newTestMember(t)
			for i, s := range tt.steps {
				advance(m, s.advance)
				m.store.Replace(nil, "")
				for _, l := range s.leases {
					if err := m.store.Add(l); err != nil {
						t.Fatal(err)
					}
				}
				if s.gone {
					m.mu.Lock()
					g := m.seen["gone"]
					g.gone = true
					m.seen["gone"] = g
					m.mu.Unlock()
				}
				got := m.observe().wake
				// The member's clock runs on between advance and observe.
				if got > s.want || got < s.want-100*time.Millisecond || (s.want == 0) != (got == 0) {
					t.Errorf("step %d: wake in %s, want %s", i, got, s.want)
				}
			}
		})
	}
}

// TestLeaveHandsOverFirst checks the order of a leaving replica's requests:
// its buckets are released in the table read from the Lease cache (no GET
// first, a round trip the others would wait for), then its Lease goes, and
// only then does it tell its subscribers (the Manager stops its caches),
// which the others need not wait for either.
func TestLeaveHandsOverFirst(t *testing.T) {
	var table shard.Table
	for b := range table {
		table[b] = self
		if b%2 == 1 {
			table[b] = "other"
		}
	}
	lease := tableLease("1", table)
	own := memberLease(self, "1", 0)
	m, client := newTestMember(t, lease.DeepCopy(), own.DeepCopy())
	for _, l := range []*coordinationv1.Lease{lease, memberLease("other", "1", 0)} {
		if err := m.store.Add(l); err != nil {
			t.Fatal(err)
		}
	}
	m.give(table.Of(self))
	var order []string
	client.PrependReactor("*", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := ""
		switch a := a.(type) {
		case k8stesting.UpdateAction:
			name = a.GetObject().(*coordinationv1.Lease).Name
		case interface{ GetName() string }:
			name = a.GetName()
		}
		order = append(order, a.GetVerb()+" "+name)
		return false, nil, nil
	})
	m.Subscribe(func(held shard.Set) { order = append(order, fmt.Sprintf("notify %s", held)) })
	logger := ktesting.NewLogger(t, ktesting.NewConfig())
	if err := m.leave(klog.NewContext(t.Context(), logger), logger); err != nil {
		t.Fatal(err)
	}
	want := []string{"update " + testGroup + "-shards", "delete " + self, "notify "}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("requests and notifications (-want +got):\n%s", diff)
	}
	got, err := client.CoordinationV1().Leases(testNamespace).Get(t.Context(), testGroup+"-shards", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := shard.DecodeTable(got.Annotations[AnnotationTable])
	if err != nil {
		t.Fatal(err)
	}
	if mine := after.Of(self); mine != 0 {
		t.Errorf("the table still gives %s to the replica that left", mine)
	}
	if theirs, want := after.Of("other"), table.Of("other"); theirs != want {
		t.Errorf("the other member holds %s after the leave, want %s", theirs, want)
	}
}
