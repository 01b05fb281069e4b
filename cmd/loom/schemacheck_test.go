package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/internal/testutil"
)

// TestRenderAndTestCheckTheSchema: with the schema in the shipped loom.yaml, loom render
// and loom test refuse a set whose templates read paths the schema cannot
// hold, naming each one at its file:line; the shipped set passes.
func TestRenderAndTestCheckTheSchema(t *testing.T) {
	dir := copySet(t)
	b, err := os.ReadFile(filepath.Join(dir, config.File))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := config.Parse(b); err != nil || c.Schema == nil {
		t.Fatalf("the shipped set's loom.yaml has no schema (err %v)", err)
	}
	render := []string{"render", "-t", dir, "-f", filepath.Join(repoRoot, "examples", "myresource-full.yaml")}
	if out, err := execute(t, "", render...); err != nil {
		t.Fatalf("loom render of the shipped set with its schema: %v\n%s", err, out)
	}
	testutil.EditFile(t, filepath.Join(dir, "deployment.yaml"), "{{ .Spec.replicas }}", "{{ .Spec.replcas }}")
	testutil.EditFile(t, filepath.Join(dir, "service.yaml"), "{{ .Spec.port | default 8080 }}", "{{ .Spec.ports | default 8080 }}")
	want := []string{
		"deployment.yaml:8: .Spec.replcas is not in the schema of MyResource (did you mean replicas?)",
		"service.yaml:12: .Spec.ports is not in the schema of MyResource (did you mean port?)",
	}
	for _, args := range [][]string{render, {"test", dir}} {
		out, err := execute(t, "", args...)
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("loom %s: err = %v, want one holding %q; output:\n%s", args[0], err, w, out)
			}
		}
	}
}
