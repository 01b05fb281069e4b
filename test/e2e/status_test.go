//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/loom-operator/loom/test/env"
)

// stateRecorder watches one parent and records every distinct status.state
// it goes through.
type stateRecorder struct {
	states chan string
}

func recordStates(t *testing.T, ns, name string) *stateRecorder {
	t.Helper()
	e := env.From(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := e.Dyn.Resource(myresGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatalf("watch %s: %v", name, err)
	}
	r := &stateRecorder{states: make(chan string, 100)}
	go func() {
		defer w.Stop()
		last := ""
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			st, _, _ := unstructured.NestedString(ev.Object.(*unstructured.Unstructured).Object, "status", "state")
			if st != "" && st != last {
				last = st
				r.states <- st
			}
		}
	}()
	return r
}

// until collects states until want is seen.
func (r *stateRecorder) until(t *testing.T, want string, timeout time.Duration) []string {
	t.Helper()
	var seen []string
	deadline := time.After(timeout)
	for {
		select {
		case s := <-r.states:
			seen = append(seen, s)
			if s == want {
				return seen
			}
		case <-deadline:
			t.Fatalf("state %s not reached within %v; saw %v", want, timeout, seen)
		}
	}
}

func TestParentGoesBuildingThenReady(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	l := startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	states := recordStates(t, ns, "web")
	createParentFixture(t, ns, "full")
	seen := states.until(t, "Ready", 60*time.Second)
	if !slices.Contains(seen, "Building") {
		t.Fatalf("states %v: want Building before Ready", seen)
	}
	p, err := e.Get(context.Background(), myresGVR, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if st, reason, _ := condition(p, "Progressing"); st != "False" || reason != "Complete" {
		t.Errorf("Progressing = %s/%s, want False/Complete", st, reason)
	}
	if st, _, _ := condition(p, "Degraded"); st != "False" {
		t.Errorf("Degraded = %s, want False", st)
	}
	if og, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration"); og != p.GetGeneration() {
		t.Errorf("observedGeneration %d, generation %d", og, p.GetGeneration())
	}
	children, _, _ := unstructured.NestedSlice(p.Object, "status", "children")
	if len(children) != 3 {
		t.Errorf("status.children has %d entries, want 3: %v", len(children), children)
	}
	for _, c := range children {
		if m := c.(map[string]any); m["ready"] != true {
			t.Errorf("child not ready in a Ready parent: %v", m)
		}
	}
	// The parent followed its Deployment through the child watch (tests run
	// Loom with no periodic resync): its Ready transition comes within
	// seconds of the Deployment's Available one. Both are stamped to the
	// second, on the same clock.
	dep, err := e.Get(context.Background(), deployGVR, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	available, ready := transitionTime(t, dep, "Available"), transitionTime(t, p, "Ready")
	if lag := ready.Sub(available); lag > 5*time.Second {
		t.Errorf("Ready at %s, %s after the Deployment became Available at %s", ready, lag, available)
	}
	// The status template filled status.url from the live Service.
	if url, _, _ := unstructured.NestedString(p.Object, "status", "url"); url != "http://web."+ns+".svc.cluster.local:8080" {
		t.Errorf("status.url = %q", url)
	}
	// One Ready Event, for the one transition.
	eventually(t, 10*time.Second, "a Ready Event", func(ctx context.Context) error {
		evs, err := e.Events(ctx, ns, "web")
		if err != nil {
			return err
		}
		n := 0
		for _, e := range evs {
			if e.Reason == "Ready" {
				n += int(max(e.Count, 1))
			}
		}
		if n != 1 {
			return fmt.Errorf("%d Ready events, want 1", n)
		}
		return nil
	})
	_ = l
}

func TestScalingShowsBuildingThenReadyAgain(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	createParentFixture(t, ns, "full")
	waitCondition(t, ns, "web", "Ready", "True")
	states := recordStates(t, ns, "web")
	states.until(t, "Ready", 10*time.Second) // the current state
	patchSpec(t, ns, "web", `{"spec":{"replicas":5}}`)
	seen := states.until(t, "Ready", 60*time.Second)
	if len(seen) < 2 || seen[0] != "Building" {
		t.Fatalf("states after scaling %v: want Building, then Ready", seen)
	}
	p, _ := e.Get(context.Background(), myresGVR, ns, "web")
	if og, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration"); og != p.GetGeneration() {
		t.Errorf("observedGeneration %d, generation %d", og, p.GetGeneration())
	}
}

// A Deployment whose pods can never be scheduled exceeds its progress
// deadline; the parent turns Failed with a message naming the Deployment.
func TestStuckDeploymentFailsTheParent(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := copyTemplates(t)
	dep := filepath.Join(dir, "myresource", "deployment.yaml")
	editFile(t, dep, "spec:\n  replicas:", "spec:\n  progressDeadlineSeconds: 2\n  replicas:")
	editFile(t, dep, "      containers:", "      nodeSelector:\n        loom.dev/no-such-node: \"true\"\n      containers:")
	startLoom(t, dir, ns, loomOptions{})
	createParentFixture(t, ns, "full")
	eventually(t, 90*time.Second, "the parent is Failed, naming the Deployment", func(ctx context.Context) error {
		p, err := e.Get(ctx, myresGVR, ns, "web")
		if err != nil {
			return err
		}
		state, _, _ := unstructured.NestedString(p.Object, "status", "state")
		st, reason, msg := condition(p, "Degraded")
		if state != "Failed" || st != "True" || reason != "ChildFailed" || !strings.Contains(msg, "Deployment") || !strings.Contains(msg, "web") {
			return fmt.Errorf("state=%s Degraded=%s reason=%s message=%q", state, st, reason, msg)
		}
		return nil
	})
}

// kubectl wait --for=condition=Ready returns for a healthy parent.
func TestKubectlWaitForReady(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	createParentFixture(t, ns, "full")
	kubeconfig := e.Kubeconfig
	out, err := exec.Command("kubectl", "--kubeconfig", kubeconfig, "-n", ns, "wait", "--for=condition=Ready",
		"myresource/web", "--timeout=60s").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl wait: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "condition met") {
		t.Fatalf("kubectl wait said: %s", out)
	}
}

// An idle parent is left alone: over 30 s, no reconcile, no write, no Event.
func TestIdleParentIsNotReconciled(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	l := startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	createParentFixture(t, ns, "full")
	waitCondition(t, ns, "web", "Ready", "True")
	quiesce(t, 2*time.Second, func() float64 { return l.counter(t, "loom_reconcile_total", nil) })
	evsBefore, err := e.Events(context.Background(), ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	l.writes.reset()
	before := l.counter(t, "loom_reconcile_total", nil)
	time.Sleep(30 * time.Second)
	reconciles := l.counter(t, "loom_reconcile_total", nil) - before
	writes, log := l.writes.snapshot()
	evsAfter, err := e.Events(context.Background(), ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if reconciles != 0 || writes != 0 || len(evsAfter) != len(evsBefore) {
		t.Fatalf("idle for 30s: %v reconciles, %d writes %v, events %d → %d", reconciles, writes, log, len(evsBefore), len(evsAfter))
	}
}

// transitionTime is when an object's condition typ last changed.
func transitionTime(t *testing.T, obj *unstructured.Unstructured, typ string) time.Time {
	t.Helper()
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != typ {
			continue
		}
		s, _ := m["lastTransitionTime"].(string)
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatalf("%s condition %s: lastTransitionTime %q: %v", obj.GetKind(), typ, s, err)
		}
		return at
	}
	t.Fatalf("%s %s has no %s condition", obj.GetKind(), obj.GetName(), typ)
	return time.Time{}
}
