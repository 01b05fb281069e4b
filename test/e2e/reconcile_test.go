//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/test/env"
)

// ownedBy checks that obj has exactly one controller ownerReference, to parent.
func ownedBy(obj, parent *unstructured.Unstructured) error {
	var ctrl []metav1.OwnerReference
	for _, r := range obj.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			ctrl = append(ctrl, r)
		}
	}
	if len(ctrl) != 1 || ctrl[0].UID != parent.GetUID() || ctrl[0].Kind != "MyResource" || ctrl[0].Name != parent.GetName() {
		return fmt.Errorf("%s %s: controller refs %+v, want one to MyResource %s (%s)", obj.GetKind(), obj.GetName(), ctrl, parent.GetName(), parent.GetUID())
	}
	return nil
}

func TestCreateMakesChildrenWithOwnerReference(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	parent := createParentFixture(t, ns, "full")
	eventually(t, 30*time.Second, "children exist and are owned by the parent", func(ctx context.Context) error {
		cm, err := e.Get(ctx, configMapGVR, ns, "web-config")
		if err != nil {
			return err
		}
		if got := cm.Object["data"].(map[string]any)["LOG_LEVEL"]; got != "info" {
			return fmt.Errorf("ConfigMap data LOG_LEVEL = %v", got)
		}
		dep, err := e.Get(ctx, deployGVR, ns, "web")
		if err != nil {
			return err
		}
		svc, err := e.Get(ctx, serviceGVR, ns, "web")
		if err != nil {
			return err
		}
		for _, o := range []*unstructured.Unstructured{cm, dep, svc} {
			if err := ownedBy(o, parent); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestSpecChangeUpdatesChildren(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	createParentFixture(t, ns, "full")
	waitReplicas(t, ns, "web", 2)
	patch := `{"spec":{"replicas":4,"image":"nginx:1.28","config":{"LOG_LEVEL":"debug"}}}`
	patchSpec(t, ns, "web", patch)
	eventually(t, 30*time.Second, "Deployment and ConfigMap follow the new spec", func(ctx context.Context) error {
		dep, err := e.Get(ctx, deployGVR, ns, "web")
		if err != nil {
			return err
		}
		replicas, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
		containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		image := containers[0].(map[string]any)["image"]
		if replicas != 4 || image != "nginx:1.28" {
			return fmt.Errorf("replicas=%d image=%v", replicas, image)
		}
		cm, err := e.Get(ctx, configMapGVR, ns, "web-config")
		if err != nil {
			return err
		}
		if got, _, _ := unstructured.NestedString(cm.Object, "data", "LOG_LEVEL"); got != "debug" {
			return fmt.Errorf("LOG_LEVEL=%q", got)
		}
		return nil
	})
}

func waitReplicas(t *testing.T, ns, name string, want int64) {
	t.Helper()
	e := env.From(t)
	eventually(t, 30*time.Second, "Deployment "+name+" has the rendered replicas", func(ctx context.Context) error {
		dep, err := e.Get(ctx, deployGVR, ns, name)
		if err != nil {
			return err
		}
		if got, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); got != want {
			return fmt.Errorf("replicas = %d, want %d", got, want)
		}
		return nil
	})
}

func TestTemplateEditUpdatesEveryParent(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := copyTemplates(t)
	startLoom(t, dir, ns, loomOptions{})
	createParentFixture(t, ns, "full")
	createParentFixture(t, ns, "minimal")
	waitReplicas(t, ns, "web", 2)
	waitReplicas(t, ns, "hello", 1)
	editFile(t, filepath.Join(dir, "myresource", "deployment.yaml"), "spec:\n  replicas:", "  annotations:\n    loom.dev/edited: \"yes\"\nspec:\n  replicas:")
	for _, name := range []string{"web", "hello"} {
		eventually(t, 30*time.Second, "Deployment "+name+" picks up the template edit", func(ctx context.Context) error {
			dep, err := e.Get(ctx, deployGVR, ns, name)
			if err != nil {
				return err
			}
			if dep.GetAnnotations()["loom.dev/edited"] != "yes" {
				return fmt.Errorf("annotations %v", dep.GetAnnotations())
			}
			return nil
		})
	}
}

func TestRemovedTemplateFilePrunesChild(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := copyTemplates(t)
	startLoom(t, dir, ns, loomOptions{})
	createParentFixture(t, ns, "full")
	eventually(t, 30*time.Second, "Service exists", func(ctx context.Context) error {
		_, err := e.Get(ctx, serviceGVR, ns, "web")
		return err
	})
	if err := os.Remove(filepath.Join(dir, "myresource", "service.yaml")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Service is pruned", func(ctx context.Context) error {
		_, err := e.Get(ctx, serviceGVR, ns, "web")
		if isNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (err=%v)", err)
	})
	// The other children stay.
	if _, err := e.Get(context.Background(), deployGVR, ns, "web"); err != nil {
		t.Fatalf("Deployment was removed too: %v", err)
	}
}

func TestDeletedChildIsRecreated(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	createParentFixture(t, ns, "full")
	var oldUID types.UID
	eventually(t, 30*time.Second, "Service exists", func(ctx context.Context) error {
		svc, err := e.Get(ctx, serviceGVR, ns, "web")
		if err == nil {
			oldUID = svc.GetUID()
		}
		return err
	})
	if err := e.Dyn.Resource(serviceGVR).Namespace(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Service is recreated", func(ctx context.Context) error {
		svc, err := e.Get(ctx, serviceGVR, ns, "web")
		if err != nil {
			return err
		}
		if svc.GetUID() == oldUID {
			return fmt.Errorf("still the old Service")
		}
		return nil
	})
}

func TestDriftByAnotherFieldManagerIsReverted(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	l := startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	createParentFixture(t, ns, "full")
	waitReplicas(t, ns, "web", 2)
	// A spec change is an update, not a repair: no drift is reported.
	patch := `{"spec":{"replicas":3}}`
	patchSpec(t, ns, "web", patch)
	waitReplicas(t, ns, "web", 3)
	if n := l.counter(t, "loom_drift_reverted_total", nil); n != 0 {
		t.Fatalf("loom_drift_reverted_total = %v after a spec change, want 0", n)
	}

	// Another writer scales the Deployment and changes a label Loom sets.
	patch = `{"spec":{"replicas":7},"metadata":{"labels":{"app.kubernetes.io/name":"hijacked"}}}`
	if _, err := e.Dyn.Resource(deployGVR).Namespace(ns).Patch(context.Background(), "web", types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: "intruder"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Loom reverts the drift", func(ctx context.Context) error {
		dep, err := e.Get(ctx, deployGVR, ns, "web")
		if err != nil {
			return err
		}
		replicas, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
		if replicas != 3 || dep.GetLabels()["app.kubernetes.io/name"] != "myresource" {
			return fmt.Errorf("replicas=%d labels=%v", replicas, dep.GetLabels())
		}
		return nil
	})
	eventually(t, 30*time.Second, "a DriftReverted Event names the child and the field", func(ctx context.Context) error {
		evs, err := e.Events(ctx, ns, "web")
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if ev.InvolvedObject.Kind != "MyResource" || ev.Reason != "DriftReverted" {
				continue
			}
			if ev.Type != "Warning" || !strings.Contains(ev.Message, "Deployment.apps "+ns+"/web") ||
				!strings.Contains(ev.Message, "spec.replicas") && !strings.Contains(ev.Message, "metadata.labels") {
				return fmt.Errorf("event %s %q", ev.Type, ev.Message)
			}
			return nil
		}
		return errNotYet
	})
	if n := l.counter(t, "loom_drift_reverted_total", nil); n != 1 {
		t.Errorf("loom_drift_reverted_total = %v, want 1", n)
	}
}

