package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/apply"
	"github.com/loom-operator/loom/internal/testutil"
)

const repoRoot = "../.."

// execute runs the loom command line with args and stdin, and returns what
// it printed and its error.
func execute(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	return out.String(), err
}

// copySet copies the shipped MyResource set into a folder the test may edit.
func copySet(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "myresource")
	if err := testutil.CopyDir(filepath.Join(repoRoot, "templates", "myresource"), dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestRender(t *testing.T) {
	set := filepath.Join(repoRoot, "templates", "myresource")
	minimal := filepath.Join(repoRoot, "examples", "myresource.yaml")
	full := filepath.Join(repoRoot, "examples", "myresource-full.yaml")
	example, err := os.ReadFile(minimal)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := execute(t, "", "render", "-t", set, "-f", minimal)
	if err != nil {
		t.Fatalf("render: %v\n%s", err, fromFile)
	}
	tests := []struct {
		name    string
		stdin   string
		args    []string
		want    []string // substrings of the output
		wantErr string
	}{
		{name: "one parent", args: []string{"-f", minimal},
			want: []string{"kind: Deployment", "kind: Service", "name: hello"}},
		{name: "several files", args: []string{"-f", minimal, "-f", full},
			want: []string{"name: hello", "kind: ConfigMap", "name: web-config", "name: web"}},
		{name: "another namespace for parents that name none", args: []string{"-f", minimal, "-n", "shop"},
			want: []string{"namespace: shop"}},
		{name: "missing file", args: []string{"-f", "nope.yaml"}, wantErr: "nope.yaml"},
		{name: "not a parent of this set", stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
			args: []string{"-f", "-"}, wantErr: "ConfigMap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := execute(t, tt.stdin, append([]string{"render", "-t", set}, tt.args...)...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(out+err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q; output:\n%s", err, tt.wantErr, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v\n%s", err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Fatalf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	t.Run("stdin is the same as the file", func(t *testing.T) {
		fromStdin, err := execute(t, string(example), "render", "-t", set, "-f", "-")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(fromFile, fromStdin); diff != "" {
			t.Errorf("-f - differs from -f FILE (-file +stdin):\n%s", diff)
		}
	})
}

func TestRenderErrorNamesFileAndLine(t *testing.T) {
	dir := copySet(t)
	path := filepath.Join(dir, "service.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), "{{ .Spec.port | default 8080 }}", "{{ .Spec.port | nosuchfunc }}", 1)
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, "", "render", "-t", dir, "-f", filepath.Join(repoRoot, "examples", "myresource.yaml"))
	if err == nil || !strings.Contains(err.Error(), "service.yaml:12") {
		t.Fatalf("err = %v, want one naming service.yaml:12; output:\n%s", err, out)
	}
}

// TestRenderAndTestRefuseRandomFuncs checks that loom render and loom test
// refuse a set that calls a function whose value differs on every render,
// as Loom's controller does, naming the file and line. randInt 0 1 is
// always 0, so the old code rendered the same children and passed.
func TestRenderAndTestRefuseRandomFuncs(t *testing.T) {
	dir := copySet(t)
	path := filepath.Join(dir, "service.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	random := strings.Replace(string(b), "{{ .Spec.port | default 8080 }}", "{{ add (.Spec.port | default 8080) (randInt 0 1) }}", 1)
	if random == string(b) {
		t.Fatal("service.yaml no longer holds the line this test edits")
	}
	if err := os.WriteFile(path, []byte(random), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = "service.yaml:12: template uses randInt, whose value differs on every render"
	for _, args := range [][]string{
		{"render", "-t", dir, "-f", filepath.Join(repoRoot, "examples", "myresource.yaml")},
		{"test", dir},
	} {
		out, err := execute(t, "", args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("loom %s: err = %v, want one holding %q; output:\n%s", args[0], err, want, out)
		}
	}
}

func TestGoldenCommand(t *testing.T) {
	dir := copySet(t)
	out, err := execute(t, "", "test", filepath.Dir(dir))
	if err != nil || !strings.Contains(out, "7 passed, 0 failed") {
		t.Fatalf("shipped cases: err %v\n%s", err, out)
	}

	// A template change that the golden files do not expect fails with a diff.
	path := filepath.Join(dir, "deployment.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "spec:\n  replicas:", "spec:\n  minReadySeconds: 5\n  replicas:", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = execute(t, "", "test", dir)
	if err == nil || !strings.Contains(out, "FAIL") || !strings.Contains(out, "+  minReadySeconds: 5") {
		t.Fatalf("after an edit: err %v, want a failure with a diff adding minReadySeconds:\n%s", err, out)
	}

	// --update accepts it, and the cases pass again.
	if out, err = execute(t, "", "test", "--update", dir); err != nil || !strings.Contains(out, "7 updated") {
		t.Fatalf("--update: err %v\n%s", err, out)
	}
	if out, err = execute(t, "", "test", dir); err != nil || !strings.Contains(out, "7 passed, 0 failed") {
		t.Fatalf("after --update: err %v\n%s", err, out)
	}
}

func TestEveryCommandExplainsItselfWithAnExample(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"render", "--help"}, {"test", "--help"}, {"diff", "--help"}, {"run", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, err := execute(t, "", args...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "Examples:") || !strings.Contains(out, "loom ") {
				t.Errorf("help has no example:\n%s", out)
			}
		})
	}
}

// What diff compares leaves out what changes on every write.
func TestDiffComparesWithoutVolatileFields(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": "c", "resourceVersion": "7", "generation": int64(3),
			"annotations":   map[string]any{apply.AnnotationApplied: "abc"},
			"managedFields": []any{map[string]any{"manager": "loom"}},
		},
		"data": map[string]any{"a": "1"},
	}}
	after := live.DeepCopy()
	after.SetResourceVersion("8")
	after.SetGeneration(4)
	after.SetAnnotations(map[string]string{apply.AnnotationApplied: "def"})
	a, err := comparable(live)
	if err != nil {
		t.Fatal(err)
	}
	b, err := comparable(after)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("a write that changed only volatile fields shows as a change (-live +after):\n%s", diff)
	}
	want := "apiVersion: v1\ndata:\n  a: \"1\"\nkind: ConfigMap\nmetadata:\n  name: c\n"
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("comparable (-want +got):\n%s", diff)
	}
	if c, _ := comparable(nil); c != "" || len(lines(c)) != 0 {
		t.Errorf("an absent object must compare as nothing, got %q", c)
	}
}
