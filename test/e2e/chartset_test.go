//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// chartSet is a template set written for one test, whose parent CRD Loom
// installs (loom run --install-crds): the chart tests' shared steps.
type chartSet struct {
	// root is the templates folder; the set is in a folder of its own in it.
	root string
	// gvr is the set's parent kind.
	gvr schema.GroupVersionResource
}

// newChartSet writes files as the set dir in a new templates folder, and
// deletes the CRD of the parent kind gvr when the test ends (after the
// Loom started over the set has stopped).
func newChartSet(t *testing.T, dir string, files map[string]string, gvr schema.GroupVersionResource) chartSet {
	t.Helper()
	e := env.From(t)
	t.Cleanup(func() {
		_ = e.Dyn.Resource(crdGVR).Delete(context.Background(), gvr.Resource+"."+gvr.Group, metav1.DeleteOptions{})
	})
	root := t.TempDir()
	testutil.WriteFiles(t, filepath.Join(root, dir), files)
	return chartSet{root: root, gvr: gvr}
}

// start runs an in-process Loom over the set, watching namespace ns, with
// CRD installation on, and waits until the parent kind is served.
func (s chartSet) start(t *testing.T, ns string, o loomOptions) *loom {
	t.Helper()
	o.installCRDs = true
	l := startLoom(t, s.root, ns, o)
	waitServed(t, ns, s.gvr)
	return l
}

// startProcess runs bin/loom over the set with --install-crds (and args),
// watching namespace ns, and waits until the parent kind is served.
func (s chartSet) startProcess(t *testing.T, ns string, args ...string) *loomProcess {
	t.Helper()
	p := startLoomProcess(t, ns, append(s.args(), args...)...)
	waitServed(t, ns, s.gvr)
	return p
}

// args are the arguments of loom run for the set with CRD installation.
func (s chartSet) args() []string { return []string{"--templates", s.root, "--install-crds"} }

// waitServed waits until the kind gvr is served: Loom has installed its CRD.
func waitServed(t *testing.T, ns string, gvr schema.GroupVersionResource) {
	t.Helper()
	e := env.From(t)
	eventually(t, 60*time.Second, "the "+gvr.Resource+" CRD is served", func(ctx context.Context) error {
		_, err := e.Dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		return err
	})
}
