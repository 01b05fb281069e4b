//go:build e2e

package e2e

// Parents' lifecycle: changes that must not be lost, and controllers that
// must not overlap.

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

var serviceAccountGVR = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}

// A parent kind without metadata.generation (ConfigMap, a built-in kind)
// does not lose its changes: a data change reaches the children, with no
// periodic resync to fall back on, and with Loom's CRD watch held (a CRD
// change re-enqueues parents whose kind has no status subresource, as a
// ConfigMap has none, which would hide a dropped update).
func TestParentKindWithoutGenerationGetsItsChanges(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "settings"), map[string]string{
		"loom.yaml": "parent:\n  apiVersion: v1\n  kind: ConfigMap\n",
		"serviceaccount.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Name }}-sa
  annotations:
    color: {{ .Parent.data.color | quote }}
`,
	})
	startLoom(t, dir, ns, loomOptions{hang: func(r *http.Request) bool {
		return strings.HasSuffix(r.URL.Path, "/customresourcedefinitions")
	}})
	createObject(t, configMapGVR, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {color: blue}}`)
	colorIs := func(want string) {
		t.Helper()
		eventually(t, 30*time.Second, "the ServiceAccount's color is "+want, func(ctx context.Context) error {
			sa, err := e.Get(ctx, serviceAccountGVR, ns, "settings-sa")
			if err != nil {
				return err
			}
			if got := sa.GetAnnotations()["color"]; got != want {
				return fmt.Errorf("color = %q", got)
			}
			return nil
		})
	}
	colorIs("blue")
	cm, err := e.Get(context.Background(), configMapGVR, ns, "settings")
	if err != nil {
		t.Fatal(err)
	}
	if g := cm.GetGeneration(); g != 0 {
		t.Fatalf("the ConfigMap has generation %d; this test needs a kind without one", g)
	}
	if _, err := e.Dyn.Resource(configMapGVR).Namespace(ns).Patch(context.Background(), "settings", types.MergePatchType,
		[]byte(`{"data":{"color":"green"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	colorIs("green")
}

// inFlight is a transport that counts the requests matching match which
// are in flight at once, and holds the next one (until its context ends)
// when hold is set.
type inFlight struct {
	next  http.RoundTripper
	match func(*http.Request) bool
	hold  atomic.Bool
	now   atomic.Int32
	max   atomic.Int32
}

func (f *inFlight) RoundTrip(r *http.Request) (*http.Response, error) {
	if !f.match(r) {
		return f.next.RoundTrip(r)
	}
	n := f.now.Add(1)
	defer f.now.Add(-1)
	for m := f.max.Load(); n > m && !f.max.CompareAndSwap(m, n); m = f.max.Load() {
	}
	if f.hold.CompareAndSwap(true, false) {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return f.next.RoundTrip(r)
}

// When a set switches its parent version, the old controller's in-flight
// reconciles finish before the new controller starts: the two never apply
// the same parent's child at once.
func TestParentVersionSwitchWaitsForInFlightReconciles(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	group, dir, set := widgetVersionSet(t)
	child := "/api/v1/namespaces/" + ns + "/configmaps/w1-cm"
	applies := &inFlight{match: func(r *http.Request) bool { return r.Method == http.MethodPatch && r.URL.Path == child }}
	startLoom(t, dir, ns, loomOptions{
		reconcileTimeout: 5 * time.Second,
		transport: func(rt http.RoundTripper) http.RoundTripper {
			applies.next = rt
			return applies
		},
	})
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	createObject(t, widgets, ns, `{"apiVersion":"`+group+`/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":"1"}}`)
	childIs := func(seenAs, size string) {
		t.Helper()
		eventually(t, 30*time.Second, "the ConfigMap says "+seenAs+" size "+size, func(ctx context.Context) error {
			cm, err := e.Get(ctx, configMapGVR, ns, "w1-cm")
			if err != nil {
				return err
			}
			data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
			if data["seenAs"] != seenAs || data["size"] != size {
				return fmt.Errorf("data = %v", data)
			}
			return nil
		})
	}
	childIs(group+"/v1", "1")

	// The v1 controller's next apply of the child hangs until its reconcile
	// times out.
	applies.hold.Store(true)
	if _, err := e.Dyn.Resource(widgets).Namespace(ns).Patch(context.Background(), "w1", types.MergePatchType,
		[]byte(`{"spec":{"size":"2"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the v1 controller's apply is in flight", func(context.Context) error {
		if applies.hold.Load() || applies.now.Load() != 1 {
			return errNotYet
		}
		return nil
	})
	editFile(t, filepath.Join(set, "loom.yaml"), group+"/v1", group+"/v2")
	childIs(group+"/v2", "2")
	if n := applies.max.Load(); n != 1 {
		t.Errorf("%d applies of the child were in flight at once, want 1: the v2 controller started before the v1 controller's reconcile ended", n)
	}
}

// Two sets for one parent kind at startup: the second (in folder order) is
// rejected, and Loom runs the first instead of exiting. On the old code
// Run returned the error, so Loom exited and no parent was reconciled.
func TestTwoSetsForOneKindAtStartup(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := t.TempDir()
	if err := testutil.CopyDir(filepath.Join(e.Root, "templates", "myresource"), filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CopyDir(filepath.Join(e.Root, "templates", "myresource"), filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	l := startLoom(t, dir, ns, loomOptions{})
	createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "hello", "Ready", "True")
	l.mustBeRunning(t)
}
