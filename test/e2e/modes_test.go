//go:build e2e

package e2e

// How much of a child Loom manages (loom.dev/manage): a create-only
// Secret is made once and then left to whoever changes it; an observed
// ConfigMap, in a namespace the set declares for lookups, is read for
// readiness and by another child's lookup, and never written, created,
// owned or deleted.

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/internal/testutil"
	"github.com/loom-operator/loom/test/env"
)

// modesSet writes a MyResource set whose parents get a create-only Secret
// <parent>-pw, a create-only Secret to keep <parent>-keep (delete-policy
// orphan), the observed ConfigMap shared/settings, and a full ConfigMap
// <parent>-site that looks the observed one up.
func modesSet(t *testing.T, shared string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "myresource"), map[string]string{
		"loom.yaml": env.Fixture(t, "sets/myresource/loom.yaml") +
			"lookups:\n  - apiVersion: v1\n    kind: ConfigMap\n    namespaces: [" + shared + "]\n",
		"password.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}-pw\n  annotations:\n    loom.dev/manage: create-only\n" +
			"stringData:\n  password: initial\n---\n" +
			"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Name }}-keep\n  annotations:\n    loom.dev/manage: create-only\n    loom.dev/delete-policy: orphan\n" +
			"stringData:\n  password: kept\n",
		"shared.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: " + shared + "\n  annotations:\n    loom.dev/manage: observe\n",
		"site.yaml": "{{- $s := lookup \"v1\" \"ConfigMap\" \"" + shared + "\" \"settings\" }}\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-site\ndata:\n  domain: {{ dig \"data\" \"domain\" \"none\" $s | quote }}\n  image: {{ .Spec.image | quote }}\n",
	})
	return dir
}

// dataOf returns a ConfigMap's data key, or a Secret's (decoded), of the
// object ns/name; "" when it is not there.
func dataOf(ctx context.Context, t *testing.T, isSecret bool, ns, name, key string) (string, *unstructured.Unstructured, error) {
	e := env.From(t)
	gvr := configMapGVR
	if isSecret {
		gvr = secretGVR
	}
	o, err := e.Get(ctx, gvr, ns, name)
	if err != nil {
		return "", nil, err
	}
	v, _, _ := unstructured.NestedString(o.Object, "data", key)
	if isSecret {
		b, _ := base64.StdEncoding.DecodeString(v)
		v = string(b)
	}
	return v, o, nil
}

// notLooms checks that obj carries nothing of Loom's: no ownerReference,
// no Loom label, no managedFields entry of Loom's field manager.
func notLooms(obj *unstructured.Unstructured) error {
	if refs := obj.GetOwnerReferences(); len(refs) > 0 {
		return fmt.Errorf("%s: ownerReferences %v", obj.GetName(), refs)
	}
	for k := range obj.GetLabels() {
		if strings.HasPrefix(k, "applyset.kubernetes.io/") || k == "app.kubernetes.io/managed-by" {
			return fmt.Errorf("%s: label %s", obj.GetName(), k)
		}
	}
	for _, m := range obj.GetManagedFields() {
		if m.Manager == "loom" {
			return fmt.Errorf("%s: Loom's managedFields entry", obj.GetName())
		}
	}
	return nil
}

// childModes returns status.children's manage of each child, by name.
func childModes(ctx context.Context, t *testing.T, ns, name string) (map[string]string, error) {
	p, err := env.From(t).Get(ctx, myresGVR, ns, name)
	if err != nil {
		return nil, err
	}
	kids, _, _ := unstructured.NestedSlice(p.Object, "status", "children")
	out := map[string]string{}
	for _, k := range kids {
		m, _ := k.(map[string]any)
		mode, _ := m["manage"].(string)
		out[fmt.Sprint(m["name"])] = mode
	}
	return out, nil
}

