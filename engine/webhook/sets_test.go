package webhook

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loom-operator/loom/engine/render"
)

// writeSet writes a set of one ConfigMap template with loom.yaml under
// root/name.
func writeSet(t *testing.T, root, name, loomYAML string) {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"loom.yaml": loomYAML,
		"cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n",
	}
	for f, s := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const (
	webOneVersion = "parent: {apiVersion: example.com/v1, kind: WebApp}\nschema: {spec: {replicas: integer}}\n"
	webVersions   = webOneVersion + "versions:\n- name: v1alpha1\n  schema: {spec: {size: integer}}\n  conversion: {moves: [{rename: {from: spec.size, to: spec.replicas}}]}\n"
	dbOneVersion  = "parent: {apiVersion: example.com/v1, kind: Database}\nschema: {spec: {size: integer}}\n"
)

// TestSetsLoad loads the converters of a folder of sets: only the sets of
// several versions register, a set that serves one version again is
// removed, and Changed says when the kinds changed.
func TestSetsLoad(t *testing.T) {
	root := t.TempDir()
	writeSet(t, root, "web", webVersions)
	writeSet(t, root, "db", dbOneVersion)
	changes := 0
	reg := NewRegistry()
	s := &Sets{Root: root, Registry: reg, Of: converterOfTest, Changed: func() { changes++ }}
	web := schema.GroupKind{Group: "example.com", Kind: "WebApp"}
	steps := []struct {
		name    string
		edit    func()
		kinds   []schema.GroupKind
		changes int
	}{
		{name: "first load", edit: func() {}, kinds: []schema.GroupKind{web}, changes: 1},
		{name: "nothing changed", edit: func() {}, kinds: []schema.GroupKind{web}, changes: 1},
		{name: "a broken loom.yaml keeps its converter", edit: func() { writeSet(t, root, "web", "parent: [") }, kinds: []schema.GroupKind{web}, changes: 1},
		{name: "one version again", edit: func() { writeSet(t, root, "web", webOneVersion) }, kinds: []schema.GroupKind{}, changes: 2},
	}
	for _, st := range steps {
		st.edit()
		err := s.Load()
		if diff := cmp.Diff(st.kinds, reg.Kinds()); diff != "" {
			t.Errorf("%s: kinds (-want +got):\n%s (load error: %v)", st.name, diff, err)
		}
		if changes != st.changes {
			t.Errorf("%s: Changed called %d times, want %d", st.name, changes, st.changes)
		}
	}
}

// converterOfTest is the ConverterOf of the tests: loom run's.
func converterOfTest(s *render.Set) Converter { return SetConverter(s) }
