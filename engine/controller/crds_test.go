package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/restmapper"
	kubetesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/controller/crdinstall"
	"github.com/loom-operator/loom/engine/controller/metrics"
)

// gatedDiscovery is an API server's discovery that serves Deployments,
// and Widgets once served is set. It counts how often it was asked for its
// groups.
type gatedDiscovery struct {
	*fakediscovery.FakeDiscovery
	served atomic.Bool
	asked  atomic.Int32
}

func (d *gatedDiscovery) ServerGroupsWithContext(context.Context) (*metav1.APIGroupList, error) {
	apps := metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"}
	list := &metav1.APIGroupList{Groups: []metav1.APIGroup{{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{apps}, PreferredVersion: apps}}}
	if d.served.Load() {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: widgetGVR.GroupVersion().String(), Version: widgetGVR.Version}
		list.Groups = append(list.Groups, metav1.APIGroup{Name: widgetGVR.Group, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv})
	}
	d.asked.Add(1) // after reading served: this answer is already decided
	return list, nil
}

func (d *gatedDiscovery) ServerGroups() (*metav1.APIGroupList, error) {
	return d.ServerGroupsWithContext(context.Background())
}

func (d *gatedDiscovery) ServerResourcesForGroupVersionWithContext(_ context.Context, gv string) (*metav1.APIResourceList, error) {
	if gv == "apps/v1" {
		return &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: metav1.Verbs{"list", "watch"}},
		}}, nil
	}
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{
		{Name: widgetGVR.Resource, Kind: widgetGVK.Kind, Namespaced: true, Verbs: metav1.Verbs{"list", "watch"}},
	}}, nil
}

func (d *gatedDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return d.ServerResourcesForGroupVersionWithContext(context.Background(), gv)
}

// newDiscoveryManager returns a Manager whose discovery is disco, whose
// client serves CRDs (none yet) and Widgets, and whose parent informers
// list and watch a server of no Widgets.
func newDiscoveryManager(t *testing.T, ctx context.Context, disco *gatedDiscovery) (*Manager, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		widgetGVR:       "WidgetList",
		crdinstall.CRDs: "CustomResourceDefinitionList",
	})
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	return &Manager{
		opts:        Options{Workers: 1, ReconcileTimeout: time.Second, Clock: clock.RealClock{}},
		ctx:         ctx,
		client:      client,
		strip:       newWidgetServer(t),
		mapper:      mapper,
		applier:     apply.New(client, mapper, ""),
		recorder:    record.NewFakeRecorder(1000),
		metrics:     metrics.New(nil),
		controllers: map[schema.GroupKind]*Controller{},
		retired:     map[schema.GroupKind]*Controller{},
		awaited:     make(chan struct{}, 1),
	}, client
}

// runWidgetController runs the Widget kind's controller as the Manager
// does, and waits until it has asked discovery for its kind.
func runWidgetController(t *testing.T, m *Manager, disco *gatedDiscovery) *Controller {
	t.Helper()
	c := newWidgetController(m)
	c.kick = make(chan struct{}, 1)
	c.ctx, c.cancel = context.WithCancel(m.ctx)
	m.mu.Lock()
	m.controllers[widgetGVK.GroupKind()] = c
	m.mu.Unlock()
	asked := disco.asked.Load()
	m.runs.Add(1)
	go m.runController(c, nil)
	waitFor(t, m.ctx, "the controller to ask discovery for its kind", func() bool { return disco.asked.Load() > asked })
	return c
}

// widgetCRD returns the Widget kind's CRD, Established or not.
func widgetCRD(established bool) *unstructured.Unstructured {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("widgets.example.com")
	crd.SetGeneration(1)
	status := map[bool]string{true: "True", false: "False"}[established]
	_ = unstructured.SetNestedSlice(crd.Object, []any{map[string]any{"type": "Established", "status": status}}, "status", "conditions")
	return crd
}

