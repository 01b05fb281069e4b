//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// driftModesSet renders, for a MyResource, a ConfigMap in drift mode warn
// (its own annotation) and a Deployment whose spec.replicas loom.yaml's
// drift.ignore leaves to another writer; the Deployment's port label
// follows the parent's spec.port.
var driftModesSet = map[string]string{
	"loom.yaml": `parent: {apiVersion: example.loom.dev/v1alpha1, kind: MyResource}
drift:
  ignore:
  - {kind: Deployment, paths: [spec.replicas]}
`,
	"configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: '{{ .Name }}-warn'
  annotations: {loom.dev/drift: warn}
data: {level: "1", mode: warn}
`,
	"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: '{{ .Name }}'
  labels: {port: '{{ .Spec.port | default 8080 }}'}
spec:
  replicas: 1
  selector: {matchLabels: {app: '{{ .Name }}'}}
  template:
    metadata: {labels: {app: '{{ .Name }}'}}
    spec:
      containers: [{name: app, image: nginx:1.27}]
`,
}

// driftQuiet is how long a drifted child must draw no write to count as
// a steady state: a write loop (apply, watch event, reconcile, apply)
// turns in milliseconds, so a few seconds show dozens of turns.
const driftQuiet = 5 * time.Second

// driftProcess is a bin/loom run process over driftModesSet, sending its
// requests through counter, and exporting metrics at addr.
type driftProcess struct {
	*testutil.Process
	addr string
}

// startDriftProcess runs bin/loom run over the set in dir, in ns, through
// the counting proxy c.
func startDriftProcess(t *testing.T, ns, dir string, c *apiCounter) *driftProcess {
	t.Helper()
	e := env.From(t)
	addr := freeAddr(t)
	args := []string{"run", "--templates", dir, "--namespace", ns, "--kubeconfig", c.kubeconfig, "--metrics-bind-address", addr}
	p := testutil.StartProcess(t, filepath.Join(t.TempDir(), "loom.log"), e.Binary, testutil.WithoutWebhook(args)...)
	return &driftProcess{Process: p, addr: addr}
}

// counter sums the process's counter name over its label values.
func (p *driftProcess) counter(t *testing.T, name string) float64 {
	t.Helper()
	var sum float64
	eventually(t, 30*time.Second, "scrape "+name, func(ctx context.Context) error {
		f, err := scrape(ctx, p.addr)
		if err != nil {
			return err
		}
		sum = 0
		for _, m := range f[name].GetMetric() {
			sum += m.GetCounter().GetValue()
		}
		return nil
	})
	return sum
}

// decided waits until the process has decided n children of its parents.
func (p *driftProcess) decided(t *testing.T, n float64) {
	t.Helper()
	eventually(t, 60*time.Second, "the new Loom decides every child", func(ctx context.Context) error {
		if got := p.counter(t, "loom_child_changes_total"); got < n {
			return fmt.Errorf("%.0f of %.0f children decided", got, n)
		}
		return nil
	})
}

// loomWrites lists the writes counted beyond since to children and, with
// parents, to parents (and their status).
func loomWrites(c *apiCounter, since requestCounts, parents bool) []string {
	var out []string
	for _, w := range c.counts().sub(since).writesOf() {
		if strings.Contains(w, "configmaps") || strings.Contains(w, "deployments") || (parents && strings.Contains(w, "myresources")) {
			out = append(out, w)
		}
	}
	return out
}

// driftQuietFor checks that no write to a child, nor with parents to a
// parent, is counted for driftQuiet.
func driftQuietFor(t *testing.T, c *apiCounter, what string, parents bool) {
	t.Helper()
	since := c.counts()
	time.Sleep(driftQuiet)
	if w := loomWrites(c, since, parents); len(w) > 0 {
		t.Errorf("%s: writes in %s, want none: %v", what, driftQuiet, w)
	}
}

// waitDrifted waits until the parent's Drifted condition has status, with
// a message holding texts.
func waitDrifted(t *testing.T, ns, name, status string, texts ...string) {
	t.Helper()
	e := env.From(t)
	eventually(t, 30*time.Second, name+" Drifted="+status, func(ctx context.Context) error {
		u, err := e.Get(ctx, myresGVR, ns, name)
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] != "Drifted" {
				continue
			}
			msg, _ := m["message"].(string)
			if m["status"] != status || !containsAll(msg, texts) {
				return fmt.Errorf("Drifted %v: %s", m["status"], msg)
			}
			return nil
		}
		return fmt.Errorf("no Drifted condition")
	})
}

