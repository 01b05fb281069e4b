package childcache

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/engine/shard"
)

// u decodes a YAML fixture into an unstructured object.
func u(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := json.Unmarshal(j, &obj); err != nil { // numbers as int64, like the API server's
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// packChild packs u as Loom's child informers hold it: from its JSON, by
// the packer the packed client decodes children with.
func packChild(t testing.TB, u *unstructured.Unstructured) *pack.Packed {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	p, err := packwatch.Child("loom")(b)
	if err != nil {
		t.Fatalf("pack %s: %v", b, err)
	}
	return p
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

// fakeChildren is an API server of ConfigMaps for the child informers'
// tests: each generation's list and watch return the children its label
// selector matches, and it records the selector of each generation.
type fakeChildren struct {
	mu        sync.Mutex
	children  []*unstructured.Unstructured
	selectors []string
	// block, if set, holds every list until it is closed.
	block chan struct{}
}

// add makes a ConfigMap name of the parent uid, at rv, labelled as Loom
// labels its children.
func (f *fakeChildren) add(t *testing.T, name string, uid types.UID, rv string) {
	t.Helper()
	c := u(t, fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: ns
  resourceVersion: %q
  labels: {%s: %s, %s: set, %s: %q}
  ownerReferences:
  - {apiVersion: example.loom.dev/v1alpha1, kind: MyResource, name: p, uid: %s, controller: true}
`, name, rv, object.LabelManagedBy, object.ManagedByValue, object.LabelPartOf, shard.LabelBucket, shard.BucketLabel(uid), uid))
	f.mu.Lock()
	f.children = append(f.children, c)
	f.mu.Unlock()
}

// blockLists holds the lists that start from now on until the returned
// function is called.
func (f *fakeChildren) blockLists() func() {
	ch := make(chan struct{})
	f.mu.Lock()
	f.block = ch
	f.mu.Unlock()
	return func() { close(ch) }
}

// selectorsSent returns the label selector of each generation so far.
func (f *fakeChildren) selectorsSent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.selectors...)
}

// listWatch is the childWatcher's listWatch over f.
func (f *fakeChildren) listWatch(_ schema.GroupVersionResource, _, selector string) cache.ListerWatcher {
	f.mu.Lock()
	f.selectors = append(f.selectors, selector)
	f.mu.Unlock()
	sel, err := labels.Parse(selector)
	return listOnly{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			if err != nil {
				return nil, err
			}
			f.mu.Lock()
			block := f.block
			f.mu.Unlock()
			if block != nil {
				select {
				case <-block:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			list := &packwatch.List{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
			for _, c := range f.children {
				if sel.Matches(labels.Set(c.GetLabels())) {
					b, err := c.MarshalJSON()
					if err != nil {
						return nil, err
					}
					p, err := packwatch.Child("loom")(b)
					if err != nil {
						return nil, err
					}
					list.Items = append(list.Items, p)
				}
			}
			return list, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}}
}

// listOnly is a ListWatch that tells the reflector to list, not to stream
// its first list as watch events (watch-list), which the fake does not
// serve.
type listOnly struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells client-go's reflector to list.
func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }
