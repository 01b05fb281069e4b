package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

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
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/loom-operator/loom/engine/apply"
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
		widgetGVR: "WidgetList",
		crdGVR:    "CustomResourceDefinitionList",
	})
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	return &Manager{
		opts:        Options{Workers: 1, ReconcileTimeout: time.Second},
		ctx:         ctx,
		client:      client,
		strip:       newWidgetServer(t),
		mapper:      mapper,
		applier:     apply.New(client, mapper, ""),
		recorder:    record.NewFakeRecorder(1000),
		metrics:     newMetrics(nil),
		controllers: map[schema.GroupKind]*parentController{},
		retired:     map[schema.GroupKind]*parentController{},
		awaited:     make(chan struct{}, 1),
	}, client
}

// runWidgetController runs the Widget kind's controller as the Manager
// does, and waits until it has asked discovery for its kind.
func runWidgetController(t *testing.T, m *Manager, disco *gatedDiscovery) *parentController {
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

func createWidgetCRD(t *testing.T, ctx context.Context, client *dynamicfake.FakeDynamicClient) {
	t.Helper()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("widgets.example.com")
	crd.SetGeneration(1)
	_ = unstructured.SetNestedSlice(crd.Object, []any{map[string]any{"type": "Established", "status": "True"}}, "status", "conditions")
	if _, err := client.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
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

// The controller of a kind that is not served starts once it is, whatever
// the order in which its controller asks discovery, the CRD informer lists
// and watches, and the API server publishes the kind in discovery. Each
// case ends with nothing more happening in the cluster: only Loom's own
// retries can make it converge.
func TestDiscoveryConvergesWhateverTheOrder(t *testing.T) {
	for name, order := range map[string]func(t *testing.T, m *Manager, client *dynamicfake.FakeDynamicClient, disco *gatedDiscovery) *parentController{
		// The CRD is established after the controller asked discovery, and
		// before the CRD informer lists: its Add comes before the sync.
		"established before the CRD list": func(t *testing.T, m *Manager, client *dynamicfake.FakeDynamicClient, disco *gatedDiscovery) *parentController {
			c := runWidgetController(t, m, disco)
			disco.served.Store(true)
			createWidgetCRD(t, m.ctx, client)
			go m.watchCRDs(m.ctx)
			return c
		},
		// The CRD's event arrives before the API server that Loom's
		// discovery asks publishes the kind (several API servers, or a slow
		// one): the refresh the event causes still misses the kind.
		"published after the CRD event": func(t *testing.T, m *Manager, client *dynamicfake.FakeDynamicClient, disco *gatedDiscovery) *parentController {
			go m.watchCRDs(m.ctx)
			waitFor(t, m.ctx, "the CRD informer to sync", func() bool {
				m.mu.Lock()
				defer m.mu.Unlock()
				return m.crds != nil
			})
			c := runWidgetController(t, m, disco)
			asked := disco.asked.Load()
			createWidgetCRD(t, m.ctx, client)
			waitFor(t, m.ctx, "discovery to be asked again after the CRD event", func() bool { return disco.asked.Load() > asked })
			disco.served.Store(true)
			return c
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
			disco := &gatedDiscovery{FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{}}}
			m, client := newDiscoveryManager(t, ctx, disco)
			defer m.runs.Wait()
			defer cancel()
			c := order(t, m, client, disco)
			waitFor(t, ctx, "the Widget controller to start", c.running.Load)
		})
	}
}
