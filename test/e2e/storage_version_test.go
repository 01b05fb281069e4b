//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/pipeline"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/test/env"
)

// gizmoGroup is the group of the two-version kind Gizmo: stored in
// v1alpha1 (spec.size, status.link), read by the templates in v1
// (spec.replicas, status.url).
const gizmoGroup = "stored.e2e.loom.dev"

// gizmoConverter stands for the set's converter (engine/convert): a
// rename of spec.size (v1alpha1) to spec.replicas (v1), and of
// status.link to status.url. A negative size fails, naming a file and
// line, as a conversion with a bug does.
type gizmoConverter struct{}

func (gizmoConverter) Convert(obj *unstructured.Unstructured, to string) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	specFrom, specTo, stFrom, stTo := "size", "replicas", "link", "url"
	if to == "v1alpha1" {
		specFrom, specTo, stFrom, stTo = specTo, specFrom, stTo, stFrom
	}
	if n, ok, _ := unstructured.NestedInt64(out.Object, "spec", "size"); ok && n < 0 {
		return nil, fmt.Errorf("loom.yaml:7: spec.size: %d is not a size", n)
	}
	for _, mv := range [][3]string{{"spec", specFrom, specTo}, {"status", stFrom, stTo}} {
		if m, ok := out.Object[mv[0]].(map[string]any); ok {
			if v, found := m[mv[1]]; found {
				delete(m, mv[1])
				m[mv[2]] = v
			}
		}
	}
	out.SetAPIVersion(gizmoGroup + "/" + to)
	return out, nil
}

// pathRecorder records the paths of the requests Loom sends for a group.
type pathRecorder struct {
	next   http.RoundTripper
	prefix string
	mu     *sync.Mutex
	paths  *[]string
}

func (p pathRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.Path, p.prefix) {
		p.mu.Lock()
		*p.paths = append(*p.paths, r.Method+" "+r.URL.Path)
		p.mu.Unlock()
	}
	return p.next.RoundTrip(r)
}