func TestDeletingParentGarbageCollectsChildren(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	createParentFixture(t, ns, "full")
	waitReplicas(t, ns, "web", 2)
	if err := e.Dyn.Resource(myresGVR).Namespace(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the garbage collector removes every child", func(ctx context.Context) error {
		var left []string
		if _, err := e.Get(ctx, deployGVR, ns, "web"); !isNotFound(err) {
			left = append(left, "Deployment")
		}
		if _, err := e.Get(ctx, serviceGVR, ns, "web"); !isNotFound(err) {
			left = append(left, "Service")
		}
		if _, err := e.Get(ctx, configMapGVR, ns, "web-config"); !isNotFound(err) {
			left = append(left, "ConfigMap")
		}
		if len(left) > 0 {
			return fmt.Errorf("still there: %s", strings.Join(left, ", "))
		}
		return nil
	})
}

func TestMovedRemovedAndRestoredTemplateSet(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := copyTemplates(t)
	l := startLoom(t, dir, ns, loomOptions{})
	createParentFixture(t, ns, "full")
	waitReplicas(t, ns, "web", 2)
	waitMetric := func(what, name string, match map[string]string, want float64) {
		t.Helper()
		eventually(t, 30*time.Second, what, func(context.Context) error {
			if got := l.counter(t, name, match); got != want {
				return fmt.Errorf("%s = %v, want %v", name, got, want)
			}
			return nil
		})
	}
	scale := func(n int) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
		patchSpec(t, ns, "web", patch)
	}

	// A renamed folder is the same set: its controller carries on.
	moved := filepath.Join(dir, "renamed")
	if err := os.Rename(filepath.Join(dir, "myresource"), moved); err != nil {
		t.Fatal(err)
	}
	waitMetric("the moved set is reloaded", "loom_template_reloads_total", map[string]string{"set": moved, "result": "success"}, 1)
	waitMetric("one set is loaded", "loom_template_sets", nil, 1)
	scale(3)
	waitReplicas(t, ns, "web", 3)

	// A removed set stops its controller: the children are left as they are.
	stash := filepath.Join(t.TempDir(), "myresource")
	if err := os.Rename(moved, stash); err != nil {
		t.Fatal(err)
	}
	waitMetric("the set is unloaded", "loom_template_sets", nil, 0)
	scale(4)
	time.Sleep(5 * time.Second) // a running controller reacts in well under a second
	if dep, err := e.Get(context.Background(), deployGVR, ns, "web"); err != nil {
		t.Fatal(err)
	} else if got, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); got != 3 {
		t.Fatalf("replicas = %d after the set was removed, want 3 (still reconciled)", got)
	}

	// Putting it back starts a new controller, which catches up.
	if err := os.Rename(stash, filepath.Join(dir, "myresource")); err != nil {
		t.Fatal(err)
	}
	waitMetric("the set is loaded again", "loom_template_sets", nil, 1)
	waitReplicas(t, ns, "web", 4)
}
