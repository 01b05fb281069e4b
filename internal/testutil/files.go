package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFiles writes each file of files (a path relative to dir, and its
// text) under dir, making the folders it needs.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
