package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-operator/loom/engine/config"

	"github.com/loom-operator/loom/internal/testutil"
)

// loom init makes a set from a chart: loom.yaml declares the chart's
// cluster-scoped kinds and the kinds it looks up, the golden case passes,
// and a second init into the same folder is refused.
func TestInitFromChart(t *testing.T) {
	src := filepath.Join(t.TempDir(), "ops")
	testutil.WriteFiles(t, src, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: ops\nversion: 0.1.0\n",
		"values.yaml": "replicas: 1\n",
		"templates/role.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .Release.Name }}-ops
rules: []
`,
		"templates/cm.yaml": `{{- $s := lookup "v1" "Secret" .Release.Namespace "creds" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-ops
data:
  replicas: {{ .Values.replicas | quote }}
  token: {{ randAlphaNum 8 | quote }}
`,
	})
	dir := filepath.Join(t.TempDir(), "set")
	out, err := execute(t, "", "init", dir, "--chart", src, "--kind", "Ops", "--api-version", "ops.example.com/v1")
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "loom.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(raw)
	if err != nil {
		t.Fatalf("loom.yaml: %v\n%s", err, raw)
	}
	if cfg.Chart != "chart" || cfg.Parent.Kind != "Ops" || cfg.Parent.APIVersion != "ops.example.com/v1" {
		t.Errorf("loom.yaml: %+v", cfg)
	}
	if len(cfg.ClusterScoped) != 1 || cfg.ClusterScoped[0].Kind != "ClusterRole" {
		t.Errorf("clusterScoped %v, want the chart's ClusterRole", cfg.ClusterScoped)
	}
	if len(cfg.Lookups) != 1 || cfg.Lookups[0].Kind != "Secret" {
		t.Errorf("lookups %v, want Secret", cfg.Lookups)
	}
	golden, err := os.ReadFile(filepath.Join(dir, "tests", "example.golden.yaml"))
	if err != nil || !strings.Contains(string(golden), "name: example-ops") {
		t.Fatalf("golden file: %v\n%s", err, golden)
	}
	if out, err := execute(t, "", "test", dir); err != nil || !strings.Contains(out, "1 passed, 0 failed") {
		t.Fatalf("loom test: %v\n%s", err, out)
	}
	if out, err := execute(t, "", "crd", "-t", dir); err != nil || !strings.Contains(out, "kind: Ops") || !strings.Contains(out, "replicas:") {
		t.Fatalf("loom crd: %v\n%s", err, out)
	}
	if _, err := execute(t, "", "init", dir, "--chart", src, "--kind", "Ops"); err == nil || !strings.Contains(err.Error(), "already holds a loom.yaml") {
		t.Errorf("a second init: %v", err)
	}
}

// A failed loom init leaves nothing behind (it builds the set in a
// temporary folder beside DIR and renames it into place), so the next run,
// with the mistake fixed, succeeds.
func TestInitFailureLeavesNothing(t *testing.T) {
	src := filepath.Join(t.TempDir(), "bad")
	testutil.WriteFiles(t, src, map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: bad\nversion: 0.1.0\n",
		"values.yaml":        "replicas: 1\n",
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  r: {{ .Values.replicas | quote }}\n",
		"templates/bad.yaml": "{{ fail \"this chart does not render with its defaults\" }}\n",
	})
	parent := t.TempDir()
	dir := filepath.Join(parent, "set")
	if _, err := execute(t, "", "init", dir, "--chart", src, "--kind", "Bad", "--api-version", "bad.example.com/v1"); err == nil {
		t.Fatal("init of a chart that does not render succeeded")
	}
	if entries, err := os.ReadDir(parent); err != nil || len(entries) != 0 {
		names := []string{}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("a failed init left %v (err %v), want nothing", names, err)
	}
	if err := os.Remove(filepath.Join(src, "templates", "bad.yaml")); err != nil {
		t.Fatal(err)
	}
	if out, err := execute(t, "", "init", dir, "--chart", src, "--kind", "Bad", "--api-version", "bad.example.com/v1"); err != nil {
		t.Fatalf("init after the fix: %v\n%s", err, out)
	}
	if out, err := execute(t, "", "test", dir); err != nil || !strings.Contains(out, "1 passed, 0 failed") {
		t.Fatalf("loom test: %v\n%s", err, out)
	}
}

// loom init without --chart scaffolds a plain set of Loom templates, with
// a schema and a golden case, that loom test, loom crd and loom render
// accept; a folder that is not empty is refused and left as it was.
func TestInitPlainSet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "greeter")
	out, err := execute(t, "", "init", dir, "--kind", "Greeter", "--api-version", "greet.example.com/v1")
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "loom.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(raw)
	if err != nil {
		t.Fatalf("loom.yaml: %v\n%s", err, raw)
	}
	if cfg.Chart != "" || cfg.Parent.Kind != "Greeter" || cfg.Parent.APIVersion != "greet.example.com/v1" || cfg.Schema == nil {
		t.Errorf("loom.yaml: %+v", cfg)
	}
	if out, err := execute(t, "", "test", dir); err != nil || !strings.Contains(out, "1 passed, 0 failed") {
		t.Fatalf("loom test: %v\n%s", err, out)
	}
	if out, err := execute(t, "", "crd", "-t", dir); err != nil || !strings.Contains(out, "kind: Greeter") {
		t.Fatalf("loom crd: %v\n%s", err, out)
	}
	out, err = execute(t, "", "render", "-t", dir, "-f", filepath.Join(dir, "tests", "example.yaml"))
	if err != nil || !strings.Contains(out, "kind: ConfigMap") {
		t.Fatalf("loom render: %v\n%s", err, out)
	}
	other := filepath.Join(t.TempDir(), "busy")
	testutil.WriteFiles(t, other, map[string]string{"notes.txt": "mine\n"})
	if _, err := execute(t, "", "init", other, "--kind", "Greeter"); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("init into a folder that is not empty: %v", err)
	}
	if entries, _ := os.ReadDir(other); len(entries) != 1 {
		t.Errorf("init changed a folder it refused: %d entries", len(entries))
	}
}