// A set whose parents are stored in v1alpha1 while its templates read v1:
// Loom lists, watches and writes the parents in v1alpha1 only (no
// conversion webhook in the way), renders each converted to v1, and
// writes the status converted back, so that it reads the same in both
// versions and the steady state is silent. A parent that cannot be
// converted is Degraded with the converter's file:line, and blocks no
// other. The CRD has no conversion webhook (strategy None, the same open
// schema in both versions): the API server changes only apiVersion, so
// what Loom converted shows as it wrote it.
func TestParentsAreReadInTheStorageVersion(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	installTestCRD(t, gizmoGroup, "Gizmo", "gizmos", "v1alpha1", "v1")
	stored := schema.GroupVersionResource{Group: gizmoGroup, Version: "v1alpha1", Resource: "gizmos"}
	hub := schema.GroupVersionResource{Group: gizmoGroup, Version: "v1", Resource: "gizmos"}
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "gizmo"), map[string]string{
		"loom.yaml": `parent: {apiVersion: ` + gizmoGroup + `/v1, kind: Gizmo}
schema:
  spec: {replicas: integer}
  status: {url: string}
storageVersion: v1alpha1
versions:
- name: v1alpha1
  schema:
    spec: {size: integer}
    status: {link: string}
status: status.yaml
`,
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\ndata: {replicas: '{{ .Spec.replicas }}'}\n",
		"status.yaml":    "url: http://{{ .Name }}\n",
	})
	var mu sync.Mutex
	var paths []string
	l := startLoom(t, dir, ns, loomOptions{resync: 5 * time.Second,
		converter: func(*render.Set) pipeline.Converter { return gizmoConverter{} },
		transport: func(rt http.RoundTripper) http.RoundTripper {
			return pathRecorder{next: rt, prefix: "/apis/" + gizmoGroup + "/", mu: &mu, paths: &paths}
		}})

	// 1. A parent that cannot be converted first: it blocks no other.
	createObject(t, stored, ns, "apiVersion: "+gizmoGroup+"/v1alpha1\nkind: Gizmo\nmetadata: {name: broken}\nspec: {size: -1}\n")
	waitDegraded(t, stored, ns, "broken", "ConversionFailed", "loom.yaml:7: spec.size: -1 is not a size")
	waitEvent(t, ns, "broken", "Warning", "ConversionFailed", "loom.yaml:7")
	for _, name := range []string{"g1", "g2"} {
		createObject(t, stored, ns, "apiVersion: "+gizmoGroup+"/v1alpha1\nkind: Gizmo\nmetadata: {name: "+name+"}\nspec: {size: 3}\n")
	}

	// 2. Rendered from the hub: the children read spec.replicas, which
	// only the conversion of spec.size gives.
	for _, name := range []string{"g1", "g2"} {
		waitConfigMapReplicas(t, ns, name, "3")
		waitConditionGVR(t, stored, ns, name, "Ready", "True")
	}

	// 3. The status, computed against v1 (url), is stored converted
	// (link), and reads the same in both versions.
	for _, gvr := range []schema.GroupVersionResource{stored, hub} {
		p, err := e.Get(context.Background(), gvr, ns, "g1")
		if err != nil {
			t.Fatal(err)
		}
		st, _, _ := unstructured.NestedMap(p.Object, "status")
		if st["link"] != "http://g1" || st["url"] != nil {
			t.Errorf("status read as %s: link=%v url=%v, want the stored version's link=http://g1 and no url", gvr.Version, st["link"], st["url"])
		}
		if s, _, _ := condition(p, "Ready"); s != "True" {
			t.Errorf("read as %s, Ready=%s", gvr.Version, s)
		}
	}

	// 4. Edited in v1 (the API server stores it in v1alpha1 as is):
	// the change reaches the child.
	if _, err := e.Dyn.Resource(hub).Namespace(ns).Patch(context.Background(), "g2", types.MergePatchType,
		[]byte(`{"spec":{"size":5}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConfigMapReplicas(t, ns, "g2", "5")

	// 5. Silent at steady state: for 30 s, and at least two resyncs of
	// every parent (the broken one included), no write at all.
	quiesce(t, 2*time.Second, func() float64 { n, _ := l.writes.snapshot(); return float64(n) })
	l.writes.reset()
	before := l.counter(t, "loom_reconcile_total", nil)
	start := time.Now()
	eventually(t, 90*time.Second, "30 s and two resyncs", func(context.Context) error {
		if n := l.counter(t, "loom_reconcile_total", nil) - before; n < 6 || time.Since(start) < 30*time.Second {
			return fmt.Errorf("%v reconciles in %v: %w", n, time.Since(start).Round(time.Second), errNotYet)
		}
		return nil
	})
	if n, log := l.writes.snapshot(); n != 0 {
		t.Errorf("steady state sent %d writes: %s", n, strings.Join(log, "\n"))
	}
	t.Logf("steady state: %v reconciles of 3 parents in %v, no write", l.counter(t, "loom_reconcile_total", nil)-before, time.Since(start).Round(time.Second))

	// 6. Every request Loom sent for the kind was in the storage version.
	mu.Lock()
	defer mu.Unlock()
	var inHub []string
	for _, p := range paths {
		if strings.Contains(p, "/apis/"+gizmoGroup+"/v1/") {
			inHub = append(inHub, p)
		}
	}
	if len(paths) == 0 || len(inHub) > 0 {
		t.Errorf("of %d requests for %s, %d in v1 (want none): %s", len(paths), gizmoGroup, len(inHub), strings.Join(inHub, "\n"))
	}
}

// waitConfigMapReplicas waits for the ConfigMap name's data.replicas.
func waitConfigMapReplicas(t *testing.T, ns, name, want string) {
	t.Helper()
	e := env.From(t)
	eventually(t, 60*time.Second, "ConfigMap "+name+" replicas="+want, func(ctx context.Context) error {
		cm, err := e.Get(ctx, configMapGVR, ns, name)
		if err != nil {
			return err
		}
		if got, _, _ := unstructured.NestedString(cm.Object, "data", "replicas"); got != want {
			return errors.New("replicas=" + got)
		}
		return nil
	})
}

// apiVersionConverter converts between versions of the same schema: only
// apiVersion changes.
type apiVersionConverter struct{}

func (apiVersionConverter) Convert(obj *unstructured.Unstructured, to string) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	out.SetAPIVersion(obj.GroupVersionKind().Group + "/" + to)
	return out, nil
}

// A loom.yaml whose storageVersion changes restarts the set's controller
// on the new version, and the restart writes nothing: every child and
// every status is already right.
func TestStorageVersionSwitchWritesNothing(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	const group = "switched.e2e.loom.dev"
	installTestCRD(t, group, "Gadget", "gadgets", "v1alpha1", "v1")
	stored := schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "gadgets"}
	loomYAML := func(storage string) string {
		return "parent: {apiVersion: " + group + "/v1, kind: Gadget}\nschema: {spec: {replicas: integer}}\n" +
			"storageVersion: " + storage + "\nversions:\n- name: v1alpha1\n  schema: {spec: {replicas: integer}}\n"
	}
	dir := t.TempDir()
	set := filepath.Join(dir, "gadget")
	writeFiles(t, set, map[string]string{
		"loom.yaml":      loomYAML("v1alpha1"),
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Name }}'}\ndata: {replicas: '{{ .Spec.replicas }}'}\n",
	})
	var mu sync.Mutex
	var paths []string
	inV1 := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, p := range paths {
			if strings.Contains(p, "/apis/"+group+"/v1/") {
				n++
			}
		}
		return n
	}
	l := startLoom(t, dir, ns, loomOptions{
		converter: func(*render.Set) pipeline.Converter { return apiVersionConverter{} },
		transport: func(rt http.RoundTripper) http.RoundTripper {
			return pathRecorder{next: rt, prefix: "/apis/" + group + "/", mu: &mu, paths: &paths}
		}})
	for _, name := range []string{"a", "b"} {
		createObject(t, stored, ns, "apiVersion: "+group+"/v1alpha1\nkind: Gadget\nmetadata: {name: "+name+"}\nspec: {replicas: 2}\n")
	}
	for _, name := range []string{"a", "b"} {
		waitConfigMapReplicas(t, ns, name, "2")
		waitConditionGVR(t, stored, ns, name, "Ready", "True")
	}
	if n := inV1(); n != 0 {
		t.Fatalf("%d requests in v1 while the set stores its parents in v1alpha1", n)
	}
	quiesce(t, 2*time.Second, func() float64 { n, _ := l.writes.snapshot(); return float64(n) })
	l.writes.reset()
	before := l.counter(t, "loom_reconcile_total", nil)

	writeFiles(t, set, map[string]string{"loom.yaml": loomYAML("v1")})
	// The new controller lists the parents in v1 and reconciles each.
	eventually(t, 60*time.Second, "the controller restarted on v1 and reconciled both parents", func(context.Context) error {
		if n := l.counter(t, "loom_reconcile_total", nil) - before; inV1() == 0 || n < 2 {
			return fmt.Errorf("%d requests in v1, %v reconciles: %w", inV1(), n, errNotYet)
		}
		return nil
	})
	quiesce(t, 2*time.Second, func() float64 { return l.counter(t, "loom_reconcile_total", nil) })
	// A reload asks again which permissions Loom lacks (access reviews,
	// which store nothing); no object may be written.
	_, log := l.writes.snapshot()
	var writes []string
	for _, w := range log {
		if !strings.Contains(w, "/apis/authorization.k8s.io/") {
			writes = append(writes, w)
		}
	}
	if len(writes) != 0 || len(log) == 50 {
		t.Errorf("the switch to v1 wrote %d objects, want none (of %d write requests logged): %s", len(writes), len(log), strings.Join(writes, "\n"))
	}
}