func createWidgetCRD(t *testing.T, ctx context.Context, client *dynamicfake.FakeDynamicClient, established bool) {
	t.Helper()
	if _, err := client.Resource(crdinstall.CRDs).Create(ctx, widgetCRD(established), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// runWidgetParent runs a controller whose parent default/p waits for a
// child kind, Widget, and whose worker looks that kind up as a reconcile
// does, until the parent waits for it.
func runWidgetParent(t *testing.T, m *Manager) *Controller {
	t.Helper()
	c := newWidgetController(m)
	c.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
	t.Cleanup(c.queue.ShutDown)
	c.running.Store(true)
	m.mu.Lock()
	m.controllers[widgetGVK.GroupKind()] = c
	m.mu.Unlock()
	go func() { // a worker whose reconcile looks up the child kind
		for {
			key, shutdown := c.queue.Get()
			if shutdown {
				return
			}
			_, err := m.mapper.RESTMapping(widgetGVK.GroupKind())
			c.setUnserved(key, meta.IsNoMatchError(err))
			c.queue.Done(key)
		}
	}()
	c.queue.Add(cache.NewObjectName("default", "p"))
	waitFor(t, m.ctx, "the parent to wait for its child kind", c.AwaitsKind)
	return c
}

// published flips disco to serve Widgets once discovery has been asked
// twice more after the CRD event: the refresh the event causes and one
// more both miss the kind.
func published(t *testing.T, m *Manager, client *dynamicfake.FakeDynamicClient, disco *gatedDiscovery) {
	asked := disco.asked.Load()
	createWidgetCRD(t, m.ctx, client, true)
	waitFor(t, m.ctx, "discovery to be asked twice after the CRD event", func() bool { return disco.asked.Load() > asked+1 })
	disco.served.Store(true)
}

// refreshedOnSync starts the CRD watch and waits until it has refreshed
// discovery after its sync, with nothing waiting for a kind.
func refreshedOnSync(t *testing.T, m *Manager, disco *gatedDiscovery) {
	if _, err := m.mapper.RESTMapping(widgetGVK.GroupKind()); !meta.IsNoMatchError(err) {
		t.Fatalf("RESTMapping(Widget) = %v, want NoMatch", err)
	}
	go m.watchCRDs(m.ctx)
	waitFor(t, m.ctx, "discovery to be refreshed after the CRD informer's sync", func() bool {
		asked := disco.asked.Load()
		_, _ = m.mapper.RESTMapping(widgetGVK.GroupKind())
		return disco.asked.Load() > asked
	})
}

func waitForCRDSync(t *testing.T, m *Manager) {
	waitFor(t, m.ctx, "the CRD informer to sync", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.crds != nil
	})
}

// Loom sees a kind that was not served once it is, whatever the order in
// which a controller asks discovery for it, the CRD informer lists and
// watches, and the API server publishes the kind in discovery. Each case
// ends with nothing more happening in the cluster: only Loom's own
// refreshes can make it converge.
func TestDiscoveryConvergesWhateverTheOrder(t *testing.T) {
	for name, order := range map[string]func(t *testing.T, m *Manager, client *dynamicfake.FakeDynamicClient, disco *gatedDiscovery) (converged func() bool){
		// The CRD is established after the controller asked discovery, and
		// before the CRD informer lists: its Add comes before the sync.
		"established before the CRD list": func(t *testing.T, m *Manager, client *dynamicfake.FakeDynamicClient, disco *gatedDiscovery) func() bool {
			c := runWidgetController(t, m, disco)
			disco.served.Store(true)
			createWidgetCRD(t, m.ctx, client, true)
			go m.watchCRDs(m.ctx)
			return c.running.Load
		},
		// The CRD's event arrives before the API server that Loom's
		// discovery asks publishes the kind (several API servers, or a slow
		// one): the refreshes after the event still miss the kind.
		"published after the CRD event": func(t *testing.T, m *Manager, client *dynamicfake.FakeDynamicClient, disco *gatedDiscovery) func() bool {
			go m.watchCRDs(m.ctx)
			waitForCRDSync(t, m)
			c := runWidgetController(t, m, disco)
			published(t, m, client, disco)
			return c.running.Load
		},
		// A running controller's parent met a child kind that is not
		// served (NoMatch); the same order as above.
		"child kind published after the CRD event": func(t *testing.T, m *Manager, client *dynamicfake.FakeDynamicClient, disco *gatedDiscovery) func() bool {
			go m.watchCRDs(m.ctx)
			waitForCRDSync(t, m)
			c := runWidgetParent(t, m)
			published(t, m, client, disco)
			return func() bool { return !c.AwaitsKind() }
		},
		// The CRD was listed, but discovery did not serve its kind yet
		// when the CRD informer synced and discovery was refreshed; then a
		// set for the kind is added, and discovery publishes the kind.
		"set added after the last refresh": func(t *testing.T, m *Manager, client *dynamicfake.FakeDynamicClient, disco *gatedDiscovery) func() bool {
			createWidgetCRD(t, m.ctx, client, true)
			refreshedOnSync(t, m, disco)
			c := runWidgetController(t, m, disco)
			disco.served.Store(true)
			return c.running.Load
		},
		// The same, with a parent that meets the kind as a child kind.
		"parent waits after the last refresh": func(t *testing.T, m *Manager, client *dynamicfake.FakeDynamicClient, disco *gatedDiscovery) func() bool {
			createWidgetCRD(t, m.ctx, client, true)
			refreshedOnSync(t, m, disco)
			c := runWidgetParent(t, m)
			disco.served.Store(true)
			return func() bool { return !c.AwaitsKind() }
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
			disco := &gatedDiscovery{FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{}}}
			m, client := newDiscoveryManager(t, ctx, disco)
			defer m.runs.Wait()
			defer cancel()
			converged := order(t, m, client, disco)
			waitFor(t, ctx, "Loom to see the Widget kind", converged)
		})
	}
}

