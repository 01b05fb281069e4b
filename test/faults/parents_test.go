//go:build e2e

package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

var (
	myresGVR     = schema.GroupVersionResource{Group: "example.loom.dev", Version: "v1alpha1", Resource: "myresources"}
	deployGVR    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	serviceGVR   = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	hpaGVR       = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
)

// childKind is a kind of child every parent has, and how its name follows
// from the parent's.
type childKind struct {
	gvr    schema.GroupVersionResource
	kind   string
	suffix string
}

var (
	configMapChild  = childKind{configMapGVR, "ConfigMap", "-config"}
	deploymentChild = childKind{deployGVR, "Deployment", ""}
	serviceChild    = childKind{serviceGVR, "Service", ""}
	// fullChildren are what the shipped set renders for parentObject.
	fullChildren = []childKind{configMapChild, deploymentChild, serviceChild}
)

// parentName is the name of the i-th parent of a test.
func parentName(i int) string { return "app-" + strconv.Itoa(i) }

// parentObject is MyResource app-<i> with one replica and one config
// entry, so the shipped set renders three children for it: ConfigMap
// app-<i>-config, Deployment app-<i> and Service app-<i>.
func parentObject(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.loom.dev/v1alpha1", "kind": "MyResource",
		"metadata": map[string]any{"name": parentName(i)},
		"spec": map[string]any{
			"image": "nginx:1.27", "replicas": int64(1),
			"config": map[string]any{"INDEX": strconv.Itoa(i)},
		},
	}}
}

// createParents creates parents app-0 … app-<n-1> from 8 clients at once.
// edit, when not nil, changes each one before it is created.
func createParents(t *testing.T, ns string, n int, edit func(i int, p *unstructured.Unstructured)) {
	t.Helper()
	e := env.From(t)
	err := testutil.ForEach(context.Background(), n, 8, func(ctx context.Context, i int) error {
		p := parentObject(i)
		if edit != nil {
			edit(i, p)
		}
		if _, err := e.Dyn.Resource(myresGVR).Namespace(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create parent %s: %w", p.GetName(), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// progress is how far the parents of a namespace have converged.
type progress struct {
	total, withStatus, ready int
	// notReady describes a few parents that are not Ready and current.
	notReady []string
}

func (p progress) String() string {
	return fmt.Sprintf("%d parents, %d with a status, %d Ready and current; not ready: %s",
		p.total, p.withStatus, p.ready, strings.Join(p.notReady, "; "))
}

// readyAndCurrent reports whether a parent is Ready, with a status that
// describes its current generation.
func readyAndCurrent(p *unstructured.Unstructured) (bool, string) {
	observed, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
	st, reason, msg := testutil.Condition(p, "Ready")
	if st == "True" && observed == p.GetGeneration() {
		return true, ""
	}
	return false, fmt.Sprintf("%s: Ready=%q %s %.120q, observedGeneration %d of %d", p.GetName(), st, reason, msg, observed, p.GetGeneration())
}

// readProgress reads the parents of ns, leaving out those in skip.
func readProgress(ctx context.Context, e *env.Env, ns string, skip map[string]bool) (progress, error) {
	list, err := e.Dyn.Resource(myresGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return progress{}, err
	}
	var p progress
	for i := range list.Items {
		item := &list.Items[i]
		if skip[item.GetName()] {
			continue
		}
		p.total++
		if _, ok := item.Object["status"]; ok {
			p.withStatus++
		}
		if ok, why := readyAndCurrent(item); ok {
			p.ready++
		} else if len(p.notReady) < 5 {
			p.notReady = append(p.notReady, why)
		}
	}
	return p, nil
}

// waitMidConverge waits until at least n parents have a status, and
// fails if by then every parent is Ready: a fault injected after that
// would not be mid-converge.
func waitMidConverge(t *testing.T, ns string, total, n int) {
	t.Helper()
	e := env.From(t)
	var p progress
	testutil.Poll(t, 200*time.Millisecond, 3*time.Minute, fmt.Sprintf("%d parents have a status", n), func(ctx context.Context) (err error) {
		if p, err = readProgress(ctx, e, ns, nil); err != nil {
			return err
		}
		if p.withStatus < n {
			return fmt.Errorf("%s", p)
		}
		return nil
	})
	if p.ready >= total {
		t.Fatalf("every parent was Ready before the fault: it must come mid-converge (%s)", p)
	}
	t.Logf("fault mid-converge: %d of %d parents have a status, %d are Ready", p.withStatus, total, p.ready)
}

// waitReady waits until want parents, leaving out those in skip, are
// Ready and current, and returns how long that took from start.
func waitReady(t *testing.T, ns string, want int, skip map[string]bool, start time.Time, timeout time.Duration) time.Duration {
	t.Helper()
	e := env.From(t)
	testutil.Poll(t, time.Second, max(timeout-time.Since(start), 10*time.Second), fmt.Sprintf("%d parents Ready", want), func(ctx context.Context) error {
		p, err := readProgress(ctx, e, ns, skip)
		if err != nil {
			return err
		}
		if p.total != want || p.ready != want {
			return fmt.Errorf("%s", p)
		}
		return nil
	})
	return time.Since(start)
}

// checkChildren fails unless every parent but those in skip has a child
// of each of kinds, controlled by it, lists exactly those in
// status.children, and has no child of the kinds in gone left.
func checkChildren(t *testing.T, ns string, kinds, gone []childKind, skip map[string]bool) {
	t.Helper()
	e := env.From(t)
	ctx := context.Background()
	parents, err := e.Dyn.Resource(myresGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := parents.Items[:0]
	for _, p := range parents.Items {
		if !skip[p.GetName()] {
			items = append(items, p)
		}
	}
	var problems []string
	for _, k := range append(append([]childKind(nil), kinds...), gone...) {
		list, err := e.Dyn.Resource(k.gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=loom"})
		if err != nil {
			t.Fatal(err)
		}
		controller := map[string]string{} // child name → controller UID
		for _, c := range list.Items {
			for _, ref := range c.GetOwnerReferences() {
				if ref.Controller != nil && *ref.Controller {
					controller[c.GetName()] = string(ref.UID)
				}
			}
		}
		expected := !contains(gone, k)
		for _, p := range items {
			uid, ok := controller[p.GetName()+k.suffix]
			switch {
			case expected && !ok:
				problems = append(problems, fmt.Sprintf("%s %s%s is missing", k.kind, p.GetName(), k.suffix))
			case expected && uid != string(p.GetUID()):
				problems = append(problems, fmt.Sprintf("%s %s%s is controlled by %s, not by its parent %s", k.kind, p.GetName(), k.suffix, uid, p.GetUID()))
			case !expected && ok:
				problems = append(problems, fmt.Sprintf("%s %s%s should have been pruned", k.kind, p.GetName(), k.suffix))
			}
		}
	}
	for _, p := range items {
		children, _, _ := unstructured.NestedSlice(p.Object, "status", "children")
		if len(children) != len(kinds) {
			problems = append(problems, fmt.Sprintf("%s lists %d children in its status, want %d", p.GetName(), len(children), len(kinds)))
		}
	}
	if len(problems) > 0 {
		t.Fatalf("%d problems with the children of %d parents; the first ones:\n%s", len(problems), len(items),
			strings.Join(problems[:min(20, len(problems))], "\n"))
	}
}

func contains(kinds []childKind, k childKind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}
