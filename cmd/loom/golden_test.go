package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-operator/loom/engine/offline"
	"github.com/loom-operator/loom/engine/render"
	"github.com/loom-operator/loom/internal/testflags"
)

// update rewrites golden files: go test ./... -update (make golden).
var update = testflags.Update

// The shipped template sets, the example sets make run starts a second
// Loom on (examples/clusters), and the example of the management modes
// (examples/modes: create-only, observe, patch, full, drift warn and ignore) pass their own golden cases (the same check
// as `loom test templates/`), so `go test ./...` catches a template change
// that the golden files do not expect, and -update accepts it.
func TestShippedTemplateSets(t *testing.T) {
	var sets []*render.Set
	for _, root := range []string{"templates", filepath.Join("examples", "clusters"), filepath.Join("examples", "modes")} {
		found, err := render.LoadAll(filepath.Join(repoRoot, root))
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, found...)
	}
	for _, set := range sets {
		results, err := offline.Run(set, *update)
		if err != nil {
			t.Fatalf("%s: %v", set.Dir, err)
		}
		if len(results) == 0 {
			t.Errorf("%s has no golden cases in %s/", set.Dir, render.TestsDir)
		}
		for _, r := range results {
			t.Run(filepath.Base(set.Dir)+"/"+r.Case, func(t *testing.T) {
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				if r.Diff != "" {
					t.Errorf("output differs from the golden file (rerun with -update to accept):\n%s", r.Diff)
				}
			})
		}
	}
}

// `loom render` of the shipped examples, as a user sees it.
func TestRenderExamplesGolden(t *testing.T) {
	got, err := execute(t, "", "render", "-t", filepath.Join(repoRoot, "templates", "myresource"),
		"-f", filepath.Join(repoRoot, "examples", "myresource.yaml"),
		"-f", filepath.Join(repoRoot, "examples", "myresource-full.yaml"))
	if err != nil {
		t.Fatalf("render: %v\n%s", err, got)
	}
	path := filepath.Join("testdata", "render-examples.golden.yaml")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/loom -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("loom render of the examples differs from %s (-golden +rendered; rerun with -update to accept):\n%s", path, diff)
	}
}
