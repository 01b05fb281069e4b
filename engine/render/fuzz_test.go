package render

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
	"github.com/loom-operator/loom/engine/render/yamldoc"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// myresourceDir is the shipped template set that FuzzRender renders.
const myresourceDir = "../../templates/myresource"

// FuzzRender renders arbitrary parent specs with the shipped myresource set.
// Render must not panic, and must either return children that keep the
// engine's invariants or an *Error that names a file of the set.
func FuzzRender(f *testing.F) {
	set, err := Load(myresourceDir)
	if err != nil {
		f.Fatal(err)
	}
	examples, err := filepath.Glob(filepath.Join(myresourceDir, TestsDir, "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range examples {
		if strings.HasSuffix(path, ".golden.yaml") {
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		parent, err := yamldoc.Decode(raw)
		if err != nil {
			f.Fatal(err)
		}
		spec, err := yaml.Marshal(parent["spec"])
		if err != nil {
			f.Fatal(err)
		}
		f.Add("web", string(spec))
	}
	for _, spec := range []string{
		"",
		"{}",
		"image: nginx\nreplicas: \"x\"\n",
		"image: nginx\nport: -1\n",
		"image: nginx\nconfig: [1, 2]\n",
		"image: {}\n",
		"image: nginx\nreplicas: 99999999999999999999\n",
		"image: nginx\nreplicas: 2147483648\n",
		"image: nginx\nreplicas: 1.5\n",
		"image: ñginx:☃\nconfig:\n  ключ: значение\n  emoji: \"\U0001F600\"\n",
		"image: nginx\nconfig:\n  \"a: b\": c\n",
		"image: nginx\nconfig:\n  \"k\\n---\\nkind: Namespace\": v\n",
		"image: nginx\nmemory: [1]\n",
		"image: nginx\nport: \"http\"\n",
		"image: \"\"\n",
		"image: null\n",
		"[1, 2]\n",
	} {
		f.Add("web", spec)
	}
	f.Add("Web", "image: nginx\n")
	f.Add("a.b", "image: nginx\n")
	f.Add("", "image: nginx\n")

	files := append(set.Files(), config.File, "_helpers.tpl")
	f.Fuzz(func(t *testing.T, name, spec string) {
		parent := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.loom.dev/v1alpha1",
			"kind":       "MyResource",
			"metadata":   map[string]any{"name": name, "namespace": "fuzz", "uid": "uid-1"},
		}}
		if s, err := yamldoc.Decode([]byte("spec:\n" + indent(spec))); err == nil && s != nil {
			parent.Object["spec"] = s["spec"]
		}
		children, err := set.Render(parent)
		if err != nil {
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			msg := err.Error()
			for _, f := range files {
				if strings.HasPrefix(msg, f+":") || strings.HasPrefix(msg, f+" ") {
					return
				}
			}
			t.Fatalf("error does not start with a file of the set: %v", err)
		}
		if len(children) == 0 {
			t.Fatal("no children and no error")
		}
		for _, c := range children {
			checkChild(t, parent, c)
		}
	})
}

// indent indents every line of s by two spaces.
func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// checkChild asserts the invariants injection guarantees for every child.
func checkChild(t *testing.T, parent, c *unstructured.Unstructured) {
	t.Helper()
	id := c.GetKind() + " " + c.GetName()
	if c.GetNamespace() != parent.GetNamespace() {
		t.Errorf("%s: namespace %q, want the parent's %q", id, c.GetNamespace(), parent.GetNamespace())
	}
	var controllers int
	for _, ref := range c.GetOwnerReferences() {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		controllers++
		if ref.Kind != parent.GetKind() || ref.Name != parent.GetName() || ref.UID != parent.GetUID() {
			t.Errorf("%s: controller reference %+v does not name the parent", id, ref)
		}
	}
	if controllers != 1 {
		t.Errorf("%s: %d controller ownerReferences, want 1", id, controllers)
	}
	gvk := parent.GroupVersionKind()
	want := object.ApplySetID(parent.GetName(), parent.GetNamespace(), gvk.Kind, gvk.Group)
	if got := c.GetLabels()[object.LabelPartOf]; got != want {
		t.Errorf("%s: label %s = %q, want %q", id, object.LabelPartOf, got, want)
	}
}
