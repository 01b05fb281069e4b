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
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// After convergence, a full resync of 100 parents sends no write request:
// every child matches, and so does every status.
func TestSteadyStateIsSilent(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	const parents = 100
	ns := e.NewNamespace(t)
	l := startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{resync: 4 * time.Second})
	for i := range parents {
		createParent(t, ns, fmt.Sprintf(`
apiVersion: example.loom.dev/v1alpha1
kind: MyResource
metadata:
  name: app-%d
spec:
  image: nginx:1.27
  replicas: 1
  config:
    INDEX: "%d"
`, i, i))
	}
	eventually(t, 120*time.Second, "every parent is Ready", func(ctx context.Context) error {
		list, err := e.Dyn.Resource(myresGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for i := range list.Items {
			if st, _, _ := condition(&list.Items[i], "Ready"); st == "True" {
				ready++
			}
		}
		if ready != parents {
			return fmt.Errorf("%d of %d Ready", ready, parents)
		}
		return nil
	})
	// Let in-flight reconciles (from the last child status changes) finish:
	// resyncs keep reconciling, so wait for the writes to stop.
	quiesce(t, 2*time.Second, func() float64 { n, _ := l.writes.snapshot(); return float64(n) })
	l.writes.reset()
	before := l.counter(t, "loom_reconcile_total", nil)
	// Two full resyncs: every parent reconciled twice (how long that takes
	// depends on the machine's load and the race detector, not on Loom).
	eventually(t, 90*time.Second, "two full resyncs", func(context.Context) error {
		if n := l.counter(t, "loom_reconcile_total", nil) - before; n < 2*parents {
			return fmt.Errorf("%v reconciles, want %d (did the resync run?)", n, 2*parents)
		}
		return nil
	})
	reconciles := l.counter(t, "loom_reconcile_total", nil) - before
	writes, log := l.writes.snapshot()
	if writes != 0 {
		t.Fatalf("steady state sent %d write requests over %v reconciles; first ones: %s", writes, reconciles, strings.Join(log, "\n"))
	}
	t.Logf("%v reconciles of %d parents, 0 writes", reconciles, parents)
}

// Editing a template set mounted the way a ConfigMap volume mounts it (files
// are symlinks into ..data, which is swapped atomically to a new folder)
// takes effect without a restart.
func TestHotReloadThroughConfigMapSymlinkSwap(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	root := t.TempDir()
	set := filepath.Join(root, "myresource")
	src := filepath.Join(e.Root, "templates", "myresource")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() {
			files = append(files, e.Name())
		}
	}
	version := func(name string, edit func(string) string) {
		dir := filepath.Join(set, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), []byte(edit(f + "\x00" + string(b))[len(f)+1:]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// Swap ..data atomically, as the kubelet does.
		tmp := filepath.Join(set, "..data_tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(set, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(set, 0o755); err != nil {
		t.Fatal(err)
	}
	version("..v1", func(s string) string { return s })
	for _, f := range files {
		if err := os.Symlink(filepath.Join("..data", f), filepath.Join(set, f)); err != nil {
			t.Fatal(err)
		}
	}
	startLoom(t, root, ns, loomOptions{})
	createParentFixture(t, ns, "full")
	waitReplicas(t, ns, "web", 2)
	version("..v2", func(s string) string {
		if strings.HasPrefix(s, "service.yaml\x00") {
			return strings.Replace(s, "port: {{", "port: {{ add 100 ", 1)
		}
		return s
	})
	eventually(t, 30*time.Second, "the Service follows the swapped templates", func(ctx context.Context) error {
		svc, err := e.Get(ctx, serviceGVR, ns, "web")
		if err != nil {
			return err
		}
		ports := svc.Object["spec"].(map[string]any)["ports"].([]any)
		if got := ports[0].(map[string]any)["port"]; got != int64(8180) {
			return fmt.Errorf("port = %v", got)
		}
		return nil
	})
}

// SIGTERM makes `loom run` drain and exit cleanly.
func TestSIGTERMExitsCleanly(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	addr := freeAddr(t)
	p := startLoomProcess(t, ns, "--metrics-bind-address", addr)
	createParentFixture(t, ns, "full")
	waitReplicas(t, ns, "web", 2)
	// The metrics and health endpoints serve.
	for path, want := range map[string]string{
		"/metrics": `loom_child_changes_total{action="created",kind="MyResource"} 3`,
		"/healthz": "ok",
		"/readyz":  "ok",
	} {
		eventually(t, 10*time.Second, "GET "+path, func(ctx context.Context) error {
			body, err := httpGet(ctx, "http://"+addr+path)
			if err != nil {
				return err
			}
			if !strings.Contains(body, want) {
				return fmt.Errorf("%s lacks %q", path, want)
			}
			return nil
		})
	}
	p.stop(t, 20*time.Second)
	if !strings.Contains(p.Output(), "Shut down") {
		t.Fatalf("loom did not log a clean shutdown:\n%s", p.Output())
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
var freeAddr = testutil.FreeAddr

// httpGet returns the body of a GET, or an error unless the status is 200.
var httpGet = testutil.HTTPGet

// Deployments that are not Loom's children trigger nothing: one without
// Loom's labels is not even in its cache, and one with them but no
// controller ownerReference is dropped when its events arrive.
func TestUnrelatedDeploymentTriggersNothing(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	l := startLoom(t, filepath.Join(e.Root, "templates"), ns, loomOptions{})
	createParentFixture(t, ns, "full")
	waitCondition(t, ns, "web", "Ready", "True")
	reconciles := func() float64 { return l.counter(t, "loom_reconcile_total", nil) }
	quiesce(t, 2*time.Second, reconciles)
	before := reconciles()
	l.writes.reset()

	for _, labels := range []string{`{app: other}`, `{app: other, app.kubernetes.io/managed-by: loom}`} {
		name := "other"
		if strings.Contains(labels, "managed-by") {
			name = "other-labeled"
		}
		createObject(t, deployGVR, ns, fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, labels: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec: {containers: [{name: c, image: nginx}]}
`, name, labels, name, name))
		waitReplicas(t, ns, name, 1)
		if _, err := e.Dyn.Resource(deployGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType,
			[]byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "the unrelated Deployments roll out", func(ctx context.Context) error {
		for _, name := range []string{"other", "other-labeled"} {
			d, err := e.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Status.AvailableReplicas != 2 {
				return fmt.Errorf("%s: %d available", name, d.Status.AvailableReplicas)
			}
		}
		return nil
	})
	time.Sleep(2 * time.Second) // any event they caused has reached Loom
	if n, writes := reconciles()-before, l.writes.total.Load(); n != 0 || writes != 0 {
		t.Fatalf("unrelated Deployments caused %v reconciles and %d writes", n, writes)
	}
}
