package render

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kjson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// decodeSeeds are YAML documents that exercise the corners where YAML and
// JSON disagree.
var decodeSeeds = []string{
	"",
	"# only a comment\n",
	"a: 1\nb: two\nc: 3.5\nd: null\ne: true\n",
	"quoted: \"1\"\nsingle: '2.0'\nplain: 3\n",
	"y: yes\nn: no\non: on\noff: off\nY: Y\nN: n\n",
	"f1: 1.0\nf2: 1e3\nf3: 0.5\nf4: -0.0\nf5: 1e-7\nf6: 6.02e23\nf7: .5\n",
	"big: 9007199254740993\nbigger: 9223372036854775807\nover: 9223372036854775808\nhuge: 18446744073709551616\nneg: -9223372036854775808\n",
	"float17: 1.0e17\nfloat19: 1.0e19\nfloat21: 1.0e21\n",
	"hex: 0x1F\noct: 0o17\nold: 017\nbin: 0b101\nunder: 1_000\n",
	"inf: .inf\n",
	"nan: .nan\n",
	"list: [1, [2, [3, {a: b}]], {}, []]\nempty: {}\n",
	"base: &b {x: 1, y: [1, 2]}\nother: *b\nmerged:\n  <<: *b\n  z: 3\n",
	"date: 2001-12-14\nts: 2001-12-14t21:59:43.10-05:00\ntagged: !!timestamp 2001-12-14\n",
	"1: one\n2.5: two\ntrue: three\n0.1: four\n3.14159265358979: pi\n",
	"null: x\n",
	"~: x\n",
	"18446744073709551615: x\n",
	"1: a\n\"1\": b\n",
	"bin: !!binary aGVsbG8=\ninvalid: !!binary /w==\n",
	"str: !!str 123\nint: !!int \"7\"\nfloat: !!float 3\n",
	"multi: |\n  line one\n  line two\nfolded: >\n  a\n  b\n",
	"unicode: \"h\\u00e9llo \\U0001F600\"\nkey é: ü\n",
	"- a\n- b\n",
	"just a string\n",
	"42\n",
	"a: b\n---\nc: d\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: v\n",
}

// FuzzDecodeMatchesSigsYAML checks that decodeYAML gives what kubectl's
// path gives: sigs.k8s.io/yaml's YAML → JSON conversion, then Kubernetes'
// JSON decoding (integral numbers become int64, others float64).
func FuzzDecodeMatchesSigsYAML(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, gotErr := decodeYAML(doc)
		want, wantErr := viaSigsYAML(doc)
		switch {
		case gotErr != nil && wantErr != nil:
			return
		case errors.Is(gotErr, errKeyCollision):
			// Documented difference: sigs.k8s.io/yaml keeps one of the
			// colliding keys in an undefined order; decodeYAML refuses.
			return
		case gotErr != nil:
			t.Fatalf("decodeYAML failed but sigs.k8s.io/yaml did not\ndoc: %q\nerr: %v\nsigs: %#v", doc, gotErr, want)
		case wantErr != nil:
			t.Fatalf("sigs.k8s.io/yaml failed but decodeYAML did not\ndoc: %q\nerr: %v\ngot: %#v", doc, wantErr, got)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("decodeYAML(%q) mismatch (-sigs.k8s.io/yaml +decodeYAML):\n%s", doc, diff)
		}
	})
}

// viaSigsYAML decodes doc the way kubectl does. A document that is empty
// or only comments gives nil, as decodeYAML's does.
func viaSigsYAML(doc []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := kjson.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	return m, nil
}

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
		parent, err := decodeYAML(raw)
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
		if s, err := decodeYAML([]byte("spec:\n" + indent(spec))); err == nil && s != nil {
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
