package chart

import (
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
