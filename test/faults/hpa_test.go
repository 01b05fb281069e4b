//go:build e2e

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// hpaWindow is how long each HPA case watches Loom: four of the HPA
// controller's 15 s sync periods.
const hpaWindow = 60 * time.Second

// An HPA that owns a Deployment's replicas (its minReplicas is the
// parent's spec.replicas, 3; kube-controller-manager's HPA controller
// enforces minReplicas with no metrics server). With a template that
// leaves replicas out, there is no fight: while the HPA scales the
// Deployment back up after a user scales it down, Loom writes nothing to
// its children for a minute, and never owns spec.replicas. With a template
// that sets replicas, the fight is visible: a stream of DriftReverted
// Events naming spec.replicas, paced by the HPA's sync period, not a hot
// loop.
func TestHPAOwnsReplicas(t *testing.T) {
	t.Run("template leaves replicas out", func(t *testing.T) {
		t.Parallel()
		testHPANoFight(t)
	})
	t.Run("template sets replicas", func(t *testing.T) {
		t.Parallel()
		testHPAFightIsVisible(t)
	})
}

func testHPANoFight(t *testing.T) {
	e := env.From(t)
	ns := e.NewNamespace(t)
	tracker := trackChildren(t, ns, deployGVR, hpaGVR)
	l := startLoom(t, filepath.Join("testdata", "hpa"), ns)
	createHPAParent(t, ns)
	waitReplicas(t, ns, "web", 3) // the HPA scaled the Deployment from the default 1
	waitParentReady(t, ns, "web")
	quiesceLoom(t, l)
	before := loomChildWrites(t, l)
	statusBefore := l.counter(t, "loom_status_writes_total", nil)

	start := time.Now()
	scales := 0
	for time.Since(start) < hpaWindow-20*time.Second {
		scaleDeployment(t, ns, "web", 1) // a user scales down; the HPA scales back up
		scales++
		waitReplicas(t, ns, "web", 3)
	}
	time.Sleep(hpaWindow - time.Since(start)) // the rest of the window: Loom must stay silent through it
	if writes := loomChildWrites(t, l) - before; writes != 0 {
		t.Errorf("Loom wrote its children %v times in %s while the HPA scaled (its log: %s)", writes, hpaWindow, l.Tail(20))
	}
	if n := l.counter(t, "loom_drift_reverted_total", nil); n != 0 {
		t.Errorf("Loom reverted %v changes; the HPA's replicas are not Loom's", n)
	}
	if owned := loomOwns(t, ns, "web", "f:spec", "f:replicas"); owned {
		t.Errorf("Loom's managedFields entry on Deployment web owns spec.replicas")
	}
	tracker.check(t)
	waitParentReady(t, ns, "web")
	// The parent's status follows the Deployment through each scale
	// (Ready, then Progressing with "Replicas: 1/3", "2/3", then Ready):
	// a few writes per scale, not a loop.
	statuses := l.counter(t, "loom_status_writes_total", nil) - statusBefore
	t.Logf("the HPA scaled web back up %d times in %s; Loom wrote no child, and %v statuses", scales, hpaWindow, statuses)
	if statuses > float64(10*scales) {
		t.Errorf("Loom wrote web's status %v times for %d scales: a loop, not readiness following the scale", statuses, scales)
	}
}

func testHPAFightIsVisible(t *testing.T) {
	e := env.From(t)
	dir := t.TempDir()
	if err := testutil.CopyDir(filepath.Join("testdata", "hpa"), dir); err != nil {
		t.Fatal(err)
	}
	testutil.EditFile(t, filepath.Join(dir, "myresource", "deployment.yaml"),
		"  # No replicas: the HorizontalPodAutoscaler in hpa.yaml owns them.\n", "  replicas: 1\n")
	ns := e.NewNamespace(t)
	tracker := trackChildren(t, ns, deployGVR, hpaGVR)
	l := startLoom(t, dir, ns)
	createHPAParent(t, ns)
	start := time.Now()
	testutil.Poll(t, time.Second, hpaWindow+15*time.Second, "a stream of DriftReverted Events naming spec.replicas", func(ctx context.Context) error {
		if n := driftEvents(ctx, t, ns, "web"); n < 3 {
			return fmt.Errorf("%d so far", n)
		}
		return nil
	})
	if !loomOwns(t, ns, "web", "f:spec", "f:replicas") {
		t.Errorf("Loom's managedFields entry on Deployment web does not own spec.replicas, which its template sets")
	}
	tracker.check(t)
	reverts := l.counter(t, "loom_drift_reverted_total", nil)
	applies := l.counter(t, "loom_child_changes_total", map[string]string{"action": "configured"})
	t.Logf("in %s: %v DriftReverted (loom_drift_reverted_total), %v child applies", time.Since(start).Round(time.Second), reverts, applies)
	if reverts < 3 {
		t.Errorf("loom_drift_reverted_total = %v, want the 3 Events counted", reverts)
	}
	// A fight paced by the HPA (15 s), not a hot loop: at most one
	// revert per HPA sync, and a few spare.
	if limit := float64(time.Since(start)/(15*time.Second)) + 3; applies > limit {
		t.Errorf("Loom applied children %v times in %s: a hot loop, not a fight paced by the HPA (limit %v)", applies, time.Since(start).Round(time.Second), limit)
	}
}

