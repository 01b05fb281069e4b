package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README is a front door: under 300 lines, and its first 40 hold the
// two commands that set everything up and the offline render beside them.
func TestREADMEIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) >= 300 {
		t.Errorf("README.md has %d lines, want under 300: move the detail into docs/", len(lines))
	}
	head := strings.Join(lines[:min(40, len(lines))], "\n")
	for _, want := range []string{
		"make run",
		"make test",
		"make build",
		"bin/loom render -t templates/myresource -f examples/myresource.yaml",
		"8–20 minutes",
	} {
		if !strings.Contains(head, want) {
			t.Errorf("README.md's first 40 lines do not hold %q", want)
		}
	}
}
