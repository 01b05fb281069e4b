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