// createHPAParent creates MyResource web with spec.replicas 3 (the HPA's
// minReplicas).
func createHPAParent(t *testing.T, ns string) {
	t.Helper()
	e := env.From(t)
	p := parentObject(0)
	p.SetName("web")
	unstructured.RemoveNestedField(p.Object, "spec", "config")
	_ = unstructured.SetNestedField(p.Object, int64(3), "spec", "replicas")
	if _, err := e.Dyn.Resource(myresGVR).Namespace(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitReplicas waits until Deployment name's spec.replicas is want.
func waitReplicas(t *testing.T, ns, name string, want int32) {
	t.Helper()
	e := env.From(t)
	testutil.Eventually(t, 45*time.Second, fmt.Sprintf("Deployment %s scaled to %d", name, want), func(ctx context.Context) error {
		s, err := e.Kube.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Spec.Replicas != want {
			return fmt.Errorf("replicas %d", s.Spec.Replicas)
		}
		return nil
	})
}

// scaleDeployment sets replicas through the scale subresource, as
// kubectl scale does.
func scaleDeployment(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	e := env.From(t)
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if _, err := e.Kube.AppsV1().Deployments(ns).UpdateScale(context.Background(), name, s, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scale %s to %d: %v", name, replicas, err)
	}
}

func waitParentReady(t *testing.T, ns, name string) {
	t.Helper()
	e := env.From(t)
	testutil.Eventually(t, time.Minute, name+" Ready", func(ctx context.Context) error {
		p, err := e.Dyn.Resource(myresGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ok, why := readyAndCurrent(p); !ok {
			return fmt.Errorf("%s", why)
		}
		return nil
	})
}

// loomChildWrites is what Loom did to children: created, configured,
// pruned, or tried and failed.
func loomChildWrites(t *testing.T, l *loomProc) float64 {
	t.Helper()
	var n float64
	for _, action := range []string{"created", "configured", "pruned", "failed"} {
		n += l.counter(t, "loom_child_changes_total", map[string]string{"action": action})
	}
	return n
}

// quiesceLoom waits until Loom's reconciles and status writes have not
// moved for 5 s.
func quiesceLoom(t *testing.T, l *loomProc) {
	t.Helper()
	read := func() string {
		return fmt.Sprint(l.reconciles(t), l.counter(t, "loom_status_writes_total", nil), loomChildWrites(t, l))
	}
	last, since := read(), time.Now()
	testutil.Poll(t, time.Second, time.Minute, "Loom goes quiet", func(context.Context) error {
		if cur := read(); cur != last {
			last, since = cur, time.Now()
		}
		if time.Since(since) < 5*time.Second {
			return fmt.Errorf("quiet for %s", time.Since(since).Round(time.Second))
		}
		return nil
	})
}

// loomOwns reports whether Loom's managedFields entry on Deployment name
// holds the field at path (fieldsV1 keys, e.g. "f:spec", "f:replicas").
func loomOwns(t *testing.T, ns, name string, path ...string) bool {
	t.Helper()
	e := env.From(t)
	d, err := e.Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range d.ManagedFields {
		if mf.Manager != "loom" || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			t.Fatalf("Deployment %s: Loom's managedFields: %v", name, err)
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(fields, path...); found {
			return true
		}
	}
	return false
}

// driftEvents counts the DriftReverted Events on parent name that name
// spec.replicas (an aggregated Event counts as many times as it occurred).
func driftEvents(ctx context.Context, t *testing.T, ns, name string) int32 {
	t.Helper()
	e := env.From(t)
	evs, err := e.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return 0
	}
	var n int32
	for _, e := range evs.Items {
		if e.Reason == "DriftReverted" && strings.Contains(e.Message, "spec.replicas") {
			n += max(e.Count, 1)
		}
	}
	return n
}
