package chart

import (
	"github.com/google/go-cmp/cmp"
	"strings"
	"testing"
	"testing/fstest"
)

// tplChart is a chart whose one template passes .Values.text to tpl.
func tplChart(t *testing.T, opts Options) *Chart {
	t.Helper()
	fsys := fstest.MapFS{
		"c/Chart.yaml":          {Data: []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n")},
		"c/values.yaml":         {Data: []byte("text: \"\"\n")},
		"c/templates/cm.yaml":   {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: {{ tpl .Values.text . | quote }}\n")},
		"c/templates/_help.tpl": {Data: []byte(`{{ define "c.secret" }}{{ (lookup "v1" "Secret" .ns "s").data | len }}{{ end }}`)},
	}
	c, _, err := Load(fsys, "c", opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTplLookupIsNeverKept renders, twice with the same values, text that
// tpl runs and that calls lookup: directly, in text that defines a
// template (which tpl runs on a clone of the tree), and in text that only
// says "block" in a word. Each render must call the lookup: an output
// that depends on the cluster must not be kept.
func TestTplLookupIsNeverKept(t *testing.T) {
	tests := map[string]string{
		"plain":           `{{ (lookup "v1" "Secret" "ns" "s").data | len }}`,
		"defines":         `{{ define "x" }}{{ end }}{{ (lookup "v1" "Secret" "ns" "s").data | len }}`,
		"word blockstore": `blockstore {{ (lookup "v1" "Secret" "ns" "s").data | len }}`,
		"include":         `{{ define "y" }}{{ end }}{{ include "c.secret" (dict "ns" "ns") }}`,
	}
	for name, text := range tests {
		t.Run(name, func(t *testing.T) {
			c := tplChart(t, Options{})
			calls := 0
			env := Env{Release: Release{Name: "r", Namespace: "ns", Revision: 1, IsInstall: true},
				Lookup: func(Position, string, string, string, string) (map[string]any, error) {
					calls++
					return map[string]any{"data": map[string]any{"k": "dg=="}}, nil
				}}
			for i := range 2 {
				if _, err := c.Render(map[string]any{"text": text}, env); err != nil {
					t.Fatal(err)
				}
				if calls != i+1 {
					t.Fatalf("render %d: lookup called %d times in all, want %d: the output was kept", i+1, calls, i+1)
				}
			}
		})
	}
}

// specChart is a chart that passes to tpl text of its values, a
// values.yaml default that calls lookup, and a template's literal that
// includes a define calling lookup.
func specChart(t *testing.T) *Chart {
	t.Helper()
	fsys := fstest.MapFS{
		"c/Chart.yaml": {Data: []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n")},
		"c/values.yaml": {Data: []byte(`text: ""
own: '{{ lookup "v1" "Secret" "own" "s" | len }}'
`)},
		"c/templates/cm.yaml": {Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: x
data:
  v: {{ tpl .Values.text . | quote }}
  w: {{ tpl .Values.own . | quote }}
  x: {{ tpl "{{ include \"c.secret\" (dict \"ns\" \"lit\") }}" . | quote }}
`)},
		"c/templates/_help.tpl": {Data: []byte(`{{ define "c.secret" }}{{ lookup "v1" "Secret" .ns "s" | len }}{{ end }}`)},
	}
	c, _, err := Load(fsys, "c", Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTplLookupFromSpec renders text that tpl runs and that calls lookup,
// written in the chart (a values.yaml default, a template's literal) or
// in the values: only a lookup made by text from the values, directly or
// in a define that text includes, is marked FromSpec.
func TestTplLookupFromSpec(t *testing.T) {
	lookupText := `{{ lookup "v1" "Secret" "tenant" "s" | len }}`
	tests := []struct {
		name   string
		values map[string]any
		// want are the namespaces looked up, each with FromSpec.
		want map[string]bool
	}{
		{name: "chart's text only", values: map[string]any{"text": "hello"},
			want: map[string]bool{"own": false, "lit": false}},
		{name: "values' text", values: map[string]any{"text": lookupText},
			want: map[string]bool{"own": false, "lit": false, "tenant": true}},
		{name: "values' text includes a define", values: map[string]any{"text": `{{ include "c.secret" (dict "ns" "tenant") }}`},
			want: map[string]bool{"own": false, "lit": false, "tenant": true}},
		{name: "values' text that defines", values: map[string]any{"text": `{{ define "z" }}{{ end }}` + lookupText},
			want: map[string]bool{"own": false, "lit": false, "tenant": true}},
		{name: "values repeat the chart's text", values: map[string]any{"text": `{{ lookup "v1" "Secret" "own" "s" | len }}`},
			want: map[string]bool{"own": false, "lit": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := specChart(t)
			got := map[string]bool{}
			env := Env{Release: Release{Name: "r", Namespace: "ns", Revision: 1, IsInstall: true},
				Lookup: func(at Position, _, _, namespace, _ string) (map[string]any, error) {
					got[namespace] = got[namespace] || at.FromSpec
					return map[string]any{}, nil
				}}
			if _, err := c.Render(tt.values, env); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lookups by namespace, FromSpec (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTplInTplThatDefines runs tpl inside text that defines a template
// (which tpl runs on a clone of the tree), as Helm runs it.
func TestTplInTplThatDefines(t *testing.T) {
	c := tplChart(t, Options{})
	text := `{{ define "x" }}[{{ .Release.Name }}]{{ end }}{{ tpl "{{ include \"x\" . }}-{{ .Release.Namespace }}" . }}`
	res, err := c.Render(map[string]any{"text": text}, Env{Release: Release{Name: "r", Namespace: "ns", Revision: 1, IsInstall: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Files[0].Text; !strings.Contains(got, `v: "[r]-ns"`) {
		t.Errorf("got %q, want v: \"[r]-ns\"", got)
	}
}