// A CRD added, established or deleted, or established before the CRD
// informer listed, refreshes discovery even when nothing waits for a kind
// (so no backoff retry would): the next lookup of the kind sees the change.
func TestCRDEventsRefreshDiscovery(t *testing.T) {
	for name, tc := range map[string]struct {
		before, after func(t *testing.T, ctx context.Context, client *dynamicfake.FakeDynamicClient)
		served        bool // after
		// early: the change happens before the CRD informer lists.
		early bool
	}{
		"established before the CRD list": {
			after: func(t *testing.T, ctx context.Context, client *dynamicfake.FakeDynamicClient) {
				createWidgetCRD(t, ctx, client, true)
			},
			served: true,
			early:  true,
		},
		"added": {
			after: func(t *testing.T, ctx context.Context, client *dynamicfake.FakeDynamicClient) {
				createWidgetCRD(t, ctx, client, true)
			},
			served: true,
		},
		"established": {
			before: func(t *testing.T, ctx context.Context, client *dynamicfake.FakeDynamicClient) {
				createWidgetCRD(t, ctx, client, false)
			},
			after: func(t *testing.T, ctx context.Context, client *dynamicfake.FakeDynamicClient) {
				if _, err := client.Resource(crdinstall.CRDs).Update(ctx, widgetCRD(true), metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			served: true,
		},
		"deleted": {
			before: func(t *testing.T, ctx context.Context, client *dynamicfake.FakeDynamicClient) {
				createWidgetCRD(t, ctx, client, true)
			},
			after: func(t *testing.T, ctx context.Context, client *dynamicfake.FakeDynamicClient) {
				if err := client.Resource(crdinstall.CRDs).Delete(ctx, widgetCRD(true).GetName(), metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
			defer cancel()
			disco := &gatedDiscovery{FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{}}}
			disco.served.Store(!tc.served)
			m, client := newDiscoveryManager(t, ctx, disco)
			if tc.before != nil {
				tc.before(t, ctx, client)
			}
			if !tc.early {
				go m.watchCRDs(ctx)
				waitForCRDSync(t, m)
			}
			// Discovery is cached as it is before the event.
			if _, err := m.mapper.RESTMapping(widgetGVK.GroupKind()); (err == nil) != !tc.served {
				t.Fatalf("before the event, RESTMapping(Widget) = %v, want served %v", err, !tc.served)
			}
			disco.served.Store(tc.served)
			tc.after(t, ctx, client)
			if tc.early {
				go m.watchCRDs(ctx)
			}
			waitFor(t, ctx, "discovery to see the change", func() bool {
				_, err := m.mapper.RESTMapping(widgetGVK.GroupKind())
				return (err == nil) == tc.served
			})
		})
	}
}