// eventCount counts the Events of reason on the parent name, with their
// repetitions.
func eventCount(t *testing.T, ns, name, reason string) int32 {
	t.Helper()
	e := env.From(t)
	list, err := e.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name == name && ev.Reason == reason {
			n += max(ev.Count, 1)
		}
	}
	return n
}

// A ConfigMap in drift mode warn, changed by another writer's Update: Loom
// leaves the value, says so in a Drifted condition naming the child and
// the field, with one Warning Event and loom_drift_warned_total at 1, and
// writes nothing while it stays so, nor after a SIGKILL and a restart
// (the new Loom finds the same condition: no Event, no status write).
// loom diff shows the drift as the change a repair would make. When the
// other writer sets the value back, the condition clears and one apply
// takes the field back into Loom's entry. On the old code the value was
// reverted at once (DriftReverted), and no parent had a Drifted condition.
func TestDriftWarnLeavesTheFieldAndSaysSo(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	ctx := context.Background()
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "drift"), driftModesSet)
	c := newAPICounter(t, e, t.TempDir(), "loom")
	p := startDriftProcess(t, ns, dir, c)
	createParent(t, ns, `{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, metadata: {name: w}, spec: {image: nginx:1.27}}`)
	waitCondition(t, ns, "w", "Ready", "True")

	if err := update(ctx, e, configMapGVR, ns, "w-warn", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "2", "data", "level")
	}); err != nil {
		t.Fatal(err)
	}
	waitDrifted(t, ns, "w", "True", "ConfigMap "+ns+"/w-warn at data.level", "loom.dev/drift: warn")
	waitEvent(t, ns, "w", "Warning", "Drifted", "data.level")
	eventually(t, 10*time.Second, "loom_drift_warned_total is 1", func(context.Context) error {
		if n := p.counter(t, "loom_drift_warned_total"); n != 1 {
			return fmt.Errorf("loom_drift_warned_total = %v", n)
		}
		return nil
	})
	driftQuietFor(t, c, "a drifted child in warn mode", true)
	cmLevel := func() string {
		u, err := e.Get(ctx, configMapGVR, ns, "w-warn")
		if err != nil {
			t.Fatal(err)
		}
		v, _, _ := unstructured.NestedString(u.Object, "data", "level")
		return v
	}
	if v := cmLevel(); v != "2" {
		t.Fatalf("data.level = %q, want the other writer's 2", v)
	}
	if n := p.counter(t, "loom_drift_reverted_total"); n != 0 {
		t.Errorf("loom_drift_reverted_total = %v, want 0", n)
	}

	// loom diff shows the drift as it is.
	out, code := loomDiff(t, "-t", filepath.Join(dir, "drift"), "-n", ns, "w")
	for _, want := range []string{`-  level: "2"`, `+  level: "1"`, "loom.dev/drift: warn: Loom leaves these changes"} {
		if !strings.Contains(out, want) {
			t.Errorf("loom diff lacks %q (exit %d):\n%s", want, code, out)
		}
	}

	// SIGKILL, and a new Loom: no write, no second Event.
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	since := c.counts()
	p = startDriftProcess(t, ns, dir, c)
	p.decided(t, 2)
	time.Sleep(driftQuiet)
	if w := loomWrites(c, since, true); len(w) > 0 {
		t.Errorf("after a SIGKILL, the new Loom wrote %v, want nothing", w)
	}
	if n := eventCount(t, ns, "w", "Drifted"); n != 1 {
		t.Errorf("%d Drifted Events after the restart, want 1", n)
	}
	if n := p.counter(t, "loom_drift_warned_total"); n != 0 {
		t.Errorf("the new Loom's loom_drift_warned_total = %v, want 0", n)
	}
	if v := cmLevel(); v != "2" {
		t.Fatalf("after the restart data.level = %q, want the other writer's 2", v)
	}

	// The other writer undoes its change: the drift is gone.
	since = c.counts()
	if err := update(ctx, e, configMapGVR, ns, "w-warn", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "1", "data", "level")
	}); err != nil {
		t.Fatal(err)
	}
	waitDrifted(t, ns, "w", "False")
	waitEvent(t, ns, "w", "Normal", "DriftResolved")
	driftQuietFor(t, c, "after the drift was undone", true)
	if n := c.counts().sub(since).verb("APPLY", "configmaps"); n != 1 {
		t.Errorf("%v applies of the ConfigMap after the drift was undone, want 1 (Loom's entry takes the field back)", n)
	}
	if v := cmLevel(); v != "1" {
		t.Errorf("data.level = %q, want 1", v)
	}

	// Through the parent's deletion: a warn child is Loom's child as any
	// other, and goes with its parent.
	if err := e.Dyn.Resource(myresGVR).Namespace(ns).Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, myresGVR, ns, "w", "the parent is deleted")
	waitGone(t, configMapGVR, ns, "w-warn", "a warn child goes with its parent")
}

