//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/pack"
	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

var sprocketGVR = schema.GroupVersionResource{Group: "restart.e2e.loom.dev", Version: "v1", Resource: "sprockets"}

// restartChildren are children of every shape Loom applies: keyed lists
// whose key fields are left to the schema's default (a container port's
// protocol, a Service port's, a CR's), a Secret written with stringData, a
// CR with a set list and fields its schema preserves unknown.
var restartChildren = []struct {
	gvr schema.GroupVersionResource
	obj string
}{
	{configMapGVR, `{apiVersion: v1, kind: ConfigMap, metadata: {name: r-config, labels: {app: r}}, data: {a: "1", b: "two"}}`},
	{deployGVR, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: r, labels: {app: r}}
spec:
  replicas: 1
  selector: {matchLabels: {app: r}}
  template:
    metadata: {labels: {app: r}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        ports: [{containerPort: 8080, name: http}, {containerPort: 8443}]
        env: [{name: V, value: "1.10"}]
      - name: metrics
        image: busybox
        args: [sleep, "3600"]
        ports: [{containerPort: 9100, protocol: UDP}]
`},
	{serviceGVR, `{apiVersion: v1, kind: Service, metadata: {name: r}, spec: {selector: {app: r}, ports: [{name: http, port: 80, targetPort: 8080}, {name: dns, port: 53, protocol: UDP}]}}`},
	{secretGVR, `{apiVersion: v1, kind: Secret, metadata: {name: r-secret}, stringData: {password: s3cret}}`},
	{sprocketGVR, `
apiVersion: restart.e2e.loom.dev/v1
kind: Sprocket
metadata: {name: r}
spec:
  size: 3
  ports: [{port: 80}, {port: 53, protocol: UDP, name: dns}]
  tags: [a, b]
  extra: {free: {form: [1, 2]}, list: [{x: 1}]}
`},
}

// requestCounter counts the requests a client sends, by method.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *requestCounter) RoundTrip(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		c.mu.Lock()
		c.n[r.Method]++
		c.mu.Unlock()
		return next.RoundTrip(r)
	})
}

func (c *requestCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A new Applier, as a new process has (no record of any apply), decides
// "unchanged" from what the API server holds: for children another
// Applier applied it sends no request at all, and after another writer
// changed one field Loom owns in one of them, it applies exactly that
// child. On the old code the new Applier applied every child once.
func TestNewApplierSendsNothingForChildrenAlreadyRight(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ctx := context.Background()
	raw, err := os.ReadFile(e.Path("test", "e2e", "testdata", "restart", "sprocket-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ApplyCRD(ctx, raw); err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The API server publishes a new CRD's schema a moment after the CRD
	// is established; until then an Applier applies its objects.
	testutil.Eventually(t, 30*time.Second, "the Sprocket schema is published", func(context.Context) error {
		paths, err := disco.OpenAPIV3().Paths()
		if err != nil {
			return err
		}
		if _, ok := paths["apis/restart.e2e.loom.dev/v1"]; !ok {
			return fmt.Errorf("not in /openapi/v3 yet")
		}
		return nil
	})
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	counter := &requestCounter{n: map[string]int{}}
	cfg := rest.CopyConfig(e.Config)
	cfg.Wrap(counter.RoundTrip)
	counted, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// newApplier is the Applier of a new process.
	newApplier := func() *apply.Applier {
		return apply.New(counted, mapper, "loom", apply.WithOpenAPI(disco.OpenAPIV3()))
	}
	ns := e.NewNamespace(t)
	desired := make([]*unstructured.Unstructured, len(restartChildren))
	for i, c := range restartChildren {
		desired[i] = &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(c.obj), &desired[i].Object); err != nil {
			t.Fatal(err)
		}
		desired[i].SetNamespace(ns)
	}
	// live reads the children as Loom's cache holds them.
	live := func() []*unstructured.Unstructured {
		out := make([]*unstructured.Unstructured, len(desired))
		for i, c := range restartChildren {
			u, err := e.Get(ctx, c.gvr, ns, desired[i].GetName())
			if err != nil {
				t.Fatal(err)
			}
			out[i] = pack.Slim(u, "loom")
		}
		return out
	}
	first := newApplier()
	for _, d := range desired {
		if r := first.Apply(ctx, d.DeepCopy(), nil); r.Err != nil || r.Action != object.Created {
			t.Fatalf("first apply of %s: %s %v", r.Ref, r.Action, r.Err)
		}
	}
	counter.take()

	actions := func(a *apply.Applier, lives []*unstructured.Unstructured) map[string]object.Action {
		out := map[string]object.Action{}
		for i, d := range desired {
			r := a.Apply(ctx, d.DeepCopy(), lives[i])
			if r.Err != nil {
				t.Fatalf("apply %s: %v", r.Ref, r.Err)
			}
			out[d.GetKind()] = r.Action
		}
		return out
	}
	want := map[string]object.Action{}
	for _, d := range desired {
		want[d.GetKind()] = object.Unchanged
	}
	if got := actions(newApplier(), live()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("a new Applier over children already right: %v, want %v", got, want)
	}
	if n := counter.take(); len(n) != 0 {
		t.Errorf("a new Applier over children already right sent requests: %v, want none", n)
	}

	// Another writer changes one field Loom owns: only that child is
	// applied, and the field is taken back.
	_, err = e.Dyn.Resource(configMapGVR).Namespace(ns).Patch(ctx, "r-config", types.MergePatchType,
		[]byte(`{"data":{"b":"changed"}}`), metav1.PatchOptions{FieldManager: "intruder"})
	if err != nil {
		t.Fatal(err)
	}
	want["ConfigMap"] = object.Configured
	if got := actions(newApplier(), live()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("a new Applier after another writer changed the ConfigMap: %v, want %v", got, want)
	}
	if n := counter.take(); fmt.Sprint(n) != fmt.Sprint(map[string]int{http.MethodPatch: 1}) {
		t.Errorf("a new Applier after another writer changed the ConfigMap sent %v, want one PATCH", n)
	}
	cm, err := e.Get(ctx, configMapGVR, ns, "r-config")
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "b"); v != "two" {
		t.Errorf("ConfigMap data.b = %q after the repair, want %q", v, "two")
	}
}
