//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/test/env"
)

// A template that breaks for one parent (it reads .Spec.config.LOG_LEVEL,
// which is nil for a parent without config) degrades that parent with the
// template's file:line, records a Warning Event, and does not stop another
// parent from becoming Ready. Fixing the template clears the condition.
func TestBrokenTemplateDegradesOnlyItsParent(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := copyTemplates(t)
	deployment := filepath.Join(dir, "myresource", "deployment.yaml")
	editFile(t, deployment, "          image:", "          args: [{{ .Spec.config.LOG_LEVEL | lower | quote }}]\n          image:")
	line := lineOf(t, deployment, ".Spec.config.LOG_LEVEL")
	startLoom(t, dir, ns, loomOptions{})
	createParentFixture(t, ns, "minimal") // no config: breaks
	createParentFixture(t, ns, "full")    // has config: fine

	at := fmt.Sprintf("deployment.yaml:%d", line)
	waitDegraded(t, myresGVR, ns, "hello", "RenderFailed", at)
	waitEvent(t, ns, "hello", "Warning", "RenderFailed", at)
	waitCondition(t, ns, "web", "Ready", "True")

	// Fixing the template clears the condition.
	editFile(t, deployment, `args: [{{ .Spec.config.LOG_LEVEL | lower | quote }}]`, `args: [{{ dig "config" "LOG_LEVEL" "warn" .Spec | lower | quote }}]`)
	waitCondition(t, ns, "hello", "Degraded", "False")
	waitCondition(t, ns, "hello", "Ready", "True")
}

// A template edit that does not parse keeps the last good version: parents
// keep reconciling, and a later good edit is picked up.
func TestUnparsableTemplateKeepsLastGoodVersion(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := copyTemplates(t)
	l := startLoom(t, dir, ns, loomOptions{})
	createParentFixture(t, ns, "full")
	waitCondition(t, ns, "web", "Ready", "True")
	service := filepath.Join(dir, "myresource", "service.yaml")
	editFile(t, service, "spec:", "{{ if }}\nspec:")
	eventually(t, 30*time.Second, "the watcher tries, and fails, to reload", func(context.Context) error {
		if l.counter(t, "loom_template_reloads_total", map[string]string{"result": "error"}) == 0 {
			return errNotYet
		}
		return nil
	})
	// The failure is a Warning Event on the CRD (cluster-scoped, so its
	// Events live in the default namespace), naming the file and line.
	waitEvent(t, "default", "myresources.example.loom.dev", "Warning", "TemplateSetInvalid", dir, "service.yaml:")
	// The last good version still renders: a spec change still lands.
	patchSpec(t, ns, "web", `{"spec":{"replicas":3}}`)
	waitReplicas(t, ns, "web", 3)
	p, err := e.Get(context.Background(), myresGVR, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if st, _, msg := condition(p, "Degraded"); st != "False" {
		t.Fatalf("parent degraded by an unparsable edit that should have been ignored: %s", msg)
	}
	editFile(t, service, "{{ if }}\n", "")
	editFile(t, service, "port: {{", "port: {{ add 1 ")
	eventually(t, 30*time.Second, "a good edit after a bad one is picked up", func(ctx context.Context) error {
		svc, err := e.Get(ctx, serviceGVR, ns, "web")
		if err != nil {
			return err
		}
		ports := svc.Object["spec"].(map[string]any)["ports"].([]any)
		if got := ports[0].(map[string]any)["port"]; got != int64(8081) {
			return fmt.Errorf("port = %v", got)
		}
		return nil
	})
}

// A set whose parent kind has no CRD does not crash Loom; its controller
// starts when the CRD appears. A child kind the cluster does not serve makes
// the parent's condition say so, and is applied once its CRD is installed.
func TestMissingCRDs(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	group := fmt.Sprintf("e2e%d.loom.dev", rand.Uint32())
	l := startLoom(t, gadgetWidgetSet(t, group), ns, loomOptions{bufferLogs: true, admin: crdJustCreated})
	eventually(t, 30*time.Second, "Loom waits for the Widget CRD", func(context.Context) error {
		if !strings.Contains(l.logs(), "Parent kind is not served yet; waiting for its CRD") {
			return errNotYet
		}
		return nil
	})

	installTestCRD(t, group, "Widget", "widgets")
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	createObject(t, widgets, ns, `{"apiVersion":"`+group+`/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":"large"}}`)
	eventually(t, 30*time.Second, "the Widget controller starts and applies the ConfigMap", func(ctx context.Context) error {
		_, err := e.Get(ctx, configMapGVR, ns, "w1-cm")
		return err
	})
	waitDegraded(t, widgets, ns, "w1", "ApplyFailed", "Gadget", "not served")
	waitEvent(t, ns, "w1", "Warning", "ApplyFailed", "Gadget", "not served")
	installTestCRD(t, group, "Gadget", "gadgets")
	gadgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	eventually(t, 30*time.Second, "the Gadget is applied once its CRD exists", func(ctx context.Context) error {
		_, err := e.Get(ctx, gadgets, ns, "w1-gadget")
		return err
	})
	waitConditionGVR(t, widgets, ns, "w1", "Degraded", "False")
}

func lineOf(t *testing.T, path, needle string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, needle) {
			return i + 1
		}
	}
	t.Fatalf("%s has no %q", path, needle)
	return 0
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// installTestCRD installs a namespaced CRD with a free-form spec and a
// status subresource, and deletes it when the test ends.
func installTestCRD(t *testing.T, group, kind, plural string, versions ...string) {
	t.Helper()
	e := env.From(t)
	if err := e.ApplyCRD(context.Background(), testCRD(group, kind, plural, versions...)); err != nil {
		t.Fatalf("install CRD %s.%s: %v", plural, group, err)
	}
	t.Cleanup(func() { deleteTestCRD(e, group, plural) })
}

