package childcache

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
)

var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// newFakeLookups returns a lookup cache over fake clients that serve the
// ConfigMaps named, in namespace ns.
func newFakeLookups(t *testing.T, ctx context.Context, names ...string) *lookupCache {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(configMapGVK, meta.RESTScopeNamespace)
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
	return newLookupCache(ctx, client, mc, mapper, nil, "", 0, func(ParentKey) {})
}

// eventuallyStats waits up to 10 s for the lookup cache to hold want, and
// returns the difference left (-want +got), "" when it does: a stopped
// informer counts until its Run has returned.
func eventuallyStats(ctx context.Context, lc *lookupCache, want Stats) string {
	var diff string
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		diff = cmp.Diff(want, lc.stats())
		return diff == "", nil
	})
	return diff
}
