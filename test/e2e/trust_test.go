//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/loom-operator/loom/test/env"
)

var hpaGVR = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}

// hpaSet is a template set whose parent kind is kind (in group, v1) and
// that renders one HorizontalPodAutoscaler at apiVersion.
func hpaSet(t *testing.T, dir, group, kind, apiVersion string) {
	t.Helper()
	writeFiles(t, dir, map[string]string{
		"loom.yaml": fmt.Sprintf("parent: {apiVersion: %s/v1, kind: %s}\n", group, kind),
		"hpa.yaml": fmt.Sprintf(`apiVersion: %s
kind: HorizontalPodAutoscaler
metadata:
  name: {{ .Name }}-hpa
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: {{ .Name }}}
  minReplicas: 1
  maxReplicas: 3
`, apiVersion),
	})
}

// watchDeletes records every HPA deleted in ns until the test ends.
func watchDeletes(t *testing.T, gvr schema.GroupVersionResource, ns string) func() []string {
	t.Helper()
	e := env.From(t)
	w, err := e.Dyn.Resource(gvr).Namespace(ns).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	deleted := make(chan string, 10000)
	go func() {
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type == watch.Deleted {
				deleted <- u.GetName() + "/" + string(u.GetUID())
			}
		}
	}()
	return func() []string {
		var out []string
		for {
			select {
			case d := <-deleted:
				out = append(out, d)
			default:
				return out
			}
		}
	}
}