func deleteTestCRD(e *env.Env, group, plural string) {
	_ = e.Dyn.Resource(crdGVR).Delete(context.Background(), plural+"."+group, metav1.DeleteOptions{})
}

// testCRD is a namespaced kind's CRD, served at versions (v1 if none)
// with an open schema and a status subresource.
func testCRD(group, kind, plural string, versions ...string) []byte {
	if len(versions) == 0 {
		versions = []string{"v1"}
	}
	var vs strings.Builder
	for i, v := range versions {
		// No conversion webhook: every version has the same open schema.
		fmt.Fprintf(&vs, `  - name: %s
    served: true
    storage: %t
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, v, i == 0)
	}
	crd := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[3]s.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: %[2]s, plural: %[3]s, singular: %[4]s, listKind: %[2]sList}
  versions:
%[5]s`, group, kind, plural, strings.ToLower(kind), vs.String())
	return []byte(crd)
}

// A request the API server never answers holds one worker only until the
// reconcile timeout: with a single worker, another parent still converges,
// and the stuck parent converges once the server answers again. Loom stays
// live throughout: the timeout frees the worker, so it is not wedged (see
// TestWedgedWorkerFailsLiveness for one that is).
func TestHungRequestDoesNotBlockOtherParents(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	var hanging, held atomic.Bool
	hanging.Store(true)
	l := startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{
		workers:          1,
		reconcileTimeout: 2 * time.Second,
		hang: func(r *http.Request) bool {
			h := hanging.Load() && r.Method == http.MethodPatch && strings.HasSuffix(r.URL.Path, "/services/hello")
			if h {
				held.Store(true)
			}
			return h
		},
	})
	createParentFixture(t, ns, "minimal")
	eventually(t, 30*time.Second, "hello's reconcile is stuck in its Service apply", func(context.Context) error {
		if !held.Load() {
			return errNotYet
		}
		return nil
	})
	createParentFixture(t, ns, "full")
	// web becomes Ready only after hello's reconcile timed out, so this
	// checks liveness for at least one whole hang.
	var liveErr error
	eventually(t, 60*time.Second, "web is Ready", func(ctx context.Context) error {
		if err := l.mgr.Live(time.Now()); err != nil && liveErr == nil {
			liveErr = err
		}
		p, err := e.Get(ctx, myresGVR, ns, "web")
		if err != nil {
			return err
		}
		if st, reason, msg := condition(p, "Ready"); st != "True" {
			return fmt.Errorf("Ready=%q (%s: %s)", st, reason, msg)
		}
		return nil
	})
	if liveErr != nil {
		t.Errorf("Live() = %v while a request hung, want nil: the reconcile timeout frees the worker", liveErr)
	}
	if p, err := e.Get(context.Background(), myresGVR, ns, "hello"); err != nil {
		t.Fatal(err)
	} else if st, _, _ := condition(p, "Ready"); st == "True" {
		t.Fatalf("hello is Ready although its Service apply never returned")
	}
	hanging.Store(false)
	waitCondition(t, ns, "hello", "Ready", "True")
}

