//go:build e2e

package e2e

// A suspended parent (loom.dev/suspend on it, or spec.suspend on its
// set's TemplateSet) gets no write to its children, whatever its spec or a
// second writer does, across a SIGKILL of Loom too; its status says
// Suspended; resuming converges at once; deleting it deletes it as usual.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// writeRecorder records every write request Loom sends while on.
type writeRecorder struct {
	mu     sync.Mutex
	on     bool
	writes []string
}

func (w *writeRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			w.mu.Lock()
			if w.on {
				w.writes = append(w.writes, r.Method+" "+r.URL.Path)
			}
			w.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// start clears the record and records from now on.
func (w *writeRecorder) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on, w.writes = true, nil
}

// besides returns the writes recorded that are not the status of the
// parents named (myresources/NAME/status) nor Events.
func (w *writeRecorder) besides(parents ...string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, wr := range w.writes {
		ok := strings.Contains(wr, "/events")
		for _, p := range parents {
			ok = ok || strings.HasSuffix(wr, "/myresources/"+p+"/status")
		}
		if !ok {
			out = append(out, wr)
		}
	}
	return out
}

// loomCLI runs bin/loom with args against the test cluster.
func loomCLI(t *testing.T, args ...string) string {
	t.Helper()
	e := env.From(t)
	out, err := exec.Command(e.Binary, append(args, "--kubeconfig", e.Kubeconfig)...).CombinedOutput()
	if err != nil {
		t.Fatalf("loom %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitSuspended waits until parent ns/name's status says it is suspended
// for reason: state Suspended, and a Suspended condition.
func waitSuspended(t *testing.T, ns, name, reason string) {
	t.Helper()
	e := env.From(t)
	eventually(t, 30*time.Second, name+" is Suspended ("+reason+")", func(ctx context.Context) error {
		p, err := e.Get(ctx, myresGVR, ns, name)
		if err != nil {
			return err
		}
		state, _, _ := unstructured.NestedString(p.Object, "status", "state")
		st, r, msg := condition(p, "Suspended")
		if state != "Suspended" || st != "True" || r != reason {
			return fmt.Errorf("state %q, Suspended=%s (%s: %s)", state, st, r, msg)
		}
		return nil
	})
}

// waitResumed waits until parent ns/name has no Suspended condition and a
// state other than Suspended.
func waitResumed(t *testing.T, ns, name string, within time.Duration) {
	t.Helper()
	e := env.From(t)
	eventually(t, within, name+" is no longer Suspended", func(ctx context.Context) error {
		p, err := e.Get(ctx, myresGVR, ns, name)
		if err != nil {
			return err
		}
		state, _, _ := unstructured.NestedString(p.Object, "status", "state")
		if st, _, _ := condition(p, "Suspended"); st != "" || state == "Suspended" {
			return fmt.Errorf("state %q, Suspended=%s", state, st)
		}
		return nil
	})
}

// secondWriter sets the ConfigMap's LOG_LEVEL as another tool would.
func secondWriter(t *testing.T, ns, name, value string) {
	t.Helper()
	e := env.From(t)
	body := fmt.Sprintf(`{"data":{"LOG_LEVEL":%q}}`, value)
	if _, err := e.Dyn.Resource(configMapGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(body),
		metav1.PatchOptions{FieldManager: "second-writer"}); err != nil {
		t.Fatal(err)
	}
}

// childField reads a string or integer field of a child.
func childField(ctx context.Context, e *env.Env, gvr schema.GroupVersionResource, ns, name string, path ...string) (string, error) {
	o, err := e.Get(ctx, gvr, ns, name)
	if err != nil {
		return "", err
	}
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	return fmt.Sprint(v), nil
}

// waitField waits until a child's field is want.
func waitField(t *testing.T, within time.Duration, gvr schema.GroupVersionResource, ns, name, want string, path ...string) {
	t.Helper()
	e := env.From(t)
	eventually(t, within, fmt.Sprintf("%s %s: %s = %s", gvr.Resource, name, strings.Join(path, "."), want), func(ctx context.Context) error {
		got, err := childField(ctx, e, gvr, ns, name, path...)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s", got)
		}
		return nil
	})
}

// A suspended parent whose spec changes, and whose ConfigMap a second
// writer edits, gets no write but its status, through every reconcile
// those events bring; resumed, the edit lands and the drift is repaired
// at once (no resync runs: the annotation's removal alone reconciles it).
func TestSuspendedParentWritesNothingAndResumes(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	rec := &writeRecorder{}
	l := startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{transport: rec.wrap})
	createParentFixture(t, ns, "full")
	waitCondition(t, ns, "web", "Ready", "True")

	if out := loomCLI(t, "suspend", "myresource/web", "-n", ns); !strings.Contains(out, "myresources/web suspended") {
		t.Fatalf("loom suspend printed %q", out)
	}
	waitSuspended(t, ns, "web", object.ReasonSuspendedByAnnotation)
	rec.start()
	before := l.counter(t, "loom_reconcile_total", nil)
	patchObject(t, myresGVR, ns, "web", `{"spec":{"replicas":3,"config":{"LOG_LEVEL":"debug"}}}`)
	secondWriter(t, ns, "web-config", "second-writer")
	// Each of the two edits enqueues the parent at once (milliseconds);
	// five seconds after both reconciles ran is ample for a write.
	eventually(t, 30*time.Second, "the edits are reconciled", func(context.Context) error {
		if n := l.counter(t, "loom_reconcile_total", nil) - before; n < 2 {
			return fmt.Errorf("%v reconciles", n)
		}
		return nil
	})
	consistently(t, 5*time.Second, "no write but the parent's status", func(context.Context) error {
		if w := rec.besides("web"); len(w) > 0 {
			return fmt.Errorf("writes while suspended: %v", w)
		}
		return nil
	})
	waitField(t, time.Second, configMapGVR, ns, "web-config", "second-writer", "data", "LOG_LEVEL")
	waitField(t, time.Second, deployGVR, ns, "web", "2", "spec", "replicas")
	// Steady state: a reconcile of the suspended parent (a label edit
	// brings one) writes nothing at all, its status included.
	rec.start()
	before = l.counter(t, "loom_reconcile_total", nil)
	patchObject(t, myresGVR, ns, "web", `{"metadata":{"labels":{"touched":"yes"}}}`)
	eventually(t, 30*time.Second, "the label edit is reconciled", func(context.Context) error {
		if n := l.counter(t, "loom_reconcile_total", nil) - before; n < 1 {
			return errNotYet
		}
		return nil
	})
	consistently(t, 2*time.Second, "no write at all in steady state", func(context.Context) error {
		if w := rec.besides(); len(w) > 0 {
			return fmt.Errorf("writes in steady state: %v", w)
		}
		return nil
	})
	p := mustGet(t, myresGVR, ns, "web")
	if _, ok := p.GetAnnotations()[object.AnnotationSuspend]; !ok {
		t.Fatalf("the annotation is gone: %v", p.GetAnnotations())
	}
	if l.counter(t, "loom_parents", map[string]string{"state": "Suspended"}) != 1 {
		t.Errorf("loom_parents{state=Suspended} = %v, want 1", l.counter(t, "loom_parents", map[string]string{"state": "Suspended"}))
	}

	if out := loomCLI(t, "resume", "myresource/web", "-n", ns); !strings.Contains(out, "myresources/web resumed") {
		t.Fatalf("loom resume printed %q", out)
	}
	waitField(t, 10*time.Second, configMapGVR, ns, "web-config", "debug", "data", "LOG_LEVEL")
	waitField(t, 10*time.Second, deployGVR, ns, "web", "3", "spec", "replicas")
	waitResumed(t, ns, "web", 10*time.Second)
}

// Suspended across a SIGKILL: the new process writes none of the
// children; resumed, it converges.
func TestSuspensionSurvivesSIGKILL(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	first := startLoomProcess(t, ns, "-v", "2")
	createParentFixture(t, ns, "full")
	waitCondition(t, ns, "web", "Ready", "True")
	patchObject(t, myresGVR, ns, "web", `{"metadata":{"annotations":{"loom.dev/suspend":"true"}}}`)
	waitSuspended(t, ns, "web", object.ReasonSuspendedByAnnotation)
	patchObject(t, myresGVR, ns, "web", `{"spec":{"replicas":3,"config":{"LOG_LEVEL":"debug"}}}`)
	secondWriter(t, ns, "web-config", "second-writer")
	kill(t, first)

	cm, svc := mustGet(t, configMapGVR, ns, "web-config"), mustGet(t, serviceGVR, ns, "web")
	deploy := mustGet(t, deployGVR, ns, "web")
	second := startLoomProcess(t, ns, "-v", "2")
	eventually(t, 60*time.Second, "the new process reconciled the suspended parent", func(context.Context) error {
		if !strings.Contains(second.Output(), "The parent is suspended") {
			return errNotYet
		}
		return nil
	})
	// The reconcile that found it suspended is done; five seconds more
	// would show a write that followed it.
	consistently(t, 5*time.Second, "no child is written", func(ctx context.Context) error {
		for _, o := range []struct {
			gvr  schema.GroupVersionResource
			was  *unstructured.Unstructured
			same func(now *unstructured.Unstructured) bool
		}{
			{configMapGVR, cm, func(n *unstructured.Unstructured) bool { return n.GetResourceVersion() == cm.GetResourceVersion() }},
			{serviceGVR, svc, func(n *unstructured.Unstructured) bool { return n.GetResourceVersion() == svc.GetResourceVersion() }},
			{deployGVR, deploy, func(n *unstructured.Unstructured) bool { return n.GetGeneration() == deploy.GetGeneration() }},
		} {
			now, err := e.Get(ctx, o.gvr, ns, o.was.GetName())
			if err != nil {
				return err
			}
			if !o.same(now) {
				return fmt.Errorf("%s %s was written", o.gvr.Resource, o.was.GetName())
			}
		}
		return nil
	})
	waitSuspended(t, ns, "web", object.ReasonSuspendedByAnnotation)

	loomCLI(t, "resume", "myresource/web", "-n", ns)
	waitField(t, 10*time.Second, configMapGVR, ns, "web-config", "debug", "data", "LOG_LEVEL")
	waitField(t, 10*time.Second, deployGVR, ns, "web", "3", "spec", "replicas")
	waitResumed(t, ns, "web", 10*time.Second)
}

// spec.suspend on the set's TemplateSet suspends every parent of the set,
// and clearing it reconciles every one at once.
func TestTemplateSetSuspendsEveryParent(t *testing.T) {
	t.Parallel()
	const n = 3
	_, ns, _, name, _ := startRollout(t, "rollout:\n  steps: [100%]\n", n)
	e := env.From(t)
	if out := loomCLI(t, "suspend", "--set", name); !strings.Contains(out, "templateset/"+name+" suspended") {
		t.Fatalf("loom suspend --set printed %q", out)
	}
	for i := range n {
		waitSuspended(t, ns, fmt.Sprintf("p-%d", i), object.ReasonSuspendedByTemplateSet)
	}
	cms := map[string]string{}
	for i := range n {
		p := fmt.Sprintf("p-%d", i)
		cms[p] = mustGet(t, configMapGVR, ns, p).GetResourceVersion()
		patchObject(t, myresGVR, ns, p, `{"spec":{"config":{"value":"edited"}}}`)
	}
	consistently(t, 5*time.Second, "no parent's ConfigMap is written", func(ctx context.Context) error {
		for p, rv := range cms {
			cm, err := e.Get(ctx, configMapGVR, ns, p)
			if err != nil {
				return err
			}
			if cm.GetResourceVersion() != rv {
				return fmt.Errorf("ConfigMap %s was written: %v", p, cm.Object["data"])
			}
		}
		return nil
	})
	loomCLI(t, "resume", "--set", name)
	for i := range n {
		p := fmt.Sprintf("p-%d", i)
		waitField(t, 10*time.Second, configMapGVR, ns, p, "edited", "data", "value")
		waitResumed(t, ns, p, 10*time.Second)
	}
}

// Deleting a suspended parent deletes it as an unsuspended one: the
// deletion is the later, explicit request. It never hangs on Loom's
// finalizer, and nothing the templates keep is lost: the child to keep is
// released, the other goes with the parent.
func TestDeletingASuspendedParent(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	root := orphanSet(t, []string{"kept", "plain"}, map[string]bool{"kept": true}, nil)
	startLoom(t, root, ns, loomOptions{})
	createParent(t, ns, "apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata:\n  name: p\nspec:\n  image: nginx:1.27\n")
	waitCondition(t, ns, "p", "Ready", "True")
	loomCLI(t, "suspend", "myresource/p", "-n", ns)
	waitSuspended(t, ns, "p", object.ReasonSuspendedByAnnotation)
	if err := e.Dyn.Resource(myresGVR).Namespace(ns).Delete(context.Background(), "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, myresGVR, ns, "p", "its deletion is not held by the suspension")
	releasedCM(t, ns, "p-kept", "nginx:1.27")
	waitGone(t, configMapGVR, ns, "p-plain", "it goes with its parent")
}

// loom.yaml's suspend: true suspends every parent of a set that has no
// rollout policy (and so no TemplateSet); removing it converges them at
// once, with the edit made meanwhile.
func TestSetSuspendsEveryParent(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := t.TempDir()
	setDir := filepath.Join(dir, "myresource")
	if err := testutil.CopyDir(filepath.Join(e.Root, "templates", "myresource"), setDir); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(setDir, "loom.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	startLoom(t, dir, ns, loomOptions{})
	createParentFixture(t, ns, "full")
	waitCondition(t, ns, "web", "Ready", "True")

	writeFiles(t, setDir, map[string]string{"loom.yaml": string(config) + "suspend: true\n"})
	waitSuspended(t, ns, "web", object.ReasonSuspendedBySet)
	cm := mustGet(t, configMapGVR, ns, "web-config").GetResourceVersion()
	patchObject(t, myresGVR, ns, "web", `{"spec":{"config":{"LOG_LEVEL":"debug"}}}`)
	consistently(t, 5*time.Second, "the ConfigMap is not written", func(ctx context.Context) error {
		now, err := e.Get(ctx, configMapGVR, ns, "web-config")
		if err != nil {
			return err
		}
		if now.GetResourceVersion() != cm {
			return fmt.Errorf("written: %v", now.Object["data"])
		}
		return nil
	})

	writeFiles(t, setDir, map[string]string{"loom.yaml": string(config)})
	waitField(t, 10*time.Second, configMapGVR, ns, "web-config", "debug", "data", "LOG_LEVEL")
	waitResumed(t, ns, "web", 10*time.Second)
}
