package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryCommandRefusesAComputedKind checks that a set whose kind comes
// out of a template action is refused by every command that loads it, with
// the same message, at load: not by loom rbac alone. On the old code loom
// render, loom test, loom crd and loom diff accepted the set (the kind
// renders ConfigMap) and only loom rbac refused it.
func TestEveryCommandRefusesAComputedKind(t *testing.T) {
	dir := copySet(t)
	path := filepath.Join(dir, "configmap.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	computed := strings.Replace(string(b), "kind: ConfigMap", `kind: {{ "ConfigMap" }}`, 1)
	if computed == string(b) {
		t.Fatal("configmap.yaml no longer holds the line this test edits")
	}
	if err := os.WriteFile(path, []byte(computed), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = `configmap.yaml:4: kind is computed ({{ "ConfigMap" }}): make it literal, so that the kinds the set renders are known`
	example := filepath.Join(repoRoot, "examples", "myresource.yaml")
	for _, args := range [][]string{
		{"rbac", "-t", dir},
		{"render", "-t", dir, "-f", example},
		{"test", dir},
		{"crd", "-t", dir},
	} {
		out, err := execute(t, "", args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("loom %s: err = %v, want one holding %q; output:\n%s", args[0], err, want, out)
		}
	}
}
