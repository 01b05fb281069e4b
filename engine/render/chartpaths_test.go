package render

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// pathsSet is a chart set whose chart's folder (mychart) is not named as
// the chart (thing), nor its subchart's folder (charts/subdir) as the
// subchart (sub): Helm names their templates thing/... and
// thing/charts/sub/..., files that do not exist in the set.
func pathsSet(change map[string]string) map[string]string {
	files := map[string]string{
		"loom.yaml":                               "parent:\n  apiVersion: example.com/v1\n  kind: App\nchart: mychart\n",
		"mychart/Chart.yaml":                      "apiVersion: v2\nname: thing\nversion: 0.1.0\ndependencies:\n  - name: sub\n    version: 0.1.0\n",
		"mychart/values.yaml":                     "boom: false\nsub:\n  name: ok\n",
		"mychart/templates/_helpers.tpl":          "{{- define \"thing.fail\" -}}\n{{- if .Values.boom }}\n{{- fail \"boom\" }}\n{{- end }}\n{{- end -}}\n",
		"mychart/templates/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: root-cm\ndata:\n  a: {{ include \"thing.fail\" . | quote }}\n",
		"mychart/charts/subdir/Chart.yaml":        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"mychart/charts/subdir/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub-cm\ndata:\n  a: {{ required \"need a name\" .Values.name }}\n",
	}
	for k, v := range change {
		files[k] = v
	}
	return files
}

// TestChartErrorsNameFilesInTheSet loads and renders chart sets that fail
// in a template, a subchart's template, values.schema.json and
// Chart.yaml: each error names the file by its path in the set, with its
// line, and says "chart" once.
func TestChartErrorsNameFilesInTheSet(t *testing.T) {
	tests := []struct {
		name   string
		change map[string]string
		spec   map[string]any
		file   string
		line   int
		// in is text the message must hold.
		in string
	}{
		{name: "fail in a define", spec: map[string]any{"boom": true},
			file: "mychart/templates/_helpers.tpl", line: 3, in: "included from mychart/templates/cm.yaml:6"},
		{name: "required in a subchart", spec: map[string]any{"sub": map[string]any{"name": ""}},
			file: "mychart/charts/subdir/templates/cm.yaml", line: 6, in: "need a name"},
		{name: "parse error", change: map[string]string{"mychart/templates/bad.yaml": "a: 1\n{{ if }}\n"},
			file: "mychart/templates/bad.yaml", line: 2, in: "missing value for if"},
		{name: "unclosed if", change: map[string]string{"mychart/templates/bad.yaml": unclosedIf},
			file: "mychart/templates/bad.yaml", line: 12, in: "unclosed {{ if }}: no {{ end }} before the end of the file"},
		{name: "unclosed define in a partial", change: map[string]string{"mychart/templates/_more.tpl": "{{/* {{ if }} in a comment */}}\n{{ define \"x\" }}\n{{- range .list }}\n{{ \"{{ with\" }}{{ . }}\n{{ end }}\n\n\n"},
			file: "mychart/templates/_more.tpl", line: 2, in: "unclosed {{ define }}: no {{ end }} before the end of the file"},
		{name: "unclosed if in a subchart", change: map[string]string{"mychart/charts/subdir/templates/bad.yaml": unclosedIf},
			file: "mychart/charts/subdir/templates/bad.yaml", line: 12, in: "unclosed {{ if }}"},
		{name: "broken values.schema.json", change: map[string]string{"mychart/values.schema.json": "{\n  \"type\": \"object\",\n  \"properties\": {\"a\": }\n}\n"},
			file: "mychart/values.schema.json", line: 3, in: "column 23"},
		{name: "broken subchart values.schema.json", change: map[string]string{"mychart/charts/subdir/values.schema.json": "{\"type\": \"object\""},
			file: "mychart/charts/subdir/values.schema.json", line: 1, in: "unexpected end of JSON input"},
		{name: "Chart.yaml without a name", change: map[string]string{"mychart/Chart.yaml": "apiVersion: v2\nversion: 0.1.0\n"},
			file: "loom.yaml", in: "chart mychart: validation: chart.metadata.name is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := LoadFS(fsOf(pathsSet(tt.change)), "set")
			if err == nil {
				parent := app(t, "")
				parent.Object["spec"] = tt.spec
				_, err = set.RenderWith(parent, nil)
			}
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if re.File != tt.file || re.Line != tt.line || !strings.Contains(err.Error(), tt.in) {
				t.Errorf("err = %v\nwant at %s:%d, holding %q", err, tt.file, tt.line, tt.in)
			}
			if msg := err.Error(); strings.Contains(msg, "thing/") || strings.Contains(msg, "chart: chart") || strings.Contains(msg, "load chart") {
				t.Errorf("err = %v: names Helm's path, or stutters", err)
			}
		})
	}
	// The same set renders when nothing fails.
	set, err := LoadFS(fsOf(pathsSet(nil)), "set")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.RenderWith(&unstructured.Unstructured{Object: app(t, "").Object}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestChartChildTextsByPathInTheSet lists a chart set's templates by
// their path in the set, as loom rbac names them in its errors (a
// computed kind at mychart/templates/x.yaml:2, not thing/templates/...).
func TestChartChildTextsByPathInTheSet(t *testing.T) {
	set, err := LoadFS(fsOf(pathsSet(nil)), "set")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for name := range set.ChildTexts() {
		got = append(got, name)
	}
	sort.Strings(got)
	want := []string{"mychart/charts/subdir/templates/cm.yaml", "mychart/templates/_helpers.tpl", "mychart/templates/cm.yaml"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ChildTexts (-want +got):\n%s", diff)
	}
}

// A chart's partial may hold text outside its defines: Helm never
// executes a file whose name starts with "_", and a chart set renders
// what Helm renders, so the stray text a set of Loom templates is refused
// for (TestLoadErrors, "partial with stray text on line 26") is no error
// in a chart, and changes none of its children.
func TestChartPartialStrayTextIsNoError(t *testing.T) {
	render := func(files map[string]string) []*unstructured.Unstructured {
		t.Helper()
		set, err := LoadFS(fsOf(files), "set")
		if err != nil {
			t.Fatal(err)
		}
		out, err := set.RenderWith(app(t, ""), nil)
		if err != nil {
			t.Fatal(err)
		}
		return out.Children
	}
	want := render(pathsSet(nil))
	got := render(pathsSet(map[string]string{"mychart/templates/_stray.tpl": strayText}))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children (-without the stray text +with it):\n%s", diff)
	}
}
