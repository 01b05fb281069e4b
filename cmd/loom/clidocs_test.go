package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// cliReferenceDir holds one Markdown page per command, generated from the
// cobra commands by cobra's own doc generator.
const cliReferenceDir = "../../docs/reference/cli"

// genCLIReference writes the CLI reference, one page per command, into
// dir, and returns the pages' names.
func genCLIReference(t *testing.T, dir string) []string {
	t.Helper()
	root := newRootCommand()
	var disable func(*cobra.Command)
	disable = func(c *cobra.Command) {
		c.DisableAutoGenTag = true // no date: the pages must not change by themselves
		for _, s := range c.Commands() {
			disable(s)
		}
	}
	disable(root)
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		t.Fatal(err)
	}
	return mdFiles(t, dir)
}

func mdFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	slices.Sort(names)
	return names
}

// docs/reference/cli is what cobra's doc generator makes of the commands
// today: a flag, a command or a help text changed without the reference
// fails here. -update rewrites it.
func TestCLIReferenceIsCurrent(t *testing.T) {
	tmp := t.TempDir()
	gen := genCLIReference(t, tmp)
	if len(gen) < 10 {
		t.Fatalf("generated %d pages, want one per command: %v", len(gen), gen)
	}
	if *update {
		if err := os.MkdirAll(cliReferenceDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, old := range mdFiles(t, cliReferenceDir) {
			if !slices.Contains(gen, old) {
				if err := os.Remove(filepath.Join(cliReferenceDir, old)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, name := range gen {
		b, err := os.ReadFile(filepath.Join(tmp, name))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(cliReferenceDir, name)
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v: run go test ./cmd/loom -run TestCLIReferenceIsCurrent -update", err)
			continue
		}
		if !bytes.Equal(have, b) {
			t.Errorf("docs/reference/cli/%s is stale (-file +generated):\n%s\nrun go test ./cmd/loom -run TestCLIReferenceIsCurrent -update",
				name, cmp.Diff(string(have), string(b)))
		}
	}
	if have := mdFiles(t, cliReferenceDir); !slices.Equal(have, gen) {
		t.Errorf("docs/reference/cli holds %s, the commands make %s", strings.Join(have, " "), strings.Join(gen, " "))
	}
}