// A Deployment whose spec.replicas loom.yaml's drift.ignore leaves to
// another writer (an HPA, kubectl scale): Loom created it with 1 replica,
// another writer sets 2, and Loom writes nothing; a spec change of another
// field (a label) is applied without touching replicas; a SIGKILL and a
// restart write nothing; loom diff shows no change. On the old code the
// replicas were taken back to 1 at once.
func TestDriftIgnoreLeavesAFieldToAnotherWriter(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	ctx := context.Background()
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "drift"), driftModesSet)
	c := newAPICounter(t, e, t.TempDir(), "loom")
	p := startDriftProcess(t, ns, dir, c)
	createParent(t, ns, `{apiVersion: example.loom.dev/v1alpha1, kind: MyResource, metadata: {name: i}, spec: {image: nginx:1.27}}`)
	waitCondition(t, ns, "i", "Ready", "True")
	dep := func() *unstructured.Unstructured {
		u, err := e.Get(ctx, deployGVR, ns, "i")
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	if ann := dep().GetAnnotations()["loom.dev/drift-ignore"]; ann != "spec.replicas" {
		t.Errorf("the Deployment's loom.dev/drift-ignore = %q, want loom.yaml's spec.replicas", ann)
	}
	wantReplicas := func(when string, want int64) {
		t.Helper()
		if n, _, _ := unstructured.NestedInt64(dep().Object, "spec", "replicas"); n != want {
			t.Errorf("%s: spec.replicas = %d, want %d", when, n, want)
		}
	}

	if err := update(ctx, e, deployGVR, ns, "i", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "replicas")
	}); err != nil {
		t.Fatal(err)
	}
	// The parent's status follows the Deployment as it scales: only the
	// children's writes are counted.
	driftQuietFor(t, c, "replicas set by another writer", false)
	wantReplicas("after the other writer", 2)

	since := c.counts()
	patchSpec(t, ns, "i", `{"spec":{"port":9090}}`)
	eventually(t, 30*time.Second, "the spec change lands", func(context.Context) error {
		if l := dep().GetLabels()["port"]; l != "9090" {
			return fmt.Errorf("label port = %q", l)
		}
		return nil
	})
	driftQuietFor(t, c, "after the spec change", false)
	if n := c.counts().sub(since).verb("APPLY", "deployments"); n != 1 {
		t.Errorf("%v applies of the Deployment for the spec change, want 1", n)
	}
	wantReplicas("after the spec change", 2)
	eventually(t, 60*time.Second, "the Deployment's 2 replicas are ready", func(context.Context) error {
		if n, _, _ := unstructured.NestedInt64(dep().Object, "status", "readyReplicas"); n != 2 {
			return fmt.Errorf("%d ready", n)
		}
		return nil
	})
	waitCondition(t, ns, "i", "Ready", "True")
	start := c.counts()
	quiesce(t, 3*time.Second, func() float64 {
		var n float64
		for k, v := range c.counts().sub(start) {
			switch k.verb {
			case "POST", "PUT", "PATCH", "APPLY", "DELETE":
				n += v
			}
		}
		return n
	})

	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	since = c.counts()
	p = startDriftProcess(t, ns, dir, c)
	p.decided(t, 2)
	time.Sleep(driftQuiet)
	if w := loomWrites(c, since, true); len(w) > 0 {
		t.Errorf("after a SIGKILL, the new Loom wrote %v, want nothing", w)
	}
	wantReplicas("after the restart", 2)

	out, code := loomDiff(t, "-t", filepath.Join(dir, "drift"), "-n", ns, "i")
	if code != 0 || !strings.Contains(out, "0 to create, 0 to change, 2 unchanged") {
		t.Errorf("loom diff of an ignored field another writer set: exit %d, want 0 and no change:\n%s", code, out)
	}

	// Through the parent's deletion: a child with an ignored field is
	// Loom's child as any other, and goes with its parent.
	if err := e.Dyn.Resource(myresGVR).Namespace(ns).Delete(ctx, "i", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, myresGVR, ns, "i", "the parent is deleted")
	waitGone(t, deployGVR, ns, "i", "a child with an ignored field goes with its parent")
}
