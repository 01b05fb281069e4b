package childcache

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

func TestPickInformer(t *testing.T) {
	cms := schema.GroupResource{Resource: "configmaps"}
	kind := informerKey{gr: cms, namespace: "team-a"}
	named := func(name string) informerKey { k := kind; k.name = name; return k }
	tests := []struct {
		name    string
		lookup  string
		running []informerKey
		named   int
		want    informerKey
	}{
		{name: "a first name gets an informer of its own", lookup: "platform", want: named("platform")},
		{name: "a name whose informer runs keeps it", lookup: "platform", running: []informerKey{named("platform"), kind}, named: MaxNamedInformers, want: named("platform")},
		{name: "a list takes the kind's informer", lookup: "", running: []informerKey{named("platform")}, named: 1, want: kind},
		{name: "once the kind's informer runs, new names use it", lookup: "other", running: []informerKey{kind}, want: kind},
		{name: "below the bound, a new name gets its own", lookup: "other", running: []informerKey{named("platform")}, named: MaxNamedInformers - 1, want: named("other")},
		{name: "at the bound, a new name starts the kind's", lookup: "other", named: MaxNamedInformers, want: kind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			running := func(k informerKey) bool {
				for _, r := range tt.running {
					if r == k {
						return true
					}
				}
				return false
			}
			got := pickInformer(kind, tt.lookup, running, tt.named)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(informerKey{})); diff != "" {
				t.Errorf("pickInformer (-want +got):\n%s", diff)
			}
		})
	}
}

// running returns the informers ip runs, as "namespace/name" ("" for the
// kind's), sorted.
func running(ip *informerPool) []string {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	var out []string
	for ik := range ip.informers {
		out = append(out, ik.namespace+"/"+ik.name)
	}
	sort.Strings(out)
	return out
}

// An informer runs while something is read through it. The kind's, once
// started past MaxNamedInformers names, stops with its last reader; and
// when fewer than demoteBelow names are read (with no list), its names
// get informers of their own and it stops.
func TestInformerPoolReleases(t *testing.T) {
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	name := func(i int) string { return fmt.Sprintf("p%d-db", i) }
	keys := func(from, to int) []objectKey {
		var out []objectKey
		for i := from; i < to; i++ {
			out = append(out, objectKey{gr: cms.GroupResource(), namespace: "ns", name: name(i)})
		}
		return out
	}
	names := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, "/"+name(i))
		}
		sort.Strings(out)
		return out
	}
	tests := []struct {
		name    string
		read    int  // names read, p0-db...
		list    bool // and a list of the namespace
		release []objectKey
		want    []string
	}{
		{name: "every reader gone", read: MaxNamedInformers + 1, release: keys(0, MaxNamedInformers+1)},
		{name: "a name's informer stops with its reader", read: 3, release: keys(1, 2), want: []string{"/p0-db", "/p2-db"}},
		{name: "under the lower bound, the kind's names get their own informers",
			read: MaxNamedInformers + demoteBelow - 1, release: keys(0, MaxNamedInformers), want: names(MaxNamedInformers, MaxNamedInformers+demoteBelow-1)},
		{name: "at the lower bound, the kind's informer stays",
			read: MaxNamedInformers + demoteBelow, release: keys(0, MaxNamedInformers), want: []string{"/"}},
		{name: "a list keeps the kind's informer",
			read: MaxNamedInformers + 1, list: true, release: keys(0, MaxNamedInformers+1), want: []string{"/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
			defer cancel()
			var all []string
			for i := range tt.read {
				all = append(all, name(i))
			}
			lc := newFakeLookups(t, ctx, all...)
			ip := lc.pool
			for _, n := range all { // in order: the first MaxNamedInformers get their own
				ip.mu.Lock()
				ik := ip.pickLocked(cms, "ns", n)
				ip.startLocked(ctx, cms, ik)
				ip.holdLocked(ik, objectKey{gr: cms.GroupResource(), namespace: "ns", name: n})
				ip.mu.Unlock()
			}
			if tt.list {
				if _, err := ip.acquire(ctx, cms, "ns", ""); err != nil {
					t.Fatal(err)
				}
			}
			ip.release(ctx, tt.release)
			var got []string
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				got = running(ip)
				return cmp.Equal(tt.want, got), nil
			}); err != nil {
				t.Errorf("informers running (-want +got):\n%s", cmp.Diff(tt.want, got))
			}
			if diff := eventuallyStats(ctx, lc, Stats{Informers: len(tt.want), Watched: lc.stats().Watched, Cached: lc.stats().Cached}); diff != "" {
				t.Errorf("informers whose Run has not returned (-want +got):\n%s", diff)
			}
		})
	}
}
