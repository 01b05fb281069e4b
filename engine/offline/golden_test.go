package offline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/render"
	"sigs.k8s.io/yaml"
)

// shippedSet is the template set whose tests folder these tests copy.
const shippedSet = "../../templates/myresource"

// shippedCases are the case names of the shipped set, in Run's order.
var shippedCases = []string{"full", "full-v1", "minimal", "minimal-v1", "mirror", "no-config", "replicas-zero"}

// copySet copies the shipped set into a temporary folder, so that a test
// may change its golden files, and loads the copy.
func copySet(t *testing.T) *render.Set {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "myresource")
	if err := os.CopyFS(dir, os.DirFS(shippedSet)); err != nil {
		t.Fatal(err)
	}
	set, err := render.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func goldenPath(set *render.Set, name string) string {
	return filepath.Join(set.Dir, render.TestsDir, name+GoldenSuffix)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs the set's cases and indexes the results by case name.
func run(t *testing.T, set *render.Set, update bool) map[string]Result {
	t.Helper()
	results, err := Run(set, update)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var names []string
	byName := map[string]Result{}
	for _, r := range results {
		names = append(names, r.Case)
		byName[r.Case] = r
		if r.Set != set.Dir {
			t.Errorf("case %s: Set = %q, want %q", r.Case, r.Set, set.Dir)
		}
	}
	if diff := cmp.Diff(shippedCases, names); diff != "" {
		t.Fatalf("cases mismatch (-want +got):\n%s", diff)
	}
	return byName
}

// TestRunPasses checks that the shipped cases pass unchanged.
func TestRunPasses(t *testing.T) {
	set := copySet(t)
	for name, r := range run(t, set, false) {
		if r.Failed() || r.Updated {
			t.Errorf("case %s: Failed() = %v, Updated = %v, Err = %v, Diff:\n%s", name, r.Failed(), r.Updated, r.Err, r.Diff)
		}
	}
}

// TestRunMismatch checks that a golden file that differs from what renders
// fails its case with a unified diff (-golden +rendered).
func TestRunMismatch(t *testing.T) {
	set := copySet(t)
	path := goldenPath(set, "full")
	orig := readFile(t, path)
	writeFile(t, path, strings.Replace(orig, "  replicas: 3\n", "  replicas: 4\n", 1))

	results := run(t, set, false)
	r := results["full"]
	if !r.Failed() || r.Err != nil {
		t.Fatalf("case full: Failed() = %v, Err = %v; want a failure with a diff", r.Failed(), r.Err)
	}
	wantPrefix := "--- " + path + "\n+++ rendered\n@@ "
	if !strings.HasPrefix(r.Diff, wantPrefix) {
		t.Errorf("diff does not start with %q:\n%s", wantPrefix, r.Diff)
	}
	for _, line := range []string{"\n   selector:\n", "\n spec:\n"} {
		if !strings.Contains(r.Diff, line) {
			t.Errorf("diff lacks the line %q:\n%s", strings.Trim(line, "\n"), r.Diff)
		}
	}
	var changed []string
	for _, line := range strings.Split(r.Diff, "\n")[2:] { // past the headers
		if strings.HasPrefix(line, "-") || strings.HasPrefix(line, "+") {
			changed = append(changed, line)
		}
	}
	if diff := cmp.Diff([]string{"-  replicas: 4", "+  replicas: 3"}, changed); diff != "" {
		t.Errorf("changed lines mismatch (-want +got):\n%s", diff)
	}
	for _, name := range shippedCases[1:] {
		if results[name].Failed() {
			t.Errorf("case %s failed: %v %s", name, results[name].Err, results[name].Diff)
		}
	}
	if got := readFile(t, path); got == orig {
		t.Error("Run without update rewrote the golden file")
	}
}

// TestRunUpdate checks that update rewrites only the golden files that
// differ, and that the cases pass afterwards.
func TestRunUpdate(t *testing.T) {
	set := copySet(t)
	full := goldenPath(set, "full")
	want := readFile(t, full)
	writeFile(t, full, strings.Replace(want, "  replicas: 3\n", "  replicas: 4\n", 1))
	minimal := goldenPath(set, "minimal")
	wantMinimal := readFile(t, minimal)
	if err := os.Remove(minimal); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(goldenPath(set, "no-config"))
	if err != nil {
		t.Fatal(err)
	}

	results := run(t, set, true)
	for name, wantUpdated := range map[string]bool{"full": true, "minimal": true, "mirror": false, "no-config": false, "replicas-zero": false} {
		r := results[name]
		if r.Updated != wantUpdated || r.Failed() {
			t.Errorf("case %s: Updated = %v, Failed() = %v (%v); want Updated = %v and no failure", name, r.Updated, r.Failed(), r.Err, wantUpdated)
		}
	}
	if diff := cmp.Diff(want, readFile(t, full)); diff != "" {
		t.Errorf("updated full golden mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantMinimal, readFile(t, minimal)); diff != "" {
		t.Errorf("created minimal golden mismatch (-want +got):\n%s", diff)
	}
	after, err := os.Stat(goldenPath(set, "no-config"))
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("update rewrote an unchanged golden file")
	}
	for name, r := range run(t, set, false) {
		if r.Failed() {
			t.Errorf("case %s fails after update: %v %s", name, r.Err, r.Diff)
		}
	}
}

// TestRunMissingGolden checks that a case without a golden file fails with
// an error that says how to create it.
func TestRunMissingGolden(t *testing.T) {
	set := copySet(t)
	path := goldenPath(set, "minimal")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	r := run(t, set, false)["minimal"]
	if !r.Failed() || r.Err == nil {
		t.Fatalf("case minimal: Failed() = %v, Err = %v; want an error", r.Failed(), r.Err)
	}
	want := "no golden file " + path + ": run with --update to create it"
	if diff := cmp.Diff(want, r.Err.Error()); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Run without update created %s", path)
	}
}

