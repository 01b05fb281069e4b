package controller

// Tests of the controller's concurrency, meant to run with -race (make
// test does): a data race fails them even when their assertions hold.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/controller/metrics"
	"github.com/loom-operator/loom/engine/controller/packwatch"
	"github.com/loom-operator/loom/engine/render"
)

var (
	widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// newFakeManager returns a Manager whose client is a fake that serves
// Widgets, whose parent informers list and watch a server of no Widgets,
// and whose CRD cache holds the Widget CRD. onMapping, if not nil,
// is called before each lookup of a kind's resource.
func newFakeManager(t *testing.T, onMapping func()) (*Manager, *record.FakeRecorder) {
	t.Helper()
	base := meta.NewDefaultRESTMapper(nil)
	base.Add(widgetGVK, meta.RESTScopeNamespace)
	var mapper meta.RESTMapper = base
	if onMapping != nil {
		mapper = mappingHook{RESTMapper: base, onMapping: onMapping}
	}
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
		opts:        Options{Workers: 1, ReconcileTimeout: time.Second, Clock: clock.RealClock{}},
		client:      client,
		strip:       newWidgetServer(t),
		applier:     apply.New(client, mapper, ""),
		recorder:    rec,
		metrics:     metrics.New(nil),
		crds:        crds,
		controllers: map[schema.GroupKind]*Controller{},
	}, rec
}

// newWidgetServer serves no Widgets to a packed client: a list, and a
// watch that sends the bookmark ending the initial events (the reflector
// lists that way first) and then stays open until the client leaves.
func newWidgetServer(t *testing.T) *packwatch.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/example.com/v1/widgets" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "true" {
			_, _ = w.Write([]byte(`{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{"resourceVersion":"1"},"items":[]}`))
			return
		}
		if r.URL.Query().Get("sendInitialEvents") == "true" {
			_, _ = w.Write([]byte(`{"type":"BOOKMARK","object":{"kind":"Widget","apiVersion":"example.com/v1",` +
				`"metadata":{"resourceVersion":"1","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n"))
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	c, err := packwatch.NewClient(&rest.Config{Host: srv.URL}, srv.Client(), packwatch.Parent)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newWidgetController(m *Manager) *Controller {
	c := &Controller{sh: m.shared(), gvk: widgetGVK, done: make(chan struct{}),
		unserved: map[cache.ObjectName]bool{}}
	c.status = newStatusWriter(c)
	return c
}

// A set that fails to reload records a Warning Event on its kind's CRD
// while the kind's controller may still be starting: eventOnKind (under the
// Manager's lock) and start (in its own goroutine) must not race.
func TestEventOnKindWhileTheControllerStarts(t *testing.T) {
	m, rec := newFakeManager(t, nil)
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
	cancel()
	c.drain()
}

// mappingHook is a RESTMapper that calls onMapping before each mapping,
// which start asks for first.
type mappingHook struct {
	meta.RESTMapper
	onMapping func()
}

func (h mappingHook) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	h.onMapping()
	return h.RESTMapper.RESTMapping(gk, versions...)
}

// A controller that replaces another of its kind (a parent version switch,
// or a set removed and added back) starts only once the other's in-flight
// reconciles have finished, and the other is then let go.
func TestReplacementStartsAfterThePreviousControllerDrains(t *testing.T) {
	var inFlight, startedEarly atomic.Bool
	m, _ := newFakeManager(t, func() {
		if inFlight.Load() {
			startedEarly.Store(true)
		}
	})
	set, err := render.LoadFS(fstest.MapFS{
		"loom.yaml":      {Data: []byte("parent: {apiVersion: example.com/v1, kind: Widget}\n")},
		"configmap.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\n")},
	}, "widget")
	if err != nil {
		t.Fatal(err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	m.ctx, m.dirs, m.retired = ctx, map[string]schema.GroupKind{}, map[schema.GroupKind]*Controller{}
	gk := widgetGVK.GroupKind()
	add := func() *Controller {
		m.mu.Lock()
		defer m.mu.Unlock()
		if err := m.addSetLocked(set); err != nil {
			t.Fatal(err)
		}
		return m.controllers[gk]
	}
	waitRunning := func(c *Controller) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return c.running.Load(), nil
		}); err != nil {
			t.Fatalf("the controller did not start: %v", err)
		}
	}

	old := add()
	waitRunning(old)
	old.workers.Add(1) // a reconcile in flight
	inFlight.Store(true)
	m.mu.Lock()
	m.retireLocked(gk)
	m.mu.Unlock()
	cur := add()
	// The replacement says it waits just before it blocks; one that does
	// not wait never says so, and would have started (startedEarly).
	const waiting = "Waiting for the previous controller of this kind to drain"
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(logger.GetSink().(ktesting.Underlier).GetBuffer().String(), waiting), nil
	}); err != nil {
		t.Fatalf("the replacement never logged %q: %v", waiting, err)
	}
	if cur.running.Load() {
		t.Fatal("the replacement runs while the previous controller has a reconcile in flight")
	}
	inFlight.Store(false)
	old.workers.Done()
	waitRunning(cur)
	if startedEarly.Load() {
		t.Error("the replacement started while the previous controller had a reconcile in flight")
	}
	<-old.done
	m.mu.Lock()
	retired := len(m.retired)
	m.mu.Unlock()
	if retired != 0 {
		t.Errorf("%d drained controllers are still held", retired)
	}
	cancel()
	m.runs.Wait()
}