// A child whose name is taken by an object another controller owns is not
// taken over: the parent says whose it is, its other children are applied,
// and the object is left untouched. An object no controller owns is
// adopted, as Kubernetes' own controllers adopt orphans.
func TestChildNameTakenByAnotherController(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	owner := createObject(t, configMapGVR, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: owner}}`)
	createObject(t, configMapGVR, ns, fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: %s, controller: true}]
data: {theirs: "yes"}
`, owner.GetUID()))
	// A Service handed over with the adopt annotation is adopted.
	createObject(t, serviceGVR, ns, `{apiVersion: v1, kind: Service, metadata: {name: web, labels: {theirs: "yes"},
  annotations: {loom.dev/adopt: MyResource.example.loom.dev/web}}, spec: {ports: [{name: http, port: 8080}]}}`)
	startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	createParentFixture(t, ns, "full")

	waitDegraded(t, myresGVR, ns, "web", "ApplyFailed",
		"ConfigMap "+ns+"/web-config is controlled by ConfigMap owner, not by MyResource web")
	cm, err := e.Get(context.Background(), configMapGVR, ns, "web-config")
	if err != nil {
		t.Fatal(err)
	}
	if data, _, _ := unstructured.NestedStringMap(cm.Object, "data"); len(data) != 1 || data["theirs"] != "yes" {
		t.Errorf("the other controller's ConfigMap was changed: data %v", data)
	}
	waitReplicas(t, ns, "web", 2) // the other children are applied
	eventually(t, 30*time.Second, "the Service handed over is adopted", func(ctx context.Context) error {
		svc, err := e.Get(ctx, serviceGVR, ns, "web")
		if err != nil {
			return err
		}
		parent, err := e.Get(ctx, myresGVR, ns, "web")
		if err != nil {
			return err
		}
		return ownedBy(svc, parent)
	})
}

// A spec the CRD accepts but a child cannot hold (config data over a
// ConfigMap's 1 MiB) degrades only that parent, with the API server's reason
// and a Warning Event; fixing the spec clears it. A spec the CRD can check
// (a config key no ConfigMap allows) is refused when it is written.
func TestBadSpecDegradesOnlyItsParent(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	createParentFixture(t, ns, "full")
	big := strings.Repeat("x", 1100*1024)
	createObject(t, myresGVR, ns, fmt.Sprintf(`{"apiVersion":"example.loom.dev/v1alpha1","kind":"MyResource","metadata":{"name":"big"},"spec":{"image":"nginx:1.27","config":{"blob":%q}}}`, big))

	waitDegraded(t, myresGVR, ns, "big", "ApplyFailed", "apply ConfigMap big-config", "Too long")
	waitEvent(t, ns, "big", "Warning", "ApplyFailed", "big-config")
	waitCondition(t, ns, "web", "Ready", "True")

	patchSpec(t, ns, "big", `{"spec":{"config":{"blob":"small"}}}`)
	waitCondition(t, ns, "big", "Degraded", "False")
	waitCondition(t, ns, "big", "Ready", "True")

	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.loom.dev/v1alpha1", "kind": "MyResource", "metadata": map[string]any{"name": "badkey"},
		"spec": map[string]any{"image": "nginx", "config": map[string]any{"bad key!": "x"}},
	}}
	_, err := e.Dyn.Resource(myresGVR).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "config keys must be valid ConfigMap keys") {
		t.Fatalf("a config key no ConfigMap allows: err = %v, want the CRD to refuse it", err)
	}
}