// TestRunRenderError checks that a case whose parent does not render fails
// with the render error, which names the parent and the template line.
func TestRunRenderError(t *testing.T) {
	const noImage = "apiVersion: example.loom.dev/v1alpha1\nkind: MyResource\nmetadata:\n  name: hello\nspec:\n  replicas: 1\n"
	tests := []struct {
		name   string
		schema bool
		want   string
	}{
		{
			name: "without a schema the template refuses it", want: `render MyResource default/hello: deployment.yaml:24: at <required "spec.image is required" .Spec.image>: error calling required: spec.image is required`,
		},
		{
			name: "with a schema the API server's validation refuses it", schema: true,
			want: `tests/minimal.yaml: MyResource.example.loom.dev "hello" is invalid: [spec.image: Required value, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := copySet(t)
			if !tt.schema {
				set = withoutSchema(t, set)
			}
			writeFile(t, filepath.Join(set.Dir, render.TestsDir, "minimal.yaml"), noImage)
			r := run(t, set, false)["minimal"]
			if !r.Failed() || r.Err == nil {
				t.Fatalf("case minimal: Failed() = %v, Err = %v; want an error", r.Failed(), r.Err)
			}
			got := strings.TrimPrefix(r.Err.Error(), set.Dir+string(filepath.Separator))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// withoutSchema rewrites the set's loom.yaml without its schema block
// (and so without its versions, which need it) and loads it again.
func withoutSchema(t *testing.T, set *render.Set) *render.Set {
	t.Helper()
	c := set.Config
	c.Schema, c.Versions = nil, nil
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(set.Dir, config.File), string(b))
	out, err := render.Load(set.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if out.Config.Schema != nil {
		t.Fatal("the schema is still there")
	}
	return out
}

// TestRunNoTests checks a set without a tests folder: no cases, no error.
func TestRunNoTests(t *testing.T) {
	set := copySet(t)
	if err := os.RemoveAll(filepath.Join(set.Dir, render.TestsDir)); err != nil {
		t.Fatal(err)
	}
	results, err := Run(set, false)
	if err != nil || len(results) != 0 {
		t.Errorf("Run = %v, %v; want no results and no error", results, err)
	}
}

// TestRenderFileNamespace checks that parents without a namespace get the
// default one and that others keep theirs, in one stream in input order.
func TestRenderFileNamespace(t *testing.T) {
	set := copySet(t)
	path := filepath.Join(t.TempDir(), "parents.yaml")
	writeFile(t, path, `apiVersion: example.loom.dev/v1alpha1
kind: MyResource
metadata:
  name: a
spec:
  image: nginx
---
apiVersion: example.loom.dev/v1alpha1
kind: MyResource
metadata:
  name: b
  namespace: shop
spec:
  image: nginx
`)
	out, err := RenderFile(set, path, "dev")
	if err != nil {
		t.Fatal(err)
	}
	children, err := render.ReadParents(strings.NewReader(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range children {
		got = append(got, c.GetKind()+" "+c.GetNamespace()+"/"+c.GetName())
	}
	want := []string{"Service dev/a", "Deployment dev/a", "Service shop/b", "Deployment shop/b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children mismatch (-want +got):\n%s", diff)
	}
	if _, err := RenderFile(set, filepath.Join(t.TempDir(), "missing.yaml"), "dev"); !os.IsNotExist(err) {
		t.Errorf("RenderFile of a missing file: %v, want a not-exist error", err)
	}
}