// One object served at two versions is one child. Two sets in one Loom
// render HorizontalPodAutoscalers at autoscaling/v1 and autoscaling/v2, and
// one set moves its HPA from v1 to v2: no HPA is ever deleted. On the old
// code (informers and prune keyed by version) the HPAs were deleted and
// recreated in a loop.
func TestOneKindAtTwoVersionsIsOneChild(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	group := "twover.e2e.loom.dev"
	installTestCRD(t, group, "Alpha", "alphas")
	installTestCRD(t, group, "Beta", "betas")
	dir := t.TempDir()
	hpaSet(t, filepath.Join(dir, "alpha"), group, "Alpha", "autoscaling/v1")
	hpaSet(t, filepath.Join(dir, "beta"), group, "Beta", "autoscaling/v2")
	deletes := watchDeletes(t, hpaGVR, ns)
	startLoom(t, dir, ns, loomOptions{})
	alpha := createObject(t, schema.GroupVersionResource{Group: group, Version: "v1", Resource: "alphas"}, ns,
		fmt.Sprintf(`{apiVersion: %s/v1, kind: Alpha, metadata: {name: a}}`, group))
	beta := createObject(t, schema.GroupVersionResource{Group: group, Version: "v1", Resource: "betas"}, ns,
		fmt.Sprintf(`{apiVersion: %s/v1, kind: Beta, metadata: {name: b}}`, group))
	uids := map[string]types.UID{}
	eventually(t, 30*time.Second, "both HPAs exist, each owned by its parent", func(ctx context.Context) error {
		for name, parent := range map[string]*unstructured.Unstructured{"a-hpa": alpha, "b-hpa": beta} {
			hpa, err := e.Get(ctx, hpaGVR, ns, name)
			if err != nil {
				return err
			}
			if c := metav1.GetControllerOf(hpa); c == nil || c.UID != parent.GetUID() {
				return fmt.Errorf("%s: controller %v", name, c)
			}
			uids[name] = hpa.GetUID()
		}
		return nil
	})
	waitConditionGVR(t, schema.GroupVersionResource{Group: group, Version: "v1", Resource: "alphas"}, ns, "a", "Ready", "True")
	waitConditionGVR(t, schema.GroupVersionResource{Group: group, Version: "v1", Resource: "betas"}, ns, "b", "Ready", "True")

	// Move Alpha's HPA from v1 to v2: the same object, now rendered at v2.
	editFile(t, filepath.Join(dir, "alpha", "hpa.yaml"), "autoscaling/v1", "autoscaling/v2")
	editFile(t, filepath.Join(dir, "alpha", "hpa.yaml"), "maxReplicas: 3", "maxReplicas: 4")
	eventually(t, 30*time.Second, "Alpha's HPA has maxReplicas 4", func(ctx context.Context) error {
		hpa, err := e.Get(ctx, hpaGVR, ns, "a-hpa")
		if err != nil {
			return err
		}
		if n, _, _ := unstructured.NestedInt64(hpa.Object, "spec", "maxReplicas"); n != 4 {
			return fmt.Errorf("maxReplicas %d", n)
		}
		return nil
	})
	time.Sleep(3 * time.Second) // room for a delete loop to show
	for name, uid := range uids {
		hpa, err := e.Get(context.Background(), hpaGVR, ns, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if hpa.GetUID() != uid {
			t.Errorf("%s was replaced: UID %s, was %s", name, hpa.GetUID(), uid)
		}
	}
	if d := deletes(); len(d) > 0 {
		t.Errorf("%d HPA deletes, want 0: %v", len(d), d[:min(len(d), 5)])
	}
}

// A hand-made object whose name a parent's child takes is neither changed
// nor owned: the parent is Degraded naming it, with a Warning Event, and
// the other children are applied. The loom.dev/adopt annotation hands it
// over. On the old code Loom force-applied over it and made it the
// parent's (so that deleting the parent deleted it).
func TestExistingObjectIsAdoptedOnlyWithConsent(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	createObject(t, configMapGVR, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: web-config}, data: {theirs: "yes"}}`)
	l := startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	createParentFixture(t, ns, "full")
	waitDegraded(t, myresGVR, ns, "web", "ApplyFailed",
		"ConfigMap "+ns+"/web-config already exists and is not managed by Loom", "loom.dev/adopt=MyResource.example.loom.dev/web")
	waitEvent(t, ns, "web", "Warning", "ApplyFailed", "web-config already exists")
	waitReplicas(t, ns, "web", 2) // the other children are applied
	time.Sleep(2 * time.Second)   // a retry loop would show here
	cm, err := e.Get(context.Background(), configMapGVR, ns, "web-config")
	if err != nil {
		t.Fatal(err)
	}
	if data, _, _ := unstructured.NestedStringMap(cm.Object, "data"); len(data) != 1 || data["theirs"] != "yes" {
		t.Errorf("the hand-made ConfigMap was changed: data %v", data)
	}
	if len(cm.GetOwnerReferences()) != 0 || len(cm.GetLabels()) != 0 {
		t.Errorf("the hand-made ConfigMap was taken over: owners %v, labels %v", cm.GetOwnerReferences(), cm.GetLabels())
	}
	if n := l.counter(t, "loom_reconciles_total", nil); n > 10 {
		t.Errorf("%v reconciles for one refused child: Loom retries in a loop", n)
	}

	// The owner of the ConfigMap hands it over; touching the parent makes
	// Loom look again (it cannot watch objects without its labels).
	patch := `{"metadata":{"annotations":{"loom.dev/adopt":"MyResource.example.loom.dev/web"}}}`
	if _, err := e.Dyn.Resource(configMapGVR).Namespace(ns).Patch(context.Background(), "web-config", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Dyn.Resource(myresGVR).Namespace(ns).Patch(context.Background(), "web", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"touch":"1"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the annotated ConfigMap is adopted", func(ctx context.Context) error {
		cm, err := e.Get(ctx, configMapGVR, ns, "web-config")
		if err != nil {
			return err
		}
		parent, err := e.Get(ctx, myresGVR, ns, "web")
		if err != nil {
			return err
		}
		if data, _, _ := unstructured.NestedStringMap(cm.Object, "data"); data["LOG_LEVEL"] != "info" {
			return fmt.Errorf("data %v", data)
		}
		return ownedBy(cm, parent)
	})
	waitCondition(t, ns, "web", "Ready", "True")
}
