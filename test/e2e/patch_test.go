//go:build e2e

package e2e

// A patch child (loom.dev/manage: patch) is someone else's object: Loom
// applies only its template's fields, under its own field manager, never
// creates, owns or deletes it.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// patchSet writes a MyResource set whose parents label the Namespace
// shared and the ServiceAccount shared/builder, both someone else's.
func patchSet(t *testing.T, shared string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "myresource"), map[string]string{
		"loom.yaml": env.Fixture(t, "sets/myresource/loom.yaml") +
			"lookups:\n  - apiVersion: v1\n    kind: Namespace\n    namespaces: [" + shared + "]\n  - apiVersion: v1\n    kind: ServiceAccount\n    namespaces: [" + shared + "]\n",
		"patch.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + shared + "\n  labels:\n    team: {{ .Name }}\n  annotations:\n    loom.dev/manage: patch\n---\n" +
			"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: builder\n  namespace: " + shared + "\n  labels:\n    team: {{ .Name }}\n  annotations:\n    loom.dev/manage: patch\n",
		"site.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-site\ndata:\n  image: {{ .Spec.image | quote }}\n",
	})
	return dir
}

// patchedBy checks that obj carries Loom's label team=want, its owner's
// label owner=them, and nothing that makes it Loom's: no ownerReference,
// no Loom label.
func patchedBy(obj *unstructured.Unstructured, want string) error {
	if got := obj.GetLabels()["team"]; got != want {
		return fmt.Errorf("%s %s: label team %q, want %q", obj.GetKind(), obj.GetName(), got, want)
	}
	if got := obj.GetLabels()["owner"]; got != "them" {
		return fmt.Errorf("%s %s: the owner's label owner is %q", obj.GetKind(), obj.GetName(), got)
	}
	if refs := obj.GetOwnerReferences(); len(refs) > 0 {
		return fmt.Errorf("%s: ownerReferences %v", obj.GetName(), refs)
	}
	for k := range obj.GetLabels() {
		if strings.HasPrefix(k, "applyset.kubernetes.io/") || k == "app.kubernetes.io/managed-by" {
			return fmt.Errorf("%s: label %s", obj.GetName(), k)
		}
	}
	return nil
}

