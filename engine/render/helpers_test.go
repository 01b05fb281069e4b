package render

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/render/yamldoc"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// testConfig is the loom.yaml of the in-memory sets the tests build.
const testConfig = `parent:
  apiVersion: example.com/v1
  kind: App
`

// fsOf builds an in-memory template set folder. It adds testConfig as
// loom.yaml unless files has one.
func fsOf(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, text := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(text)}
	}
	if _, ok := files[config.File]; !ok {
		fsys[config.File] = &fstest.MapFile{Data: []byte(testConfig)}
	}
	return fsys
}

// loadSet loads an in-memory set and fails the test when it does not load.
func loadSet(t testing.TB, files map[string]string) *Set {
	t.Helper()
	s, err := LoadFS(fsOf(files), "testset")
	if err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	return s
}

// fixture decodes an inline YAML fixture into an unstructured object.
func fixture(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	obj, err := yamldoc.Decode([]byte(doc))
	if err != nil {
		t.Fatalf("decode fixture: %v\n%s", err, doc)
	}
	return &unstructured.Unstructured{Object: obj}
}

// app returns an App parent named web in namespace default, with uid
// uid-1 and the given spec (a YAML mapping, indented by two spaces).
func app(t testing.TB, spec string) *unstructured.Unstructured {
	t.Helper()
	doc := "apiVersion: example.com/v1\nkind: App\nmetadata:\n  name: web\n  namespace: default\n  uid: uid-1\n"
	if strings.TrimSpace(spec) != "" {
		doc += "spec:\n" + spec
	}
	return fixture(t, doc)
}

// mustRender renders parent with s and fails the test on error.
func mustRender(t testing.TB, s *Set, parent *unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	out, err := s.Render(parent)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return out
}

// renderErr renders parent with s and returns the error, failing the test
// when there is none or when it is not an *Error.
func renderErr(t testing.TB, s *Set, parent *unstructured.Unstructured) string {
	t.Helper()
	_, err := s.Render(parent)
	if err == nil {
		t.Fatal("Render succeeded, want an error")
	}
	var re *Error
	if !errors.As(err, &re) {
		t.Fatalf("Render error is %T, not *Error: %v", err, err)
	}
	if !errors.Is(err, ErrRender) {
		t.Errorf("errors.Is(%v, ErrRender) = false", err)
	}
	return err.Error()
}

// execText runs one file of s for parent and returns the raw text it
// prints, before YAML decoding.
func execText(t testing.TB, s *Set, file string, parent *unstructured.Unstructured) (string, error) {
	t.Helper()
	r, err := s.pool.get()
	if err != nil {
		t.Fatalf("renderer: %v", err)
	}
	defer s.pool.put(r)
	var buf bytes.Buffer
	err = s.execute(r, &buf, file, templateData(parent.DeepCopy().Object))
	return buf.String(), err
}

// configMap is a template rendering a ConfigMap named name whose data is
// the YAML mapping in data (indented by two spaces).
func configMap(name, data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n" + data
}

// names lists "Kind name" of each object, in order.
func names(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetKind() + " " + o.GetName()
	}
	return out
}

// wantPrefix fails the test when msg does not start with prefix.
func wantPrefix(t testing.TB, msg, prefix string) {
	t.Helper()
	if !strings.HasPrefix(msg, prefix) {
		t.Errorf("error %.500q\ndoes not start with %q", msg, prefix)
	}
}

// wantContains fails the test when msg does not contain each of subs.
func wantContains(t testing.TB, msg string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(msg, sub) {
			t.Errorf("error %.500q\ndoes not contain %q", msg, sub)
		}
	}
}