// widgetVersionSet installs a Widget CRD of a group of its own, served at
// v1 and v2, and writes a set for it at v1 whose ConfigMap says which
// version the parent was read at (seenAs) and its spec.size. It returns
// the group, the templates folder and the set's folder.
func widgetVersionSet(t *testing.T) (group, dir, set string) {
	t.Helper()
	group = fmt.Sprintf("e2e%d.loom.dev", rand.Uint32())
	installTestCRD(t, group, "Widget", "widgets", "v1", "v2")
	dir = t.TempDir()
	set = filepath.Join(dir, "widget")
	writeFiles(t, set, map[string]string{
		"loom.yaml": "parent:\n  apiVersion: " + group + "/v1\n  kind: Widget\n",
		"configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-cm
data:
  seenAs: {{ .Parent.apiVersion | quote }}
  size: {{ .Spec.size | quote }}
`,
	})
	return group, dir, set
}

// Switching a set to another version of its parent kind restarts that
// kind's controller on the new version, without restarting Loom.
func TestParentVersionSwitchRestartsTheController(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	group, dir, set := widgetVersionSet(t)
	startLoom(t, dir, ns, loomOptions{admin: crdJustCreated})
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	createObject(t, widgets, ns, `{"apiVersion":"`+group+`/v1","kind":"Widget","metadata":{"name":"w1"}}`)
	seenAs := func(want string) {
		t.Helper()
		eventually(t, 30*time.Second, "the ConfigMap says the parent was read as "+want, func(ctx context.Context) error {
			cm, err := e.Get(ctx, configMapGVR, ns, "w1-cm")
			if err != nil {
				return err
			}
			if got, _, _ := unstructured.NestedString(cm.Object, "data", "seenAs"); got != want {
				return fmt.Errorf("seenAs = %q", got)
			}
			return nil
		})
	}
	seenAs(group + "/v1")
	editFile(t, filepath.Join(set, "loom.yaml"), group+"/v1", group+"/v2")
	seenAs(group + "/v2")
}

// A parent kind whose CRD has no status subresource still gets its
// children, and one Warning Event says why its status stays empty; adding
// the subresource to the CRD lets the status be written.
func TestParentKindWithoutStatusSubresource(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	group := fmt.Sprintf("e2e%d.loom.dev", rand.Uint32())
	crd := func(subresources string) []byte {
		return []byte(fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: Gizmo, plural: gizmos, singular: gizmo, listKind: GizmoList}
  versions:
  - name: v1
    served: true
    storage: true
%[2]s    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, group, subresources))
	}
	if err := e.ApplyCRD(context.Background(), crd("")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.Dyn.Resource(crdGVR).Delete(context.Background(), "gizmos."+group, metav1.DeleteOptions{})
	})
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "gizmo"), map[string]string{
		"loom.yaml":      "parent:\n  apiVersion: " + group + "/v1\n  kind: Gizmo\n",
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\ndata:\n  a: b\n",
	})
	l := startLoom(t, dir, ns, loomOptions{admin: crdJustCreated})
	gizmos := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gizmos"}
	createObject(t, gizmos, ns, `{"apiVersion":"`+group+`/v1","kind":"Gizmo","metadata":{"name":"g1"}}`)
	eventually(t, 30*time.Second, "the child is applied", func(ctx context.Context) error {
		_, err := e.Get(ctx, configMapGVR, ns, "g1-cm")
		return err
	})
	waitEvent(t, ns, "g1", "Warning", "StatusNotWritten", "gizmos."+group, "no status subresource")

	// Any CRD change makes Loom try the status write again (the CRD may
	// have gained the subresource). One that does not add it must not
	// repeat the Warning: other tests install CRDs all the time, and so
	// does a real cluster.
	reconciled := func() float64 { return l.counter(t, "loom_reconcile_total", map[string]string{"kind": "Gizmo"}) }
	before := reconciled()
	other := strings.Replace(string(crd("")), "gizmo", "doohickey", -1)
	other = strings.Replace(other, "Gizmo", "Doohickey", -1)
	if err := e.ApplyCRD(context.Background(), []byte(other)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.Dyn.Resource(crdGVR).Delete(context.Background(), "doohickeys."+group, metav1.DeleteOptions{})
	})
	eventually(t, 30*time.Second, "the parent is reconciled again after a CRD change", func(context.Context) error {
		if n := reconciled(); n <= before {
			return fmt.Errorf("%v reconciles, want more than %v", n, before)
		}
		return nil
	})
	consistently(t, 2*time.Second, "the StatusNotWritten Event is recorded once", func(ctx context.Context) error {
		evs, err := e.Events(ctx, ns, "g1")
		if err != nil {
			return err
		}
		for _, e := range evs {
			if e.Reason == "StatusNotWritten" && e.Count > 1 {
				return fmt.Errorf("recorded %d times", e.Count)
			}
		}
		return nil
	})
	if n := l.counter(t, "loom_status_writes_total", nil); n != 0 {
		t.Errorf("loom_status_writes_total = %v without a status subresource", n)
	}

	if err := e.ApplyCRD(context.Background(), crd("    subresources: {status: {}}\n")); err != nil {
		t.Fatal(err)
	}
	waitConditionGVR(t, gizmos, ns, "g1", "Ready", "True")
}
