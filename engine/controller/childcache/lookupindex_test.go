package childcache

import (
	"context"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// indexState is a lookupIndex in a form cmp can compare: each key's
// readers and each parent's reads, as strings, sorted.
type indexState struct {
	Readers map[string][]string
	Reads   map[string][]string
}

func (k objectKey) String() string { return k.gr.String() + ":" + k.namespace + "/" + k.name }
func (p ParentKey) String() string { return p.GroupKind.String() + ":" + p.Name.String() }

func stateOfIndex(ix *lookupIndex) indexState {
	s := indexState{Readers: map[string][]string{}, Reads: map[string][]string{}}
	for key, ps := range ix.readers {
		var names []string
		for p := range ps {
			names = append(names, p.String())
		}
		sort.Strings(names)
		s.Readers[key.String()] = names
	}
	for p, keys := range ix.reads {
		var names []string
		for _, k := range keys {
			names = append(names, k.String())
		}
		sort.Strings(names)
		s.Reads[p.String()] = names
	}
	return s
}

func TestLookupIndex(t *testing.T) {
	widgets := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	cms := schema.GroupResource{Resource: "configmaps"}
	web := ParentKey{GroupKind: widgets, Name: cache.ObjectName{Namespace: "ns", Name: "web"}}
	api := ParentKey{GroupKind: widgets, Name: cache.ObjectName{Namespace: "ns", Name: "api"}}
	gadget := ParentKey{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Gadget"}, Name: cache.ObjectName{Namespace: "ns", Name: "web"}}
	platform := objectKey{gr: cms, namespace: "ns", name: "platform"}
	db := objectKey{gr: cms, namespace: "ns", name: "db"}
	list := objectKey{gr: cms, namespace: "ns"}
	// An op changes the index and returns the keys it reports unread.
	type op func(ix *lookupIndex) []objectKey
	watch := func(p ParentKey, keys ...objectKey) op {
		return func(ix *lookupIndex) []objectKey {
			for _, k := range keys {
				ix.watch(p, k)
			}
			return nil
		}
	}
	replace := func(p ParentKey, keys ...objectKey) op {
		return func(ix *lookupIndex) []objectKey { return ix.replace(p, keys) }
	}
	forget := func(p ParentKey) op { return func(ix *lookupIndex) []objectKey { return ix.forget(p) } }
	forgetKind := func(gk schema.GroupKind) op { return func(ix *lookupIndex) []objectKey { return ix.forgetKind(gk) } }
	empty := indexState{Readers: map[string][]string{}, Reads: map[string][]string{}}
	tests := []struct {
		name string
		ops  []op
		// want is the index after ops, unread what the last op reported.
		want   indexState
		unread []objectKey
	}{
		{name: "reads are indexed both ways", ops: []op{watch(web, platform, list), watch(api, platform)},
			want: indexState{
				Readers: map[string][]string{platform.String(): {api.String(), web.String()}, list.String(): {web.String()}},
				Reads:   map[string][]string{web.String(): {"configmaps:ns/", platform.String()}, api.String(): {platform.String()}},
			}},
		{name: "a key read twice is indexed once", ops: []op{watch(web, platform, platform)},
			want: indexState{
				Readers: map[string][]string{platform.String(): {web.String()}},
				Reads:   map[string][]string{web.String(): {platform.String()}},
			}},
		{name: "a parent forgotten is dropped everywhere", ops: []op{watch(web, platform, db), forget(web)},
			want: empty, unread: []objectKey{platform, db}},
		{name: "a key another parent reads stays, and is not reported", ops: []op{watch(web, platform, db), watch(api, platform), forget(web)},
			want: indexState{
				Readers: map[string][]string{platform.String(): {api.String()}},
				Reads:   map[string][]string{api.String(): {platform.String()}},
			}, unread: []objectKey{db}},
		{name: "forgetting a parent that read nothing changes nothing", ops: []op{watch(api, platform), forget(web)},
			want: indexState{
				Readers: map[string][]string{platform.String(): {api.String()}},
				Reads:   map[string][]string{api.String(): {platform.String()}},
			}},
		{name: "a reconcile that no longer reads a key drops it", ops: []op{watch(web, platform, db), replace(web, db)},
			want: indexState{
				Readers: map[string][]string{db.String(): {web.String()}},
				Reads:   map[string][]string{web.String(): {db.String()}},
			}, unread: []objectKey{platform}},
		{name: "a reconcile that reads nothing drops the parent", ops: []op{watch(web, platform), watch(api, platform), replace(web)},
			want: indexState{
				Readers: map[string][]string{platform.String(): {api.String()}},
				Reads:   map[string][]string{api.String(): {platform.String()}},
			}},
		{name: "a kind's parents are forgotten together, another kind's stay",
			ops: []op{watch(web, platform), watch(api, db), watch(gadget, platform), forgetKind(widgets)},
			want: indexState{
				Readers: map[string][]string{platform.String(): {gadget.String()}},
				Reads:   map[string][]string{gadget.String(): {platform.String()}},
			}, unread: []objectKey{db}},
		{name: "the last reader going drops the key", ops: []op{watch(web, platform), watch(api, platform), replace(web), forget(api)},
			want: empty, unread: []objectKey{platform}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := newLookupIndex()
			var unread []objectKey
			for _, o := range tt.ops {
				unread = o(&ix)
			}
			if diff := cmp.Diff(tt.want, stateOfIndex(&ix)); diff != "" {
				t.Errorf("index (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.unread, unread, cmp.AllowUnexported(objectKey{})); diff != "" {
				t.Errorf("unread (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLookupIndexReadersOf(t *testing.T) {
	widgets := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	cms := schema.GroupResource{Resource: "configmaps"}
	web := ParentKey{GroupKind: widgets, Name: cache.ObjectName{Namespace: "ns", Name: "web"}}
	api := ParentKey{GroupKind: widgets, Name: cache.ObjectName{Namespace: "ns", Name: "api"}}
	platform := objectKey{gr: cms, namespace: "ns", name: "platform"}
	list := objectKey{gr: cms, namespace: "ns"}
	ix := newLookupIndex()
	ix.watch(web, platform)
	ix.watch(api, list)
	tests := []struct {
		name string
		keys []objectKey
		want []string
	}{
		{"the object's readers and its namespace's listers", []objectKey{platform, list}, []string{api.String(), web.String()}},
		{"a key nobody reads", []objectKey{{gr: cms, namespace: "ns", name: "other"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range ix.readersOf(tt.keys...) {
				got = append(got, p.String())
			}
			sort.Strings(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("readersOf (-want +got):\n%s", diff)
			}
		})
	}
}

// The JSON kept of an object read goes with its last reader, and stays
// while another parent reads it.
func TestLookupContentGoesWithItsLastReader(t *testing.T) {
	widgets := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	web := ParentKey{GroupKind: widgets, Name: cache.ObjectName{Namespace: "ns", Name: "web"}}
	api := ParentKey{GroupKind: widgets, Name: cache.ObjectName{Namespace: "ns", Name: "api"}}
	secret := objectKey{gr: schema.GroupResource{Resource: "secrets"}, namespace: "ns", name: "db"}
	lc := &lookupCache{index: newLookupIndex(), content: map[objectKey]content{}, pool: newInformerPool(context.Background(), nil, "", 0, nil)}
	lc.watch(web, secret)
	lc.watch(api, secret)
	lc.content[secret] = content{rv: "1", json: []byte(`{"data":{"password":"c2VjcmV0"}}`)}
	lc.forget(web)
	if _, ok := lc.content[secret]; !ok {
		t.Fatal("the content was dropped while api still reads it")
	}
	lc.replace(api, nil)
	if n := len(lc.content); n != 0 {
		t.Errorf("%d objects' content kept after their last reader went, want 0", n)
	}
}
