package controller

// Tests of the controller's concurrency, meant to run with -race (make
// test does): a data race fails them even when their assertions hold.

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/loom-operator/loom/engine/apply"
)

var (
	widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// newFakeManager returns a Manager whose client is a fake that serves
// Widgets, and whose CRD cache holds the Widget CRD.
func newFakeManager(t *testing.T) (*Manager, *record.FakeRecorder) {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(widgetGVK, meta.RESTScopeNamespace)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgetGVR: "WidgetList"})
	crds := cache.NewStore(cache.MetaNamespaceKeyFunc)
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("widgets.example.com")
	if err := crds.Add(crd); err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(1000)
	return &Manager{
		opts:        Options{Workers: 1, ReconcileTimeout: time.Second},
		client:      client,
		applier:     apply.New(client, mapper, ""),
		recorder:    rec,
		metrics:     newMetrics(nil),
		crds:        crds,
		controllers: map[schema.GroupKind]*parentController{},
	}, rec
}

func newWidgetController(m *Manager) *parentController {
	return &parentController{m: m, gvk: widgetGVK, done: make(chan struct{}),
		written: map[types.UID]writtenStatus{}, noStatus: map[types.UID]bool{}, unserved: map[cache.ObjectName]bool{}}
}

// A set that fails to reload records a Warning Event on its kind's CRD
// while the kind's controller may still be starting: eventOnKind (under the
// Manager's lock) and start (in its own goroutine) must not race.
func TestEventOnKindWhileTheControllerStarts(t *testing.T) {
	m, rec := newFakeManager(t)
	c := newWidgetController(m)
	m.controllers[widgetGVK.GroupKind()] = c
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- c.start(ctx, 1) }()

	var got string
	err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		m.mu.Lock()
		m.eventOnKind(widgetGVK.GroupKind(), "TemplateSetInvalid", "broken")
		m.mu.Unlock()
		select {
		case got = <-rec.Events:
			return true, nil
		default:
			return false, nil
		}
	})
	if err != nil {
		t.Fatalf("no Event on the Widget CRD: %v", err)
	}
	if want := "Warning TemplateSetInvalid broken"; got != want {
		t.Errorf("event = %q, want %q", got, want)
	}
	if err := <-started; err != nil {
		t.Fatalf("start: %v", err)
	}
}
