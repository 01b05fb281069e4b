//go:build e2e

package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// Loom killed with SIGKILL mid-converge of 300 parents (no drain, some
// reconciles cut half way), and, while it is down, service.yaml removed
// from its set and 60 parents' specs changed. The next Loom converges
// every parent, with the new specs, and prunes the Services the first one
// had applied: it finds their kind in the parents' status.children, since
// no template renders it any more.
func TestLoomKilledAndTemplateRemovedWhileDown(t *testing.T) {
	e := env.From(t)
	const parents = 300
	dir := t.TempDir()
	if err := testutil.CopyDir(filepath.Join(e.Root, "templates"), dir); err != nil {
		t.Fatal(err)
	}
	r := newRun(t, dir)
	r.create(parents, nil)
	waitMidConverge(t, r.ns, parents, parents/3)
	if err := r.loom.Kill(); err != nil {
		t.Fatalf("SIGKILL loom: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "myresource", "service.yaml")); err != nil {
		t.Fatal(err)
	}
	r.bumpReplicas(parents / 5)
	services, err := e.Dyn.Resource(serviceGVR).Namespace(r.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=loom"})
	if err != nil {
		t.Fatal(err)
	}
	if len(services.Items) == 0 {
		t.Fatal("no Service was applied before the kill: nothing for the next Loom to prune")
	}
	t.Logf("killed loom with %d Services applied; service.yaml removed", len(services.Items))

	r.loom = startLoom(t, dir, r.ns)
	r.finish(expect{timeout: convergeTimeout, perParent: 10,
		kinds: []childKind{configMapChild, deploymentChild}, gone: []childKind{serviceChild}, mayGo: []string{"services"}})
}
