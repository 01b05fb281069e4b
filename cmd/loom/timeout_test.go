package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRenderAndTestStopAtTimeout checks that loom render and loom test
// stop a template that loops for ever at --timeout, naming the loop's file
// and line. On the old code both ran until killed.
func TestRenderAndTestStopAtTimeout(t *testing.T) {
	dir := copySet(t)
	loop := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-loop\n" +
		"{{- range until 1000000 }}{{ range until 1000000 }}{{ end }}{{ end }}\n"
	if err := os.WriteFile(filepath.Join(dir, "loop.yaml"), []byte(loop), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = "loop.yaml:5: the render did not finish in time (a loop that never ends?): it ran for 200ms (--timeout)"
	for _, args := range [][]string{
		{"render", "--timeout", "200ms", "-t", dir, "-f", filepath.Join(repoRoot, "examples", "myresource.yaml")},
		{"test", "--timeout", "200ms", dir},
	} {
		start := time.Now()
		out, err := execute(t, "", args...)
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("loom %s took %s with --timeout 200ms", args[0], took)
		}
		if err == nil || !strings.Contains(err.Error()+out, want) {
			t.Errorf("loom %s: err = %v, want one holding %q; output:\n%s", args[0], err, want, out)
		}
	}
}

// TestRenderStopsChartSetAtTimeout checks that loom render stops a chart
// set's template that loops for ever at --timeout too, naming the loop by
// its file's path in the set and its line. On the old code it ran until
// killed.
func TestRenderStopsChartSetAtTimeout(t *testing.T) {
	dir := chartSet(t)
	loop := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-loop\n" +
		"{{- range until 1000000 }}{{ range until 1000000 }}{{ end }}{{ end }}\n"
	if err := os.WriteFile(filepath.Join(dir, "chart", "templates", "loop.yaml"), []byte(loop), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = "chart/templates/loop.yaml:5: the render did not finish in time (a loop that never ends?): it ran for 200ms (--timeout)"
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := execute(t, "", "render", "--timeout", "200ms", "-t", dir, "-f", filepath.Join(dir, "tests", "shop.yaml"))
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		if r.err == nil || !strings.Contains(r.err.Error()+r.out, want) {
			t.Errorf("loom render: err = %v, want one holding %q; output:\n%s", r.err, want, r.out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("loom render still running 20s after --timeout 200ms")
	}
}