// TestPatchChildren: the parent waits for a ServiceAccount to patch that
// does not exist (Loom never creates it); once another writer creates it,
// Loom labels it and the Namespace, leaving the owner's fields alone; a
// second writer's change of Loom's label is repaired; a Loom SIGKILLed
// and started again (with only the rules `loom rbac` generates) writes
// nothing; the parent's deletion leaves both objects in place.
func TestPatchChildren(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns, shared := e.NewNamespace(t), e.NewNamespace(t)
	dir := patchSet(t, shared)
	ctx := context.Background()
	patchObject(t, namespaceGVR, "", shared, `{"metadata":{"labels":{"owner":"them"}}}`)

	first := testutil.StartProcess(t, filepath.Join(t.TempDir(), "loom.log"), e.Binary, testutil.WithoutWebhook([]string{
		"run", "--templates", dir, "--namespace", ns, "--kubeconfig", e.Kubeconfig, "--metrics-bind-address", ""})...)
	createParentFixture(t, ns, "minimal")

	// 1. The ServiceAccount does not exist: the parent waits, and Loom
	// does not create it; the Namespace is labelled meanwhile.
	eventually(t, 60*time.Second, "the parent waits for the ServiceAccount to patch", func(ctx context.Context) error {
		p, err := e.Get(ctx, myresGVR, ns, "hello")
		if err != nil {
			return err
		}
		st, reason, msg := condition(p, "Ready")
		want := fmt.Sprintf("ServiceAccount %s/builder, which Loom patches (loom.dev/manage: patch)", shared)
		if st != "False" || reason != "WaitingForDependency" || !strings.Contains(msg, want) {
			return fmt.Errorf("Ready %s %s %q, want False WaitingForDependency naming %q", st, reason, msg, want)
		}
		n, err := e.Get(ctx, namespaceGVR, "", shared)
		if err != nil {
			return err
		}
		return patchedBy(n, "hello")
	})
	if _, err := e.Get(ctx, serviceAccountGVR, shared, "builder"); !isNotFound(err) {
		t.Fatalf("Loom created the ServiceAccount it patches (%v)", err)
	}

	// 2. Someone else creates it: Loom labels it, and the parent is Ready.
	createObject(t, serviceAccountGVR, shared, "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: builder\n  labels:\n    owner: them\n")
	eventually(t, 60*time.Second, "the ServiceAccount is labelled", func(ctx context.Context) error {
		sa, err := e.Get(ctx, serviceAccountGVR, shared, "builder")
		if err != nil {
			return err
		}
		return patchedBy(sa, "hello")
	})
	waitCondition(t, ns, "hello", "Ready", "True")
	p := mustGet(t, myresGVR, ns, "hello")
	if got, want := p.GetAnnotations()["loom.dev/patches"], "Namespace//"+shared+",ServiceAccount/"+shared+"/builder"; got != want || !slices.Contains(p.GetFinalizers(), "loom.dev/patches") {
		t.Errorf("the parent's record %q and finalizers %v, want %q and loom.dev/patches", got, p.GetFinalizers(), want)
	}

	// 3. A second writer changes Loom's label: repaired.
	patchObject(t, serviceAccountGVR, shared, "builder", `{"metadata":{"labels":{"team":"other"}}}`)
	eventually(t, 60*time.Second, "Loom's label is repaired", func(ctx context.Context) error {
		sa, err := e.Get(ctx, serviceAccountGVR, shared, "builder")
		if err != nil {
			return err
		}
		return patchedBy(sa, "hello")
	})

	// loom diff: what Loom does with each patch child, and nothing to
	// write.
	out, code := loomDiff(t, "-t", filepath.Join(dir, "myresource"), "-n", ns)
	for _, want := range []string{
		fmt.Sprintf("ServiceAccount %s/builder (loom.dev/manage: patch): someone else's object; Loom applies only the template's fields to it", shared),
		fmt.Sprintf("Namespace %s (loom.dev/manage: patch): someone else's object", shared),
		fmt.Sprintf("MyResource %s/hello: 0 to create, 0 to change, 3 unchanged, 0 to prune", ns),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("loom diff lacks %q", want)
		}
	}
	if code != 0 || t.Failed() {
		t.Fatalf("loom diff: exit %d\n%s", code, out)
	}

	// 4. SIGKILL, then a new Loom with no record and only the rules `loom
	// rbac` generates: it writes nothing.
	saBefore := mustGet(t, serviceAccountGVR, shared, "builder")
	nsBefore := mustGet(t, namespaceGVR, "", shared)
	kill(t, &loomProcess{first})
	l := startLoom(t, dir, ns, loomOptions{resync: 3 * time.Second})
	before := l.counter(t, "loom_reconcile_total", nil)
	eventually(t, 60*time.Second, "two resyncs of the parent", func(context.Context) error {
		if n := l.counter(t, "loom_reconcile_total", nil) - before; n < 2 {
			return fmt.Errorf("%v reconciles: %w", n, errNotYet)
		}
		return nil
	})
	if w := objectWrites(l); len(w) != 0 {
		t.Errorf("the new Loom sent %d writes: %s", len(w), strings.Join(w, "\n"))
	}
	if now := mustGet(t, serviceAccountGVR, shared, "builder"); now.GetResourceVersion() != saBefore.GetResourceVersion() {
		t.Errorf("the ServiceAccount was written after the restart")
	}
	if now := mustGet(t, namespaceGVR, "", shared); now.GetResourceVersion() != nsBefore.GetResourceVersion() {
		t.Errorf("the Namespace was written after the restart")
	}
	waitCondition(t, ns, "hello", "Ready", "True")

	// 5. The ServiceAccount stops rendering: Loom's label goes, the
	// owner's stays, and the record lists only the Namespace.
	writeFiles(t, filepath.Join(dir, "myresource"), map[string]string{
		"patch.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + shared + "\n  labels:\n    team: {{ .Name }}\n  annotations:\n    loom.dev/manage: patch\n",
	})
	eventually(t, 60*time.Second, "Loom's fields in the ServiceAccount are given back", func(ctx context.Context) error {
		sa, err := e.Get(ctx, serviceAccountGVR, shared, "builder")
		if err != nil {
			return err
		}
		if err := givenBack(sa); err != nil {
			return err
		}
		p, err := e.Get(ctx, myresGVR, ns, "hello")
		if err != nil {
			return err
		}
		if got, want := p.GetAnnotations()["loom.dev/patches"], "Namespace//"+shared; got != want {
			return fmt.Errorf("record %q, want %q", got, want)
		}
		return nil
	})

	// 6. The parent's deletion: Loom's fields in the Namespace are given
	// back, then the parent goes; both objects stay.
	deleteParent(t, ns, "hello")
	eventually(t, 60*time.Second, "the parent is gone", func(ctx context.Context) error {
		if _, err := e.Get(ctx, myresGVR, ns, "hello"); !isNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	if err := givenBack(mustGet(t, namespaceGVR, "", shared)); err != nil {
		t.Error(err)
	}
	if _, err := e.Get(ctx, serviceAccountGVR, shared, "builder"); err != nil {
		t.Error(err)
	}
}

// givenBack checks that obj holds nothing of Loom's (no team label, no
// loom.dev/ annotation, no managedFields entry of Loom's), and its owner's
// label owner=them.
func givenBack(obj *unstructured.Unstructured) error {
	if v, ok := obj.GetLabels()["team"]; ok {
		return fmt.Errorf("%s %s: Loom's label team=%s is still there", obj.GetKind(), obj.GetName(), v)
	}
	if got := obj.GetLabels()["owner"]; got != "them" {
		return fmt.Errorf("%s %s: the owner's label owner is %q", obj.GetKind(), obj.GetName(), got)
	}
	for k := range obj.GetAnnotations() {
		if strings.HasPrefix(k, "loom.dev/") {
			return fmt.Errorf("%s %s: annotation %s", obj.GetKind(), obj.GetName(), k)
		}
	}
	for _, m := range obj.GetManagedFields() {
		if m.Manager == "loom" {
			if raw := string(m.FieldsV1.Raw); raw != "{}" && raw != "" {
				return fmt.Errorf("%s %s: Loom still owns %s", obj.GetKind(), obj.GetName(), raw)
			}
		}
	}
	return nil
}

// objectWrites returns the writes l sent, but for its permission checks
// at start (SelfSubjectAccessReviews, which write nothing).
func objectWrites(l *loom) []string {
	_, log := l.writes.snapshot()
	var out []string
	for _, w := range log {
		if !strings.Contains(w, "/selfsubjectaccessreviews ") {
			out = append(out, w)
		}
	}
	return out
}

// TestManageSwitchFullToPatch: a child switched from full to patch is not
// deleted: Loom's apply without the ownerReference and labels it owned
// removes them, so neither the garbage collector nor Loom's prune takes
// it; the parent's deletion then gives Loom's fields back and leaves the
// object, with another writer's field, in place.
func TestManageSwitchFullToPatch(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := t.TempDir()
	set := filepath.Join(dir, "myresource")
	writeFiles(t, set, map[string]string{
		"loom.yaml": env.Fixture(t, "sets/myresource/loom.yaml") + "lookups:\n  - apiVersion: v1\n    kind: ConfigMap\n",
		"cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\ndata:\n  v: one\n",
	})
	// The rules `loom rbac` generates for the set as it starts (full)
	// lack the patch record's: the set changes under the running Loom.
	startLoom(t, dir, ns, loomOptions{admin: true, resync: 3 * time.Second})
	parent := createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "hello", "Ready", "True")
	cm := mustGet(t, configMapGVR, ns, "hello-cm")
	if err := ownedBy(cm, parent); err != nil {
		t.Fatal(err)
	}
	uid := cm.GetUID()
	patchObject(t, configMapGVR, ns, "hello-cm", `{"metadata":{"labels":{"owner":"them"}},"data":{"other":"theirs"}}`)

	// full → patch: the ownerReference and Loom's labels go, the
	// template's label comes; the object is the same one.
	writeFiles(t, set, map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\n  labels:\n    team: {{ .Name }}\n  annotations:\n    loom.dev/manage: patch\n",
	})
	eventually(t, 60*time.Second, "hello-cm is patched, not owned", func(ctx context.Context) error {
		cm, err := e.Get(ctx, configMapGVR, ns, "hello-cm")
		if err != nil {
			return err
		}
		if cm.GetUID() != uid {
			return fmt.Errorf("hello-cm was deleted and made again")
		}
		return patchedBy(cm, "hello")
	})
	waitCondition(t, ns, "hello", "Ready", "True")

	// The parent's deletion: the object stays, Loom's fields given back,
	// the other writer's in place.
	deleteParent(t, ns, "hello")
	eventually(t, 60*time.Second, "the parent is gone", func(ctx context.Context) error {
		if _, err := e.Get(ctx, myresGVR, ns, "hello"); !isNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	consistently(t, 5*time.Second, "hello-cm stays", func(ctx context.Context) error {
		cm, err := e.Get(ctx, configMapGVR, ns, "hello-cm")
		if err != nil {
			return err
		}
		if cm.GetUID() != uid {
			return fmt.Errorf("hello-cm was deleted and made again")
		}
		if v, _, _ := unstructured.NestedString(cm.Object, "data", "other"); v != "theirs" {
			return fmt.Errorf("the other writer's data %q", v)
		}
		return givenBack(cm)
	})
}
