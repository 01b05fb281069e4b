//go:build e2e

package e2e

// Cluster-scoped children of a namespaced parent (loom.yaml clusterScoped):
// applied and repaired like any child, pruned when they stop rendering,
// deleted by Loom (not the garbage collector, which cannot) when their
// parent is deleted, never taken over from another parent, and a deletion
// that waits says why.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loom-operator/loom/test/env"
)

var (
	clusterRoleGVR        = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	clusterRoleBindingGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
)

// clusterSet writes a set for MyResource that renders a ConfigMap, a
// ClusterRole named by spec.config.role (loom-e2e-<namespace>-<name> by
// default) and, unless spec.config.binding is "off", a ClusterRoleBinding
// of it to the namespace's default ServiceAccount.
func clusterSet(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	const role = `{{ $c := .Spec.config | default dict }}{{ $role := get $c "role" | default (printf "loom-e2e-%s-%s" .Namespace .Name) }}`
	writeFiles(t, filepath.Join(dir, "myresource"), map[string]string{
		"loom.yaml": `parent:
  apiVersion: example.loom.dev/v1alpha1
  kind: MyResource
clusterScoped:
  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole}
  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding}
`,
		"configmap.yaml": env.Fixture(t, "sets/myresource/configmap.yaml"),
		"clusterrole.yaml": role + `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $role }}
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get]
`,
		"binding.yaml": role + `
{{- if ne (get $c "binding") "off" }}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $role }}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {{ $role }}}
subjects:
  - {kind: ServiceAccount, name: default, namespace: {{ .Namespace }}}
{{- end }}
`,
	})
	return dir
}

