package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/controller/childcache"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// newFakeLookups returns a child cache over fake clients that serve the
// ConfigMaps named, in namespace ns, to lookups.
func newFakeLookups(t *testing.T, ctx context.Context, names ...string) *childcache.Cache {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(configMapGVK, meta.RESTScopeNamespace)
	mapper.Add(widgetGVK, meta.RESTScopeNamespace)
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var metas, objs []runtime.Object
	for i, n := range names {
		metas = append(metas, &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n, UID: types.UID(n), ResourceVersion: fmt.Sprint(i + 1)},
		})
		cm := &unstructured.Unstructured{}
		cm.SetAPIVersion("v1")
		cm.SetKind("ConfigMap")
		cm.SetNamespace("ns")
		cm.SetName(n)
		cm.SetResourceVersion(fmt.Sprint(i + 1))
		_ = unstructured.SetNestedField(cm.Object, "secret", "data", "password")
		objs = append(objs, cm)
	}
	mc := metadatafake.NewSimpleMetadataClient(scheme, metas...)
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), objs...)
	return childcache.New(ctx, childcache.Config{Dynamic: client, Metadata: mc, Mapper: mapper, Enqueue: func(childcache.ParentKey) {}})
}

// readAs runs a reconcile's reads of parent: a lookup of each ConfigMap
// named, in namespace ns, through the reader reconciles use.
func readAs(t *testing.T, ctx context.Context, lc *childcache.Cache, parent cache.ObjectName, names ...string) {
	t.Helper()
	r := lc.Reader(ctx, childcache.ParentKey{GroupKind: widgetGVK.GroupKind(), Name: parent}, []config.LookupRule{{APIVersion: "v1", Kind: "ConfigMap"}}, nil)
	defer r.Done()
	for _, n := range names {
		obj, err := r.Get(configMapGVK, "ns", n)
		if err != nil {
			t.Fatalf("lookup of ConfigMap ns/%s: %v", n, err)
		}
		if obj == nil {
			t.Fatalf("lookup of ConfigMap ns/%s found nothing", n)
		}
	}
}

// Parents that each read an object of their own (a per-parent name such
// as "{{ .Name }}-db") start an informer per name, then the kind's past
// childcache.MaxNamedInformers; once the parents are deleted, every informer is
// stopped and nothing read is kept.
func TestLookupInformersAreReleasedWithTheirReaders(t *testing.T) {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
	defer cancel()
	const parents = childcache.MaxNamedInformers + 8
	var names []string
	for i := range parents {
		names = append(names, fmt.Sprintf("p%d-db", i))
	}
	lc := newFakeLookups(t, ctx, names...)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
	defer q.ShutDown()
	c := newTestController(q)
	c.gvk, c.sh = widgetGVK, &Shared{Cache: lc}

	for i := range parents {
		readAs(t, ctx, lc, cache.ObjectName{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}, names[i])
	}
	if diff := cmp.Diff(childcache.Stats{Informers: childcache.MaxNamedInformers + 1, Watched: parents, Cached: parents}, lc.Stats()); diff != "" {
		t.Fatalf("while the parents read (-want +got):\n%s", diff)
	}
	for i := range parents {
		p := &unstructured.Unstructured{}
		p.SetNamespace("ns")
		p.SetName(fmt.Sprintf("p%d", i))
		p.SetUID(types.UID(fmt.Sprint(i)))
		c.onDelete(p)
	}
	if diff := eventuallyStats(ctx, lc, childcache.Stats{}); diff != "" {
		t.Errorf("after the parents were deleted (-want +got):\n%s", diff)
	}
}

// A set removed on reload takes with it what its parents read: their
// entries in the index, the content kept, and the informers only they
// needed.
func TestLookupStateGoesWithItsSet(t *testing.T) {
	m, _ := newFakeManager(t, nil)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
	defer cancel()
	lc := newFakeLookups(t, ctx, "web-db", "api-db")
	dir := t.TempDir()
	set := filepath.Join(dir, "widget")
	if err := os.MkdirAll(set, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"loom.yaml":      "parent: {apiVersion: example.com/v1, kind: Widget}\nlookups:\n- {apiVersion: v1, kind: ConfigMap}\n",
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\n",
	} {
		if err := os.WriteFile(filepath.Join(set, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m.ctx, m.cache, m.opts.TemplatesDir = ctx, lc, dir
	m.dirs, m.retired = map[string]schema.GroupKind{}, map[schema.GroupKind]*Controller{}
	m.reload(ctx)
	m.mu.Lock()
	c := m.controllers[widgetGVK.GroupKind()]
	m.mu.Unlock()
	if c == nil {
		t.Fatal("the set was not loaded")
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return c.running.Load(), nil
	}); err != nil {
		t.Fatalf("the controller did not start: %v", err)
	}
	// The reads of two reconciles of the set's parents.
	readAs(t, ctx, lc, cache.ObjectName{Namespace: "ns", Name: "web"}, "web-db")
	readAs(t, ctx, lc, cache.ObjectName{Namespace: "ns", Name: "api"}, "api-db")
	if diff := cmp.Diff(childcache.Stats{Informers: 2, Watched: 2, Cached: 2}, lc.Stats()); diff != "" {
		t.Fatalf("while the set's parents read (-want +got):\n%s", diff)
	}

	if err := os.RemoveAll(set); err != nil {
		t.Fatal(err)
	}
	m.reload(ctx)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the removed set's controller did not stop")
	}
	if diff := eventuallyStats(ctx, lc, childcache.Stats{}); diff != "" {
		t.Errorf("after the set was removed (-want +got):\n%s", diff)
	}
	cancel()
	m.runs.Wait()
}

// eventuallyStats waits up to 10 s for the lookup cache to hold want, and
// returns the difference left (-want +got), "" when it does: a stopped
// informer counts until its Run has returned.
func eventuallyStats(ctx context.Context, lc *childcache.Cache, want childcache.Stats) string {
	var diff string
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		diff = cmp.Diff(want, lc.Stats())
		return diff == "", nil
	})
	return diff
}
