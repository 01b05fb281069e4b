package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// loom render of a chart set takes Helm's --values and --set, with no
// parent file: the values are the spec of a parent named by --name (as
// helm template's NAME); each document follows a `# Source:` comment as
// helm template prints it, and --show-only keeps the documents of the
// templates it names.
func TestRenderChartSetFromValues(t *testing.T) {
	dir := chartSet(t)
	tmp := writeFiles(t, t.TempDir(), map[string]string{
		"values.yaml":  "replicaCount: 3\ndb: {enabled: false}\n",
		"lookups.yaml": jobDone,
	})
	args := []string{"render", "-t", dir, "--values", filepath.Join(tmp, "values.yaml"), "--set", "replicaCount=4",
		"--name", "shop", "-n", "team-a", "--lookups", filepath.Join(tmp, "lookups.yaml")}
	out, err := execute(t, "", args...)
	if err != nil {
		t.Fatalf("loom render --values --set: %v\n%s", err, out)
	}
	for _, want := range []string{
		"---\n# Source: web/templates/deployment.yaml\napiVersion: apps/v1\nkind: Deployment\n",
		"replicas: 4\n", // --set wins over --values
		"name: shop-web\n",
		"# Source: web/templates/service.yaml\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output has no %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "---\n") != strings.Count(out, "# Source: ") {
		t.Errorf("%d documents, %d # Source: comments:\n%s", strings.Count(out, "---\n"), strings.Count(out, "# Source: "), out)
	}
	only, err := execute(t, "", append(args, "--show-only", "templates/deployment.yaml")...)
	if err != nil {
		t.Fatalf("--show-only: %v\n%s", err, only)
	}
	if strings.Count(only, "---\n") != 1 || !strings.Contains(only, "kind: Deployment\n") {
		t.Errorf("--show-only templates/deployment.yaml printed:\n%s", only)
	}
	if _, err := execute(t, "", append(args, "--show-only", "templates/nothere.yaml")...); err == nil || !strings.Contains(err.Error(), "templates/nothere.yaml") {
		t.Errorf("--show-only of a template that renders nothing: %v", err)
	}
	// -f is the parent file, as kubectl's: not also --values.
	if _, err := execute(t, "", "render", "-t", dir, "-f", filepath.Join(tmp, "values.yaml"), "--set", "a=b"); err == nil || !strings.Contains(err.Error(), "--values") {
		t.Errorf("-f with --set: %v, want an error that says to use -f or --values/--set", err)
	}
	if _, err := execute(t, "", "render", "-t", dir); err == nil || !strings.Contains(err.Error(), "-f") {
		t.Errorf("neither -f nor --values: %v", err)
	}
}

// loom test takes the set as -t, as render and crd do, and still as an
// argument.
func TestTestCommandTakesTemplatesFlag(t *testing.T) {
	dir := copySet(t)
	for _, args := range [][]string{{"test", "-t", dir}, {"test", dir}, {"test", "--templates", dir}} {
		if out, err := execute(t, "", args...); err != nil || !strings.Contains(out, "passed, 0 failed") {
			t.Errorf("loom %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if _, err := execute(t, "", "test"); err == nil || !strings.Contains(err.Error(), "-t SET") {
		t.Errorf("loom test with no set: %v", err)
	}
}
