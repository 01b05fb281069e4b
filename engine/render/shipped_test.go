package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/render/yamldoc"
)

// shippedDocuments returns the documents the shipped myresource set
// renders for each of its test parents: as the templates write them, and
// as MarshalStream writes the rendered children.
func shippedDocuments(t testing.TB) []string {
	t.Helper()
	set, err := Load(myresourceDir)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(myresourceDir, TestsDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, path := range paths {
		if strings.HasSuffix(path, ".golden.yaml") || strings.HasSuffix(path, ".lookups.yaml") {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		parents, err := ReadParents(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parents {
			if p.GetNamespace() == "" {
				p.SetNamespace("default") // as loom test does; the kind is namespaced
			}
			if c := set.Converter(); c != nil { // a case in v1: the templates read v1alpha1
				if p, err = c.Convert(p, c.Hub()); err != nil {
					t.Fatalf("convert %s: %v", path, err)
				}
			}
			docs = append(docs, rawDocuments(t, set, p.Object)...)
			children, err := set.Render(p)
			if err != nil {
				t.Fatalf("render %s: %v", path, err)
			}
			out, err := MarshalStream(children)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range yamldoc.Split(out) {
				if !yamldoc.IsBlank(d.Text) {
					docs = append(docs, string(d.Text))
				}
			}
		}
	}
	if len(docs) == 0 {
		t.Fatal("no shipped documents")
	}
	return docs
}

// rawDocuments executes each template of set for parent and returns the
// documents as the templates write them, before decoding.
func rawDocuments(t testing.TB, set *Set, parent map[string]any) []string {
	t.Helper()
	r, err := set.pool.get()
	if err != nil {
		t.Fatal(err)
	}
	defer set.pool.put(r)
	var docs []string
	for _, file := range set.files {
		var buf bytes.Buffer
		if err := set.execute(r, &buf, file, templateData(parent)); err != nil {
			t.Fatal(err)
		}
		for _, d := range yamldoc.Split(buf.Bytes()) {
			if !yamldoc.IsBlank(d.Text) {
				docs = append(docs, string(d.Text))
			}
		}
	}
	return docs
}

// TestFastDecodeReadsShippedDocuments checks that the documents the shipped
// templates render are inside DecodeFast's subset, so that rendering them
// never needs yaml.v2, and that it reads them as yaml.v2 does.
func TestFastDecodeReadsShippedDocuments(t *testing.T) {
	for _, doc := range shippedDocuments(t) {
		got, err := yamldoc.DecodeFast([]byte(doc))
		if err != nil {
			t.Errorf("DecodeFast: %v\n%s", err, doc)
			continue
		}
		want, err := yamldoc.DecodeV2([]byte(doc))
		if err != nil {
			t.Fatalf("yaml.v2: %v\n%s", err, doc)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("DecodeFast mismatch (-yaml.v2 +DecodeFast):\n%s\n%s", diff, doc)
		}
	}
}
