//go:build e2e

package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// restartParents is how many parents TestRestartWritesNoChildThatIsRight
// converges before it restarts Loom: 90 children of three kinds.
const restartParents = 30

// childApply is a server-side apply of one of Loom's children.
func childApply(k writeKey) bool { return k.verb == "APPLY" && childResources[k.resource] }

// A restarted Loom sends no write for children that are already right:
// after a SIGTERM and after a SIGKILL, a fresh `loom run` over converged
// parents decides every child and applies none, counted by the API server
// (apiserver_request_total, verb APPLY, by the children's resources). A
// field another writer changed while Loom was down is repaired after the
// restart, and nothing else is written. On the old code each restart
// applied every child once (90 applies for 30 parents), and the drift
// restart 90 as well.
func TestRestartWritesNoChildThatIsRight(t *testing.T) {
	e := env.From(t)
	templates := filepath.Join(e.Root, "templates")
	r := newRun(t, templates)
	r.create(restartParents, nil)
	r.finish(expect{timeout: convergeTimeout, perParent: 10, kinds: fullChildren})
	children := float64(restartParents * len(fullChildren))

	// restart stops Loom with stop, runs edit (if any) while no Loom
	// runs, starts a fresh one, and waits until it has decided every
	// child and gone quiet. It returns the API server's child applies
	// since the stop.
	restart := func(how string, stop func() error, edit func()) writes {
		t.Helper()
		before := r.meter.snapshot(t)
		if err := stop(); err != nil {
			t.Fatalf("%s loom: %v", how, err)
		}
		if edit != nil {
			edit()
		}
		r.loom = startLoom(t, templates, r.ns)
		testutil.Eventually(t, 2*time.Minute, "the new Loom decides every child", func(context.Context) error {
			if n := r.loom.counter(t, "loom_child_changes_total", nil); n < children {
				return fmt.Errorf("%.0f of %.0f children decided", n, children)
			}
			return nil
		})
		r.quiesce()
		w := r.meter.snapshot(t).sub(before)
		rss, hwm, _ := r.loom.Memory()
		t.Logf("after a %s and a fresh Loom: %.0f child applies (%s); Loom's writes: %s; its children: %.0f unchanged, %.0f configured; its RSS %.1f MiB (peak %.1f MiB)",
			how, w.sum(childApply), w.top(5, childApply), w.top(8, loomWrite),
			r.loom.counter(t, "loom_child_changes_total", map[string]string{"action": "unchanged"}),
			r.loom.counter(t, "loom_child_changes_total", map[string]string{"action": "configured"}),
			float64(rss)/(1<<20), float64(hwm)/(1<<20))
		return w
	}

	sigterm := func() error { return r.loom.Terminate(30 * time.Second) }
	if w := restart("SIGTERM", sigterm, nil); w.sum(childApply) != 0 {
		t.Errorf("after a SIGTERM, the fresh Loom applied %.0f children that were right, want 0: %s", w.sum(childApply), w.top(5, childApply))
	}
	if w := restart("SIGKILL", r.loom.Kill, nil); w.sum(childApply) != 0 {
		t.Errorf("after a SIGKILL, the fresh Loom applied %.0f children that were right, want 0: %s", w.sum(childApply), w.top(5, childApply))
	}

	// A drift while Loom is down: another writer changes a field Loom
	// owns in one ConfigMap.
	drifted := parentName(7) + "-config"
	drift := func() {
		_, err := e.Dyn.Resource(configMapGVR).Namespace(r.ns).Patch(context.Background(), drifted, types.MergePatchType,
			[]byte(`{"data":{"INDEX":"drifted"}}`), metav1.PatchOptions{FieldManager: "intruder"})
		if err != nil {
			t.Fatalf("change %s while Loom is down: %v", drifted, err)
		}
	}
	w := restart("SIGTERM with a drift while down", sigterm, drift)
	configMapApply := func(k writeKey) bool { return childApply(k) && k.resource == "configmaps" }
	if w.sum(childApply) != 1 || w.sum(configMapApply) != 1 {
		t.Errorf("after a drift of one ConfigMap while Loom was down, the fresh Loom's child applies: %.0f (%s), want exactly one, of configmaps",
			w.sum(childApply), w.top(5, childApply))
	}
	cm, err := e.Get(context.Background(), configMapGVR, r.ns, drifted)
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "INDEX"); v != "7" {
		t.Errorf("%s data.INDEX = %q after the restart, want %q (repaired)", drifted, v, "7")
	}
	r.tracker.check(t)
}
