//go:build e2e

package e2e

// Children to keep (loom.dev/delete-policy: orphan) outlive their parent
// and their template, released from Loom; other children are deleted as
// before, and a parent without children to keep gets no finalizer.

import (
	"context"
	"fmt"
	"github.com/loom-operator/loom/engine/rbac"
	"github.com/loom-operator/loom/test/env"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// orphanSet writes a set for MyResource whose files render one ConfigMap
// each, named <parent>-<file>; the files named in kept carry the orphan
// policy, and those named in ifConfig render only while spec.config is set.
func orphanSet(t *testing.T, files []string, kept, ifConfig map[string]bool) string {
	t.Helper()
	dir := t.TempDir()
	set := map[string]string{"loom.yaml": env.Fixture(t, "sets/myresource/loom.yaml")}
	for _, f := range files {
		doc := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-" + f + "\n"
		if kept[f] {
			doc += "  annotations:\n    loom.dev/delete-policy: orphan\n"
		}
		doc += "data:\n  image: {{ .Spec.image | quote }}\n"
		if ifConfig[f] {
			doc = "{{- if .Spec.config }}\n" + doc + "{{- end }}\n"
		}
		set[f+".yaml"] = doc
	}
	writeFiles(t, filepath.Join(dir, "myresource"), set)
	return dir
}

// releasedCM waits until the ConfigMap ns/name exists released: no
// ownerReference, none of Loom's labels or applied hash, no managedFields
// entry of Loom's, its data as Loom applied it.
func releasedCM(t *testing.T, ns, name, image string) {
	t.Helper()
	e := env.From(t)
	eventually(t, 30*time.Second, name+" is released", func(ctx context.Context) error {
		cm, err := e.Get(ctx, configMapGVR, ns, name)
		if err != nil {
			return err
		}
		if refs := cm.GetOwnerReferences(); len(refs) > 0 {
			return fmt.Errorf("ownerReferences %v", refs)
		}
		for k := range cm.GetLabels() {
			if strings.HasPrefix(k, "applyset.kubernetes.io/") || k == "app.kubernetes.io/managed-by" {
				return fmt.Errorf("label %s is still there", k)
			}
		}
		if _, ok := cm.GetAnnotations()["loom.dev/applied"]; ok {
			return fmt.Errorf("loom.dev/applied is still there")
		}
		for _, mf := range cm.GetManagedFields() {
			if mf.Manager == "loom" {
				return fmt.Errorf("managedFields still has loom's entry (%s)", mf.Operation)
			}
		}
		if got, _, _ := unstructured.NestedString(cm.Object, "data", "image"); got != image {
			return fmt.Errorf("data.image = %q, want %q", got, image)
		}
		return nil
	})
}

// goneCM waits until the ConfigMap ns/name is deleted.
func goneCM(t *testing.T, ns, name, why string) {
	t.Helper()
	waitGone(t, configMapGVR, ns, name, why)
}

// finalizers reads a MyResource's finalizers.
func finalizers(t *testing.T, ns, name string) []string {
	t.Helper()
	e := env.From(t)
	p, err := e.Get(context.Background(), myresGVR, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return p.GetFinalizers()
}

// waitFinalizer waits until a MyResource has (or has not) loom.dev/orphan.
func waitFinalizer(t *testing.T, ns, name string, want bool) {
	t.Helper()
	e := env.From(t)
	eventually(t, 30*time.Second, fmt.Sprintf("%s has loom.dev/orphan: %v", name, want), func(ctx context.Context) error {
		p, err := e.Get(ctx, myresGVR, ns, name)
		if err != nil {
			return err
		}
		if got := slices.Contains(p.GetFinalizers(), "loom.dev/orphan"); got != want {
			return fmt.Errorf("finalizers %v", p.GetFinalizers())
		}
		return nil
	})
}

// deleteParent deletes a MyResource as kubectl delete does (in the
// background, or with policy) and waits until it is gone.
func deleteParent(t *testing.T, ns, name string, policy ...metav1.DeletionPropagation) {
	t.Helper()
	e := env.From(t)
	opts := metav1.DeleteOptions{}
	if len(policy) > 0 {
		opts.PropagationPolicy = &policy[0]
	}
	if err := e.Dyn.Resource(myresGVR).Namespace(ns).Delete(context.Background(), name, opts); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, name+" is gone", func(ctx context.Context) error {
		if _, err := e.Get(ctx, myresGVR, ns, name); !isNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}

// stripFinalizers removes every finalizer from the MyResources left in ns
// when the test ends (before Loom stops), so that its namespace can go.
func stripFinalizers(t *testing.T, ns string) {
	e := env.From(t)
	t.Cleanup(func() {
		ctx := context.Background()
		list, err := e.Dyn.Resource(myresGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, p := range list.Items {
			_, _ = e.Dyn.Resource(myresGVR).Namespace(ns).Patch(ctx, p.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})
}

// stop stops a Loom and waits until its Run has returned.
func (l *loom) stop(t *testing.T) {
	t.Helper()
	l.cancel()
	select {
	case err := <-l.done:
		l.done <- err // for the cleanup, which waits for it
	case <-time.After(30 * time.Second):
		t.Fatal("Loom did not stop within 30s")
	}
}

// grantGeneratedRBAC grants user what `loom rbac -t dir` prints: the
// ClusterRole of the sets in dir.
func grantGeneratedRBAC(t *testing.T, user, dir string) {
	t.Helper()
	grant(t, user, user, policyFor(t, dir, rbac.Options{}).Cluster...)
}

// A child to keep survives its parent's deletion, released before the
// garbage collector runs, while its sibling is deleted by the collector;
// Loom runs with exactly the ClusterRole `loom rbac` generates for the set
// (which reads Namespaces, for the kept child's second owner).
func TestOrphanPolicyOnParentDelete(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	user := "loom-orphan-" + ns
	dir := orphanSet(t, []string{"keep", "plain"}, map[string]bool{"keep": true}, nil)
	grantGeneratedRBAC(t, user, dir)
	startLoom(t, dir, ns, loomOptions{impersonate: user})
	stripFinalizers(t, ns)
	parent := createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "hello", "Ready", "True")
	waitFinalizer(t, ns, "hello", true)
	for _, name := range []string{"hello-keep", "hello-plain"} {
		cm, err := e.Get(context.Background(), configMapGVR, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := ownedBy(cm, parent); err != nil { // a child to keep is Loom's while it renders
			t.Fatalf("%s: %v", name, err)
		}
	}

	deleteParent(t, ns, "hello")
	goneCM(t, ns, "hello-plain", "the garbage collector follows its ownerReference")
	releasedCM(t, ns, "hello-keep", "nginx:1.27")
	waitEvent(t, ns, "hello", "Normal", "Orphaned", "ConfigMap "+ns+"/hello-keep", "before MyResource hello is deleted")
}

// A child to keep that stops rendering, its file removed or its condition
// false, is released, where a sibling is deleted; once none is left, the
// parent's finalizer goes.
func TestOrphanPolicyWhenAChildStopsRendering(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	files := []string{"keep-file", "plain-file", "keep-cond", "plain-cond"}
	dir := orphanSet(t, files, map[string]bool{"keep-file": true, "keep-cond": true}, map[string]bool{"keep-cond": true, "plain-cond": true})
	startLoom(t, dir, ns, loomOptions{})
	stripFinalizers(t, ns)
	createParentFixture(t, ns, "full")
	waitCondition(t, ns, "web", "Ready", "True")
	waitFinalizer(t, ns, "web", true)

	// loom diff previews it: the child to keep is released, not deleted.
	without := orphanSet(t, files[2:], map[string]bool{"keep-cond": true}, map[string]bool{"keep-cond": true, "plain-cond": true})
	out, code := loomDiff(t, "-t", filepath.Join(without, "myresource"), "-n", ns)
	for _, want := range []string{
		"ConfigMap " + ns + "/web-keep-file: no longer renders; kept (loom.dev/delete-policy: orphan), released from Loom",
		"-  name: web-plain-file",
		"MyResource " + ns + "/web: 0 to create, 0 to change, 2 unchanged, 1 to prune, 1 to orphan",
	} {
		if code != 1 || !strings.Contains(out, want) {
			t.Fatalf("loom diff without two files: exit %d, want 1 and %q in:\n%s", code, want, out)
		}
	}

	// A removed template.
	for _, f := range []string{"keep-file", "plain-file"} {
		if err := os.Remove(filepath.Join(dir, "myresource", f+".yaml")); err != nil {
			t.Fatal(err)
		}
	}
	goneCM(t, ns, "web-plain-file", "pruned")
	releasedCM(t, ns, "web-keep-file", "nginx:1.27")
	waitEvent(t, ns, "web", "Normal", "Orphaned", "ConfigMap "+ns+"/web-keep-file", "as it no longer renders")
	waitFinalizer(t, ns, "web", true) // keep-cond is still rendered

	// A condition that stops rendering.
	patchSpec(t, ns, "web", `{"spec":{"config":null}}`)
	goneCM(t, ns, "web-plain-cond", "pruned")
	releasedCM(t, ns, "web-keep-cond", "nginx:1.27")
	waitFinalizer(t, ns, "web", false)

	// Released is released: the parent goes without touching them.
	deleteParent(t, ns, "web")
	releasedCM(t, ns, "web-keep-file", "nginx:1.27")
	releasedCM(t, ns, "web-keep-cond", "nginx:1.27")
}

// A parent whose children are not to be kept has no finalizer, so its
// deletion does not wait for Loom: with Loom stopped it goes, and its
// children with it. A child that stops being kept (its annotation removed)
// is owned again like any other, and its parent loses the finalizer.
func TestNoFinalizerWithoutChildrenToKeep(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := orphanSet(t, []string{"data"}, map[string]bool{"data": true}, nil)
	l := startLoom(t, dir, ns, loomOptions{})
	stripFinalizers(t, ns)
	createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "hello", "Ready", "True")
	waitFinalizer(t, ns, "hello", true)

	editFile(t, filepath.Join(dir, "myresource", "data.yaml"), "  annotations:\n    loom.dev/delete-policy: orphan\n", "")
	waitFinalizer(t, ns, "hello", false)
	eventually(t, 30*time.Second, "hello-data lost the policy", func(ctx context.Context) error {
		cm, err := e.Get(ctx, configMapGVR, ns, "hello-data")
		if err != nil {
			return err
		}
		if v, ok := cm.GetAnnotations()["loom.dev/delete-policy"]; ok {
			return fmt.Errorf("loom.dev/delete-policy: %s", v)
		}
		return nil
	})
	if f := finalizers(t, ns, "hello"); len(f) != 0 {
		t.Fatalf("finalizers %v, want none", f)
	}

	l.stop(t)
	deleteParent(t, ns, "hello")
	goneCM(t, ns, "hello-data", "the garbage collector follows its ownerReference")
}

// Loom stopped while a parent with a child to keep is deleted: the parent
// waits (the garbage collector deletes nothing while it exists), and the
// child is released when Loom is back, before the parent goes.
func TestOrphanPolicyWhileLoomIsStopped(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := orphanSet(t, []string{"keep", "plain"}, map[string]bool{"keep": true}, nil)
	l := startLoom(t, dir, ns, loomOptions{})
	stripFinalizers(t, ns)
	createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "hello", "Ready", "True")
	waitFinalizer(t, ns, "hello", true)

	l.stop(t)
	if err := e.Dyn.Resource(myresGVR).Namespace(ns).Delete(context.Background(), "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The parent exists, terminating, for as long as Loom is stopped, and
	// the garbage collector deletes no child of an owner that exists. Five
	// seconds is many times what the collector takes to delete the
	// children of a deleted parent (TestNoFinalizerWithoutChildrenToKeep).
	consistently(t, 5*time.Second, "the parent waits for Loom, and its children stay", func(ctx context.Context) error {
		p, err := e.Get(ctx, myresGVR, ns, "hello")
		if err != nil {
			return err
		}
		if p.GetDeletionTimestamp() == nil {
			return fmt.Errorf("not terminating")
		}
		for _, name := range []string{"hello-keep", "hello-plain"} {
			if _, err := e.Get(ctx, configMapGVR, ns, name); err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
		}
		return nil
	})

	startLoom(t, dir, ns, loomOptions{})
	eventually(t, 60*time.Second, "hello is gone", func(ctx context.Context) error {
		if _, err := e.Get(ctx, myresGVR, ns, "hello"); !isNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	goneCM(t, ns, "hello-plain", "the garbage collector follows its ownerReference")
	releasedCM(t, ns, "hello-keep", "nginx:1.27")
}

// Foreground deletion (Argo CD's default when it prunes) makes the garbage
// collector delete the parent's dependents at once, without waiting for
// Loom's finalizer: with Loom stopped, so that it cannot win that race by
// luck, the child to keep survives because it also names its Namespace as
// an owner (the collector only drops its reference to the parent); Loom,
// back, releases it and lets the parent go.
func TestOrphanPolicyOnForegroundDelete(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := orphanSet(t, []string{"keep", "plain"}, map[string]bool{"keep": true}, nil)
	l := startLoom(t, dir, ns, loomOptions{})
	stripFinalizers(t, ns)
	createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "hello", "Ready", "True")
	waitFinalizer(t, ns, "hello", true)
	l.stop(t)

	fg := metav1.DeletePropagationForeground
	if err := e.Dyn.Resource(myresGVR).Namespace(ns).Delete(context.Background(), "hello", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	goneCM(t, ns, "hello-plain", "foreground deletion")
	if _, err := e.Get(context.Background(), configMapGVR, ns, "hello-keep"); err != nil {
		t.Fatalf("the child to keep, after the collector deleted its sibling: %v", err)
	}
	startLoom(t, dir, ns, loomOptions{})
	eventually(t, 60*time.Second, "hello is gone", func(ctx context.Context) error {
		if _, err := e.Get(ctx, myresGVR, ns, "hello"); !isNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	releasedCM(t, ns, "hello-keep", "nginx:1.27")
}

// The way out for a parent whose deletion waits for a stopped Loom (or a
// removed set): remove the finalizer by hand. The child to keep survives
// that too: the garbage collector only drops its reference to the parent
// (it keeps Loom's labels, until a parent of that name adopts it again).
func TestOrphanFinalizerRemovedByHand(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	l := startLoom(t, orphanSet(t, []string{"keep", "plain"}, map[string]bool{"keep": true}, nil), ns, loomOptions{})
	stripFinalizers(t, ns)
	createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "hello", "Ready", "True")
	waitFinalizer(t, ns, "hello", true)
	l.stop(t)

	if err := e.Dyn.Resource(myresGVR).Namespace(ns).Delete(context.Background(), "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// What docs/how-to/keep-children.md says to run.
	kubectl(t, "-n", ns, "patch", "myresource", "hello", "--type=json",
		`-p=[{"op":"test","path":"/metadata/finalizers","value":["loom.dev/orphan"]},{"op":"remove","path":"/metadata/finalizers"}]`)
	goneCM(t, ns, "hello-plain", "the garbage collector follows its ownerReference")
	eventually(t, 60*time.Second, "hello-keep lost its reference to the parent", func(ctx context.Context) error {
		cm, err := e.Get(ctx, configMapGVR, ns, "hello-keep")
		if err != nil {
			return err
		}
		for _, r := range cm.GetOwnerReferences() {
			if r.Kind == "MyResource" {
				return fmt.Errorf("ownerReferences %v", cm.GetOwnerReferences())
			}
		}
		return nil
	})
}