// TestCreateOnlyAndObservedChildren: the parent waits for the observed
// ConfigMap, then goes Ready and its lookup follows it; a second writer's
// changes to the create-only Secret and the observed ConfigMap stay, and
// so do they through a template change; loom diff says what each mode
// does; a Loom SIGKILLed and started again writes nothing; the parent's
// deletion deletes the create-only Secret, keeps the one to keep, and
// leaves the observed ConfigMap alone.
func TestCreateOnlyAndObservedChildren(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns, shared := e.NewNamespace(t), e.NewNamespace(t)
	dir := modesSet(t, shared)
	set := filepath.Join(dir, "myresource")
	ctx := context.Background()

	// 1. A Loom process; the observed ConfigMap does not exist yet.
	first := testutil.StartProcess(t, filepath.Join(t.TempDir(), "loom.log"), e.Binary, testutil.WithoutWebhook([]string{
		"run", "--templates", dir, "--namespace", ns, "--kubeconfig", e.Kubeconfig, "--metrics-bind-address", ""})...)
	parent := createParentFixture(t, ns, "minimal")
	eventually(t, 60*time.Second, "the parent waits for the observed ConfigMap, and the create-only Secret is made", func(ctx context.Context) error {
		p, err := e.Get(ctx, myresGVR, ns, "hello")
		if err != nil {
			return err
		}
		st, reason, msg := condition(p, "Ready")
		want := fmt.Sprintf("ConfigMap %s/settings, which Loom observes (loom.dev/manage: observe)", shared)
		if st != "False" || reason != "WaitingForDependency" || !strings.Contains(msg, want) {
			return fmt.Errorf("Ready %s %s %q, want False WaitingForDependency naming %q", st, reason, msg, want)
		}
		pw, s, err := dataOf(ctx, t, true, ns, "hello-pw", "password")
		if err != nil {
			return err
		}
		if pw != "initial" {
			return fmt.Errorf("password %q", pw)
		}
		return ownedBy(s, parent)
	})
	if _, err := e.Get(ctx, configMapGVR, shared, "settings"); !isNotFound(err) {
		t.Fatalf("Loom created the observed ConfigMap (%v)", err)
	}

	// 2. Someone else creates it: the parent goes Ready, and the child
	// that looks it up follows.
	createObject(t, configMapGVR, shared, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  domain: a.example.com\n")
	waitCondition(t, ns, "hello", "Ready", "True")
	waitKey(t, ns, "hello-site", "domain", "a.example.com")
	modes, err := childModes(ctx, t, ns, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"hello-pw": "create-only", "hello-keep": "create-only", "settings": "observe", "hello-site": ""}; !mapsEqual(modes, want) {
		t.Errorf("status.children modes %v, want %v", modes, want)
	}

	// 3. A second writer: the create-only Secret's new password and the
	// observed ConfigMap's new domain stay; the lookup follows the domain.
	patchObject(t, secretGVR, ns, "hello-pw", `{"stringData":{"password":"rotated"}}`)
	patchObject(t, configMapGVR, shared, "settings", `{"data":{"domain":"b.example.com"}}`)
	waitKey(t, ns, "hello-site", "domain", "b.example.com")
	// 4. A template change: the create-only Secret's is not applied; the
	// full ConfigMap's is, which tells that Loom rendered the new set.
	editFile(t, filepath.Join(set, "password.yaml"), "password: initial", "password: changed")
	editFile(t, filepath.Join(set, "site.yaml"), "  image:", "  edited: \"yes\"\n  image:")
	waitKey(t, ns, "hello-site", "edited", "yes")
	_, pwBefore, _ := dataOf(ctx, t, true, ns, "hello-pw", "password")
	_, settingsBefore, _ := dataOf(ctx, t, false, shared, "settings", "domain")
	if pw, _, _ := dataOf(ctx, t, true, ns, "hello-pw", "password"); pw != "rotated" {
		t.Errorf("create-only Secret's password %q, want the second writer's", pw)
	}
	if d, s, _ := dataOf(ctx, t, false, shared, "settings", "domain"); d != "b.example.com" || notLooms(s) != nil {
		t.Errorf("observed ConfigMap: domain %q, %v", d, notLooms(s))
	}

	// 5. loom diff: what each mode does, and nothing to write.
	out, code := loomDiff(t, "-t", set, "-n", ns)
	for _, want := range []string{
		fmt.Sprintf("Secret %s/hello-pw (loom.dev/manage: create-only): exists, so Loom leaves it as it is", ns),
		fmt.Sprintf("ConfigMap %s/settings (loom.dev/manage: observe): exists; Loom reads it and never writes it", shared),
		fmt.Sprintf("MyResource %s/hello: 0 to create, 0 to change, 4 unchanged, 0 to prune", ns),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("loom diff lacks %q", want)
		}
	}
	if code != 0 || t.Failed() {
		t.Fatalf("loom diff: exit %d\n%s", code, out)
	}

	// 6. SIGKILL, then a new Loom, with no record of what the first one
	// applied and only the rules `loom rbac` generates: it writes nothing.
	kill(t, &loomProcess{first})
	l := startLoom(t, dir, ns, loomOptions{resync: 3 * time.Second})
	before := l.counter(t, "loom_reconcile_total", nil)
	eventually(t, 60*time.Second, "two resyncs of the parent", func(context.Context) error {
		if n := l.counter(t, "loom_reconcile_total", nil) - before; n < 2 {
			return fmt.Errorf("%v reconciles: %w", n, errNotYet)
		}
		return nil
	})
	// Its start asks the API server what it may do (selfsubjectaccessreviews,
	// POSTs that write nothing); any other write fails the test.
	n, log := l.writes.snapshot()
	var writes []string
	for _, w := range log {
		if !strings.Contains(w, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews ") {
			writes = append(writes, w)
		}
	}
	if int(n) != len(log) || len(writes) > 0 {
		t.Errorf("the new Loom sent %d requests that may write, %d of them logged; not access reviews: %s", n, len(log), strings.Join(writes, "\n"))
	}
	for _, o := range []*unstructured.Unstructured{pwBefore, settingsBefore} {
		gvr := map[bool]schema.GroupVersionResource{true: secretGVR, false: configMapGVR}[o.GetKind() == "Secret"]
		now := mustGet(t, gvr, o.GetNamespace(), o.GetName())
		if now.GetResourceVersion() != o.GetResourceVersion() {
			t.Errorf("%s %s was written after the restart", o.GetKind(), o.GetName())
		}
	}

	// 7. The parent's deletion: the create-only Secret goes with it (its
	// ownerReference), the one to keep is released, and the observed
	// ConfigMap is untouched.
	deleteParent(t, ns, "hello")
	eventually(t, 60*time.Second, "hello-pw is deleted", func(ctx context.Context) error {
		if _, err := e.Get(ctx, secretGVR, ns, "hello-pw"); !isNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	eventually(t, 30*time.Second, "hello-keep is released", func(ctx context.Context) error {
		_, s, err := dataOf(ctx, t, true, ns, "hello-keep", "password")
		if err != nil {
			return err
		}
		return notLooms(s)
	})
	if now := mustGet(t, configMapGVR, shared, "settings"); now.GetResourceVersion() != settingsBefore.GetResourceVersion() {
		t.Errorf("the observed ConfigMap was written when its parent was deleted")
	}
}

// TestManageSwitchKeepsTheObject: a child switched from full to
// create-only, to observe and back to full is never deleted. As
// create-only it stays Loom's, unchanged; as observed it is released
// (its ownerReference, Loom's labels and field manager go; its data
// stays); back to full, Loom takes it again only once it is handed over
// (loom.dev/adopt), as any object that is not its own.
func TestManageSwitchKeepsTheObject(t *testing.T) {
	e := env.From(t)
	t.Parallel()
	ns := e.NewNamespace(t)
	dir := t.TempDir()
	set := filepath.Join(dir, "myresource")
	writeFiles(t, set, map[string]string{
		"loom.yaml": env.Fixture(t, "sets/myresource/loom.yaml") + "lookups:\n  - apiVersion: v1\n    kind: ConfigMap\n",
		"cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\ndata:\n  v: one\n",
	})
	startLoom(t, dir, ns, loomOptions{admin: true, resync: 3 * time.Second}) // an object that is not Loom's is not watched: the resync sees its adopt annotation
	parent := createParentFixture(t, ns, "minimal")
	waitCondition(t, ns, "hello", "Ready", "True")
	uid := mustGet(t, configMapGVR, ns, "hello-cm").GetUID()
	same := func(ctx context.Context) (*unstructured.Unstructured, error) {
		cm, err := e.Get(ctx, configMapGVR, ns, "hello-cm")
		if err != nil {
			return nil, err
		}
		if cm.GetUID() != uid {
			return nil, fmt.Errorf("hello-cm was deleted and made again")
		}
		return cm, nil
	}
	waitMode := func(want string) {
		eventually(t, 30*time.Second, "status.children says "+want, func(ctx context.Context) error {
			m, err := childModes(ctx, t, ns, "hello")
			if err != nil {
				return err
			}
			if m["hello-cm"] != want {
				return fmt.Errorf("manage %q", m["hello-cm"])
			}
			return nil
		})
	}

	// full → create-only: Loom's still, and the new data is not applied.
	writeFiles(t, set, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\n  annotations:\n    loom.dev/manage: create-only\ndata:\n  v: two\n"})
	waitMode("create-only")
	cm, err := same(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "v"); v != "one" || ownedBy(cm, parent) != nil {
		t.Errorf("create-only: data %q, %v", v, ownedBy(cm, parent))
	}

	// create-only → observe: released, its data as it was.
	writeFiles(t, set, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\n  annotations:\n    loom.dev/manage: observe\n"})
	waitMode("observe")
	eventually(t, 30*time.Second, "hello-cm is released", func(ctx context.Context) error {
		cm, err := same(ctx)
		if err != nil {
			return err
		}
		if v, _, _ := unstructured.NestedString(cm.Object, "data", "v"); v != "one" {
			return fmt.Errorf("data %q", v)
		}
		return notLooms(cm)
	})
	waitCondition(t, ns, "hello", "Ready", "True")

	// observe → full: not Loom's, so refused until handed over.
	writeFiles(t, set, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm\ndata:\n  v: three\n"})
	waitDegraded(t, myresGVR, ns, "hello", "ApplyFailed", "hello-cm", "loom.dev/adopt")
	patchObject(t, configMapGVR, ns, "hello-cm", `{"metadata":{"annotations":{"loom.dev/adopt":"MyResource.example.loom.dev/hello"}}}`)
	eventually(t, 30*time.Second, "hello-cm is Loom's again, with the template's data", func(ctx context.Context) error {
		cm, err := same(ctx)
		if err != nil {
			return err
		}
		if v, _, _ := unstructured.NestedString(cm.Object, "data", "v"); v != "three" {
			return fmt.Errorf("data %q", v)
		}
		return ownedBy(cm, parent)
	})
	waitCondition(t, ns, "hello", "Ready", "True")
}

// waitKey waits until the ConfigMap ns/name's data key is want.
func waitKey(t *testing.T, ns, name, key, want string) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("%s's %s is %q", name, key, want), func(ctx context.Context) error {
		v, _, err := dataOf(ctx, t, false, ns, name, key)
		if err != nil {
			return err
		}
		if v != want {
			return fmt.Errorf("%q", v)
		}
		return nil
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
