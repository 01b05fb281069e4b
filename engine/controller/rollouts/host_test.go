package rollouts

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/render"
)

// fakeHost is a parent controller, not sharded, that caches no parents.
type fakeHost struct{ folder atomic.Pointer[render.Set] }

func (h *fakeHost) Folder() *render.Set                            { return h.folder.Load() }
func (h *fakeHost) Parents() []Parent                              { return nil }
func (h *fakeHost) CountParents() int                              { return 0 }
func (h *fakeHost) AllParents(context.Context, func(Parent)) error { return nil }
func (h *fakeHost) Enqueue(cache.ObjectName)                       {}
func (h *fakeHost) EnqueueAll()                                    {}
func (h *fakeHost) Sharded() bool                                  { return false }
func (h *fakeHost) EnterShard(ctx context.Context, _ types.UID) (context.Context, func(), bool) {
	return ctx, func() {}, true
}

// notServed is a cluster that serves no rollout CRDs.
type notServed struct{}

func (notServed) Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	return schema.GroupVersionResource{}, false, errors.New("no matches for kind " + gvk.Kind)
}

// newTestRollout is the rollout of h's set on a cluster that serves no
// rollout CRDs, with a fake client.
func newTestRollout(h Host) *Rollout {
	return New(Config{Client: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Resolver: notServed{},
		Recorder: record.NewFakeRecorder(100), Metrics: NewMetrics(), Clock: clock.RealClock{}, Timeout: time.Second}, h)
}

func yamlObj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}
