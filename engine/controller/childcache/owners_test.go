package childcache

import (
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/pack"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

func TestOwnerIndex(t *testing.T) {
	child := func(name, owner, rv string) *unstructured.Unstructured {
		o := u(t, fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: %s, namespace: ns, resourceVersion: %q}
`, name, rv))
		if owner != "" {
			controller := true
			o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "example.loom.dev/v1alpha1", Kind: "MyResource",
				Name: owner, UID: types.UID(owner), Controller: &controller}})
		}
		return o
	}
	pack := func(o *unstructured.Unstructured) any {
		p, err := pack.Pack(o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cms, deploys := &childInformer{}, &childInformer{}
	type step struct {
		ci       *childInformer
		old, cur any // cur nil: a delete of old
	}
	a1 := pack(child("a", "p1", "1"))
	tests := []struct {
		name  string
		steps []step
		want  map[string][]string // owner -> "name@rv" of its children
	}{
		{"added", []step{{cms, nil, a1}, {cms, nil, pack(child("b", "p1", "2"))}},
			map[string][]string{"p1": {"a@1", "b@2"}}},
		{"updated in place", []step{{cms, nil, a1}, {cms, a1, pack(child("a", "p1", "3"))}},
			map[string][]string{"p1": {"a@3"}}},
		{"a relist's new object with the same resourceVersion replaces the old one",
			[]step{{cms, nil, a1}, {cms, a1, pack(child("a", "p1", "1"))}},
			map[string][]string{"p1": {"a@1"}}},
		{"controller changed: moves", []step{{cms, nil, a1}, {cms, a1, pack(child("a", "p2", "3"))}},
			map[string][]string{"p2": {"a@3"}}},
		{"controller removed: leaves", []step{{cms, nil, a1}, {cms, a1, pack(child("a", "", "3"))}},
			map[string][]string{}},
		{"no controller: not indexed", []step{{cms, nil, pack(child("a", "", "1"))}}, map[string][]string{}},
		{"deleted", []step{{cms, nil, a1}, {cms, nil, pack(child("b", "p1", "2"))}, {cms, a1, nil}},
			map[string][]string{"p1": {"b@2"}}},
		{"deleted through a tombstone", []step{{cms, nil, a1}, {cms, cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: a1}, nil}},
			map[string][]string{}},
		{"same name, two kinds: two children", []step{{cms, nil, a1}, {deploys, nil, pack(child("a", "p1", "5"))},
			{cms, a1, nil}},
			map[string][]string{"p1": {"a@5"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := newOwnerIndex()
			for _, s := range tt.steps {
				if s.cur == nil {
					x.delete(s.ci, s.old)
				} else {
					x.update(s.ci, s.old, s.cur)
				}
			}
			got := map[string][]string{}
			for _, owner := range []string{"p1", "p2"} {
				for _, o := range x.children(types.UID(owner)) {
					n := o.(interface {
						GetName() string
						GetResourceVersion() string
					})
					got[owner] = append(got[owner], n.GetName()+"@"+n.GetResourceVersion())
				}
				sort.Strings(got[owner])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("children (-want +got):\n%s", diff)
			}
			if x.len() != len(tt.want) {
				t.Errorf("%d owners indexed, want %d: an owner with no child must not stay", x.len(), len(tt.want))
			}
		})
	}
}

// len is the number of owners with at least one cached child.
func (x *ownerIndex) len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.m)
}
