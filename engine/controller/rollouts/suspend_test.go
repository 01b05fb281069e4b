package rollouts

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"

	"github.com/loom-operator/loom/api/v1alpha1"
	"github.com/loom-operator/loom/engine/render"
)

// served is a cluster that serves the rollout CRDs.
type served struct{}

func (served) Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	if gvk.Kind == v1alpha1.TemplateSetKind {
		return v1alpha1.TemplateSetGVR, false, nil
	}
	return v1alpha1.GroupVersion.WithResource("templaterevisions"), false, nil
}

// countingHost counts EnqueueAll.
type countingHost struct {
	fakeHost
	all atomic.Int32
}

func (h *countingHost) EnqueueAll() { h.all.Add(1) }

// Suspended reads the TemplateSet's spec.suspend from its cache as soon as
// the watch has synced, before any handler ran: a restarted Loom's first
// reconcile must already see it. A change of spec.suspend reconciles every
// parent; another edit does not.
func TestSuspendedFollowsTheTemplateSet(t *testing.T) {
	set, err := render.LoadFS(fstest.MapFS{
		"loom.yaml": {Data: []byte("parent: {apiVersion: example.com/v1, kind: Widget}\nrollout: {steps: ['100%']}\n")},
		"cm.yaml":   {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\n")},
	}, "widget")
	if err != nil {
		t.Fatal(err)
	}
	h := &countingHost{}
	h.folder.Store(set)
	ts := yamlObj(t, "apiVersion: loom.dev/v1alpha1\nkind: TemplateSet\nmetadata: {name: widget}\nspec: {suspend: true}\n")
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{v1alpha1.TemplateSetGVR: "TemplateSetList",
			v1alpha1.GroupVersion.WithResource("templaterevisions"): "TemplateRevisionList"}, ts)
	r := New(Config{Client: client, Resolver: served{}, Recorder: record.NewFakeRecorder(100), Metrics: NewMetrics(),
		Clock: clock.RealClock{}, Timeout: 5 * time.Second}, h)
	if r.Suspended() {
		t.Fatal("Suspended before the TemplateSet is watched")
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
	defer cancel()
	if err := r.watch(ctx); err != nil {
		t.Fatal(err)
	}
	if !r.Suspended() {
		t.Fatal("not Suspended once the watch synced")
	}
	for _, step := range []struct {
		patch string
		want  bool
		all   int32
	}{
		{`{"spec":{"paused":true}}`, true, 1}, // the add's handler counted 1
		{`{"spec":{"suspend":null}}`, false, 2},
		{`{"spec":{"suspend":true}}`, true, 3},
	} {
		if _, err := client.Resource(v1alpha1.TemplateSetGVR).Patch(ctx, "widget", types.MergePatchType, []byte(step.patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for (r.Suspended() != step.want || h.all.Load() != step.all) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if r.Suspended() != step.want || h.all.Load() != step.all {
			t.Fatalf("after %s: Suspended %v (want %v), EnqueueAll %d times (want %d)", step.patch, r.Suspended(), step.want, h.all.Load(), step.all)
		}
	}
}
