package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRenderInputErrors checks that input that is not a parent of the
// set, or not there, is named for what it is, and never blamed on
// loom.yaml. On the old code: a ConfigMap or plain YAML was "loom.yaml:
// parent is /v1, Kind=ConfigMap, but ...", a top-level list was "not
// []interface {}", an empty file rendered nothing and succeeded, -t of a
// missing folder was "loom.yaml: open loom.yaml: no such file", and loom
// test of a missing path was "lstat ...".
func TestRenderInputErrors(t *testing.T) {
	set := filepath.Join(repoRoot, "templates", "myresource")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cm := write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
	plain := write("plain.yaml", "image: nginx\nreplicas: 2\n")
	list := write("list.yaml", "- apiVersion: example.loom.dev/v1alpha1\n  kind: MyResource\n")
	empty := write("empty.yaml", "# nothing here\n---\n")
	noSet := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a ConfigMap", []string{"render", "-t", set, "-f", cm},
			cm + ": object 1 is a v1 ConfigMap (x), not a parent of this set, whose parent is example.loom.dev/v1alpha1 MyResource (loom.yaml)"},
		{"plain YAML", []string{"render", "-t", set, "-f", plain},
			plain + ": object 1 is not a Kubernetes object (it has no apiVersion and kind); this set's parent is example.loom.dev/v1alpha1 MyResource (loom.yaml)"},
		{"a top-level list", []string{"render", "-t", set, "-f", list},
			"read " + list + ": document 1 is a YAML list, not an object: give each object as its own document (separated by ---), or as the items of a v1 List"},
		{"an empty file", []string{"render", "-t", set, "-f", empty},
			empty + " holds no objects: give at least one parent"},
		{"empty stdin", []string{"render", "-t", set, "-f", "-"},
			"stdin holds no objects: give at least one parent"},
		{"-t of a missing folder", []string{"render", "-t", "/nonexistent", "-f", cm},
			"load template set /nonexistent: no such folder"},
		{"-t of a folder that is not a set", []string{"render", "-t", noSet, "-f", cm},
			"load template set " + noSet + ": loom.yaml: there is no loom.yaml in " + noSet + ": it is not a template set's folder"},
		{"crd -t of a missing folder", []string{"crd", "-t", "/nonexistent"},
			"load template set /nonexistent: no such folder"},
		{"test of a missing path", []string{"test", "/nonexistent"},
			"/nonexistent: no such file or folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute(t, "", tc.args...)
			if err == nil {
				t.Fatalf("loom %s succeeded, want %q; output:\n%s", strings.Join(tc.args, " "), tc.want, out)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRenderReadsAFolder checks that -f DIR reads the folder's .yaml, .yml
// and .json files, in name order, as kubectl -f does. On the old code it
// failed: "read DIR: is a directory".
func TestRenderReadsAFolder(t *testing.T) {
	set := filepath.Join(repoRoot, "templates", "myresource")
	minimal := filepath.Join(repoRoot, "examples", "myresource.yaml")
	full := filepath.Join(repoRoot, "examples", "myresource-full.yaml")
	want, err := execute(t, "", "render", "-t", set, "-f", minimal, "-f", full)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, src := range map[string]string{"a.yaml": minimal, "b.yml": full} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("not read\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := execute(t, "", "render", "-t", set, "-f", dir)
	if err != nil {
		t.Fatalf("render -f DIR: %v\n%s", err, got)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("render -f DIR differs from -f each file (-want +got):\n%s", diff)
	}
	if _, err := execute(t, "", "render", "-t", set, "-f", t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds no .yaml, .yml or .json files") {
		t.Errorf("render -f EMPTYDIR: err = %v, want one saying the folder holds no files to read", err)
	}
}

// TestNoKubeconfigSaysWhereToPutOne checks the message of a command that
// needs a cluster when there is no kubeconfig at all. On the old code it
// was client-go's "try setting KUBERNETES_MASTER environment variable".
func TestNoKubeconfigSaysWhereToPutOne(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := restConfig(kubeTarget{})
	const want = "no kubeconfig: pass --kubeconfig, set $KUBECONFIG, or write ~/.kube/config (in a pod, Loom uses the pod's service account)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}