// deleteClusterObjects deletes the cluster-scoped objects named when the
// test ends, whatever it left.
func deleteClusterObjects(t *testing.T, names ...string) {
	e := env.From(t)
	t.Cleanup(func() {
		for _, gvr := range []schema.GroupVersionResource{clusterRoleGVR, clusterRoleBindingGVR} {
			for _, n := range names {
				_, _ = e.Dyn.Resource(gvr).Patch(context.Background(), n, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				_ = e.Dyn.Resource(gvr).Delete(context.Background(), n, metav1.DeleteOptions{})
			}
		}
	})
}

// clusterChildOf checks the marks of a cluster-scoped child of parent: no
// ownerReference, loom.dev/owner naming the parent (with its UID), and
// Loom's labels.
func clusterChildOf(obj, parent *unstructured.Unstructured) error {
	if refs := obj.GetOwnerReferences(); len(refs) != 0 {
		return fmt.Errorf("ownerReferences %v, want none", refs)
	}
	want := fmt.Sprintf("example.loom.dev/v1alpha1/MyResource/%s/%s/%s", parent.GetNamespace(), parent.GetName(), parent.GetUID())
	if got := obj.GetAnnotations()["loom.dev/owner"]; got != want {
		return fmt.Errorf("loom.dev/owner = %q, want %q", got, want)
	}
	if obj.GetLabels()["app.kubernetes.io/managed-by"] != "loom" || obj.GetLabels()["applyset.kubernetes.io/part-of"] == "" {
		return fmt.Errorf("labels %v, want Loom's", obj.GetLabels())
	}
	return nil
}

// waitGone waits until the object is deleted.
func waitGone(t *testing.T, gvr schema.GroupVersionResource, ns, name, why string) {
	t.Helper()
	e := env.From(t)
	eventually(t, 60*time.Second, gvr.Resource+" "+name+" is deleted ("+why+")", func(ctx context.Context) error {
		if _, err := e.Get(ctx, gvr, ns, name); !isNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}

// A namespaced parent's ClusterRole and ClusterRoleBinding are applied
// after the parent carries the cluster-children finalizer, repaired when
// changed, pruned when they stop rendering, and deleted with the parent,
// by Loom.
func TestClusterScopedChildren(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	name := "loom-e2e-" + ns + "-web"
	deleteClusterObjects(t, name)
	l := startLoom(t, clusterSet(t), ns, loomOptions{})
	stripFinalizers(t, ns)
	parent := createParentFixture(t, ns, "full")
	waitCondition(t, ns, "web", "Ready", "True")

	p, err := e.Get(context.Background(), myresGVR, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.GetFinalizers(), "loom.dev/cluster-children") {
		t.Errorf("finalizers %v, want loom.dev/cluster-children", p.GetFinalizers())
	}
	if got, want := p.GetAnnotations()["loom.dev/cluster-kinds"], "ClusterRole.rbac.authorization.k8s.io,ClusterRoleBinding.rbac.authorization.k8s.io"; got != want {
		t.Errorf("loom.dev/cluster-kinds = %q, want %q", got, want)
	}
	for _, gvr := range []schema.GroupVersionResource{clusterRoleGVR, clusterRoleBindingGVR} {
		obj, err := e.Get(context.Background(), gvr, "", name)
		if err != nil {
			t.Fatal(err)
		}
		if err := clusterChildOf(obj, parent); err != nil {
			t.Errorf("%s %s: %v", gvr.Resource, name, err)
		}
	}
	if !strings.Contains(statusChildren(t, p), "ClusterRole "+name) {
		t.Errorf("status.children does not list the ClusterRole: %s", statusChildren(t, p))
	}

	// Drift: another writer changes the rules; Loom takes them back.
	patchObject(t, clusterRoleGVR, "", name, `{"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get","list"]}]}`)
	eventually(t, 30*time.Second, "the ClusterRole's rules are repaired", func(ctx context.Context) error {
		cr, err := e.Get(ctx, clusterRoleGVR, "", name)
		if err != nil {
			return err
		}
		rules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
		if got := fmt.Sprint(rules); got != "[map[apiGroups:[] resources:[configmaps] verbs:[get]]]" {
			return fmt.Errorf("rules %s", got)
		}
		return nil
	})
	waitEvent(t, ns, "web", "Warning", "DriftReverted", "ClusterRole.rbac.authorization.k8s.io "+name, "at rules")

	// loom diff previews a prune of a cluster-scoped child.
	without := clusterSet(t)
	if err := os.Remove(filepath.Join(without, "myresource", "binding.yaml")); err != nil {
		t.Fatal(err)
	}
	out, code := loomDiff(t, "-t", filepath.Join(without, "myresource"), "-n", ns)
	if want := "MyResource " + ns + "/web: 0 to create, 0 to change, 2 unchanged, 1 to prune"; code != 1 || !strings.Contains(out, want) {
		t.Errorf("loom diff without binding.yaml: exit %d, want 1 and %q in:\n%s", code, want, out)
	}

	// Prune: the binding stops rendering.
	patchSpec(t, ns, "web", `{"spec":{"config":{"LOG_LEVEL":"info","binding":"off"}}}`)
	waitGone(t, clusterRoleBindingGVR, "", name, "pruned")
	if _, err := e.Get(context.Background(), clusterRoleGVR, "", name); err != nil {
		t.Fatalf("the ClusterRole, which still renders: %v", err)
	}

	// Steady: a converged parent with cluster-scoped children costs no
	// write.
	waitCondition(t, ns, "web", "Ready", "True")
	time.Sleep(2 * time.Second)
	l.writes.reset()
	time.Sleep(5 * time.Second)
	if n, reqs := l.writes.snapshot(); n != 0 {
		t.Errorf("%d writes at steady state: %v", n, reqs)
	}

	// Deleting the parent deletes its ClusterRole, then the parent goes.
	deleteParent(t, ns, "web")
	waitGone(t, clusterRoleGVR, "", name, "its parent was deleted")
}

// Two parents, of the same name in two namespaces, render the same
// ClusterRole: the second is refused with a condition naming the first,
// which keeps it, and the refused one never deletes it.
func TestClusterScopedNameTakenByAnotherParent(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns1, ns2 := e.NewNamespace(t), e.NewNamespace(t)
	shared := "loom-e2e-shared-" + ns1
	deleteClusterObjects(t, shared)
	dir := clusterSet(t)
	startLoom(t, dir, ns1, loomOptions{})
	startLoom(t, dir, ns2, loomOptions{})
	stripFinalizers(t, ns1)
	stripFinalizers(t, ns2)
	spec := "  image: nginx:1.27\n  config:\n    role: " + shared + "\n"
	first := createParent(t, ns1, "apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata:\n  name: web\nspec:\n"+spec)
	waitCondition(t, ns1, "web", "Ready", "True")
	createParent(t, ns2, "apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata:\n  name: web\nspec:\n"+spec)
	waitDegraded(t, myresGVR, ns2, "web", "ApplyFailed",
		"ClusterRole.rbac.authorization.k8s.io "+shared+" is controlled by MyResource "+ns1+"/web, not by MyResource "+ns2+"/web")

	cr, err := e.Get(context.Background(), clusterRoleGVR, "", shared)
	if err != nil {
		t.Fatal(err)
	}
	if err := clusterChildOf(cr, first); err != nil {
		t.Errorf("the first parent's ClusterRole was taken over: %v", err)
	}
	// The refused parent goes; the ClusterRole stays the first one's.
	deleteParent(t, ns2, "web")
	consistently(t, 3*time.Second, "the first parent keeps its ClusterRole", func(ctx context.Context) error {
		cr, err := e.Get(ctx, clusterRoleGVR, "", shared)
		if err != nil {
			return err
		}
		return clusterChildOf(cr, first)
	})
}

// A deleted parent whose ClusterRole is held by someone else's finalizer
// waits, and says why in its status and an Event; once the ClusterRole
// goes, so does the parent.
func TestClusterScopedChildDeletionWaits(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	name := "loom-e2e-" + ns + "-hello"
	deleteClusterObjects(t, name)
	startLoom(t, clusterSet(t), ns, loomOptions{})
	stripFinalizers(t, ns)
	createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "hello", "Ready", "True")
	patchObject(t, clusterRoleGVR, "", name, `{"metadata":{"finalizers":["example.com/hold"]}}`)

	if err := e.Dyn.Resource(myresGVR).Namespace(ns).Delete(context.Background(), "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, clusterRoleBindingGVR, "", name, "its parent was deleted")
	waitDegraded(t, myresGVR, ns, "hello", "DeletionBlocked", "ClusterRole "+name+" (finalizers: example.com/hold)")
	waitEvent(t, ns, "hello", "Warning", "DeletionBlocked", "ClusterRole "+name, "example.com/hold")
	p, err := e.Get(context.Background(), myresGVR, ns, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if state, _, _ := unstructured.NestedString(p.Object, "status", "state"); state != "Deleting" {
		t.Errorf("status.state = %q, want Deleting", state)
	}

	patchObject(t, clusterRoleGVR, "", name, `{"metadata":{"finalizers":null}}`)
	waitGone(t, clusterRoleGVR, "", name, "its finalizer was removed")
	waitGone(t, myresGVR, ns, "hello", "its cluster-scoped children are gone")
}

// A parent deleted while Loom is stopped waits for Loom, which deletes
// its cluster-scoped children when it starts again.
func TestClusterScopedChildrenWhileLoomIsStopped(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	name := "loom-e2e-" + ns + "-hello"
	deleteClusterObjects(t, name)
	dir := clusterSet(t)
	l := startLoom(t, dir, ns, loomOptions{})
	stripFinalizers(t, ns)
	createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "hello", "Ready", "True")
	l.stop(t)

	if err := e.Dyn.Resource(myresGVR).Namespace(ns).Delete(context.Background(), "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	consistently(t, 3*time.Second, "the parent and its ClusterRole wait for Loom", func(ctx context.Context) error {
		if _, err := e.Get(ctx, myresGVR, ns, "hello"); err != nil {
			return err
		}
		_, err := e.Get(ctx, clusterRoleGVR, "", name)
		return err
	})

	startLoom(t, dir, ns, loomOptions{})
	waitGone(t, clusterRoleGVR, "", name, "Loom started again")
	waitGone(t, clusterRoleBindingGVR, "", name, "Loom started again")
	waitGone(t, myresGVR, ns, "hello", "its cluster-scoped children are gone")
}

// statusChildren returns the parent's status.children as text.
func statusChildren(t *testing.T, p *unstructured.Unstructured) string {
	t.Helper()
	kids, _, _ := unstructured.NestedSlice(p.Object, "status", "children")
	var out []string
	for _, k := range kids {
		m, _ := k.(map[string]any)
		out = append(out, fmt.Sprintf("%v %v", m["kind"], m["name"]))
	}
	return strings.Join(out, ", ")
}
