package env

import (
	"os"
	"path/filepath"
	"testing"
)

// Fixture returns the text of testdata/name in the suite's folder: a YAML
// fixture (a parent, a set's file) that several tests share.
func Fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(name)))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return string(b)
}
