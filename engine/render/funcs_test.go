package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/render/tmplfuncs"
)

// helpersTpl is a partial with defines that the function tests include.
const helpersTpl = `{{- define "name" }}{{ .Name }}{{ end }}
{{- define "labels" -}}
app: {{ include "name" . }}
tier: web
{{- end }}
{{- define "greet" }}hello {{ include "name" . }}{{ end }}
`

// TestFuncs runs one template line per case with the functions the engine
// adds to or changes in sprig, and checks the exact text it prints.
func TestFuncs(t *testing.T) {
	const spec = `  image: nginx
  empty: ""
  zero: 0
  disabled: false
  nested:
    a: 1
    b: [x, z]
  greeting: "hi {{ .Name }}"
`
	tests := []struct {
		name string
		tmpl string
		want string
	}{
		{"toYaml trims the trailing newline", `{{ toYaml .Spec.nested }}|`, "a: 1\nb:\n- x\n- z|"},
		{"toYaml of a scalar", `{{ toYaml "x" }}|`, "x|"},
		{"toYaml with nindent", `k:{{ toYaml .Spec.nested | nindent 2 }}`, "k:\n  a: 1\n  b:\n  - x\n  - z"},
		{"fromYaml", `{{ fromYaml "a: 1\nb: [x]" | toJson }}`, `{"a":1,"b":["x"]}`},
		{"fromYaml field", `{{ (fromYaml "a: {b: c}").a.b }}`, "c"},
		{"fromYamlArray", `{{ fromYamlArray "[1, two, {a: b}]" | toJson }}`, `[1,"two",{"a":"b"}]`},
		{"toJson", `{{ .Spec.nested | toJson }}`, `{"a":1,"b":["x","z"]}`},
		{"fromJson", `{{ (fromJson "{\"a\": [1, 2]}").a | len }}`, "2"},
		{"fromJson scalar", `{{ fromJson "\"s\"" }}`, "s"},
		{"include", `{{ include "name" . }}`, "web"},
		{"include nested", `{{ include "greet" . }}`, "hello web"},
		{"include piped", `labels:{{ include "labels" . | nindent 2 }}`, "labels:\n  app: web\n  tier: web"},
		{"include with other data", `{{ include "name" (dict "Name" "other") }}`, "other"},
		{"tpl", `{{ tpl .Spec.greeting . }}`, "hi web"},
		{"tpl calls a define from a partial", `{{ tpl "{{ include \"greet\" . }}!" . }}`, "hello web!"},
		{"required passes a value", `{{ required "need image" .Spec.image }}`, "nginx"},
		{"required passes zero", `{{ required "need zero" .Spec.zero }}`, "0"},
		{"required passes false", `{{ required "need disabled" .Spec.disabled }}`, "false"},
		{"default on a missing field", `{{ .Spec.missing | default "x" }}`, "x"},
		{"default keeps a set field", `{{ .Spec.image | default "x" }}`, "nginx"},
		{"hasKey on spec", `{{ hasKey .Spec "zero" }} {{ hasKey .Spec "missing" }}`, "true false"},
		{"len of a string, a list and a map", `{{ len .Spec.image }} {{ len .Spec.nested.b }} {{ len .Spec.nested }}`, "5 2 2"},
		{"len of an empty string", `{{ len .Spec.empty }}`, "0"},
		{"until, up and down", `{{ until 3 }} {{ until -2 }} {{ until 0 }}`, "[0 1 2] [0 -1] []"},
		{"untilStep", `{{ untilStep 0 10 4 }} {{ untilStep 5 0 -2 }} {{ untilStep 0 5 -1 }}`, "[0 4 8] [5 3 1] []"},
		{"seq with one, two and three numbers", `{{ seq 3 }}|{{ seq 2 -1 }}|{{ seq 0 2 5 }}|{{ seq 1 2 -5 }}`, "1 2 3|2 1 0 -1|0 2 4|"},
		{"repeat", `{{ repeat 3 "ab" }}|{{ repeat 0 "ab" }}|{{ repeat -1 "ab" }}`, "ababab||"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSet(t, map[string]string{"_helpers.tpl": helpersTpl, "a.yaml": tt.tmpl})
			got, err := execText(t, s, "a.yaml", app(t, spec))
			if err != nil {
				t.Fatalf("execute: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFuncErrors checks that the functions return their errors, located at
// the calling line, instead of printing nothing or swallowing them.
func TestFuncErrors(t *testing.T) {
	const spec = "  image: nginx\n  empty: \"\"\n"
	tests := []struct {
		name   string
		tmpl   string
		prefix string   // the error starts with this
		want   []string // and contains these
	}{
		{"toYaml", "x: 1\ny: {{ toYaml (float64 \"NaN\") }}", "a.yaml:2: at <toYaml (float64 \"NaN\")>: error calling toYaml: toYaml: ", []string{"unsupported value: NaN"}},
		{"toJson", `{{ toJson (dict "a" (float64 "NaN")) }}`, "a.yaml:1: at <toJson (dict \"a\" (float64 \"NaN\"))>: error calling toJson: toJson: ", []string{"unsupported value: NaN"}},
		{"fromYaml", `{{ fromYaml "a: [" }}`, "a.yaml:1: at <fromYaml \"a: [\">: error calling fromYaml: fromYaml: ", []string{"did not find expected node content"}},
		{"fromYaml of a list", `{{ fromYaml "[1]" }}`, "a.yaml:1: at <fromYaml \"[1]\">: error calling fromYaml: fromYaml: ", []string{"cannot unmarshal array"}},
		{"fromYamlArray of a mapping", `{{ fromYamlArray "a: b" }}`, "a.yaml:1: at <fromYamlArray \"a: b\">: error calling fromYamlArray: fromYamlArray: ", []string{"cannot unmarshal object"}},
		{"fromJson", `{{ fromJson "{" }}`, "a.yaml:1: at <fromJson \"{\">: error calling fromJson: fromJson: ", []string{"unexpected end of JSON input"}},
		{"required of a missing field", "a: b\n\n{{ required \"spec.image2 is required\" .Spec.image2 }}", "a.yaml:3: at <required \"spec.image2 is required\" .Spec.image2>: error calling required: spec.image2 is required", nil},
		{"required of an empty string", `{{ required "spec.empty is required" .Spec.empty }}`, "a.yaml:1: at <required \"spec.empty is required\" .Spec.empty>: error calling required: spec.empty is required", nil},
		{"include of an unknown define", `{{ include "nope" . }}`, "a.yaml:1: at <include \"nope\" .>: error calling include: ", []string{`no template "nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSet(t, map[string]string{"a.yaml": tt.tmpl})
			out, err := execText(t, s, "a.yaml", app(t, spec))
			if err == nil {
				t.Fatalf("execute succeeded with %q, want an error", out)
			}
			wantPrefix(t, err.Error(), tt.prefix)
			wantContains(t, err.Error(), tt.want...)
		})
	}
}

// TestIncludeDepth checks that a template that includes itself fails with
// a short error naming the cap, instead of exhausting the stack.
func TestIncludeDepth(t *testing.T) {
	tests := []struct {
		name string
		tpl  string
	}{
		{"include", `{{ define "self" }}{{ include "self" . }}{{ end }}`},
		{"tpl", `{{ define "self" }}{{ tpl "{{ include \"self\" . }}" . }}{{ end }}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSet(t, map[string]string{"_loop.tpl": tt.tpl, "a.yaml": "a: b\n{{ include \"self\" . }}\n"})
			_, err := s.Render(app(t, ""))
			if err == nil {
				t.Fatal("Render succeeded, want an error")
			}
			msg := err.Error()
			wantPrefix(t, msg, "_loop.tpl:1: ")
			wantContains(t, msg, "nesting deeper than 1000", "included from a.yaml:2, _loop.tpl:1 (")
			if len(msg) > 1000 {
				t.Errorf("error is %d bytes long, want the repeated locations folded:\n%.500s", len(msg), msg)
			}
		})
	}
}

// TestRemovedFuncs checks that the functions that read the environment or
// the network are gone: a template that uses one does not parse.
func TestRemovedFuncs(t *testing.T) {
	for _, fn := range []string{"env", "expandenv", "getHostByName"} {
		t.Run(fn, func(t *testing.T) {
			_, err := LoadFS(fsOf(map[string]string{"a.yaml": "a: 1\nb: {{ " + fn + ` "HOME" }}`}), "testset")
			if err == nil {
				t.Fatal("LoadFS succeeded, want an error")
			}
			if diff := cmp.Diff(`a.yaml:2: function "`+fn+`" not defined`, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMissingFields checks what a template sees for fields the parent does
// not set, through the whole render: nothing is printed, and default works.
func TestMissingFields(t *testing.T) {
	s := loadSet(t, map[string]string{"cm.yaml": configMap("cm", `  missing: "{{ .Spec.missing }}"
  deep: "{{ .Spec.missing }}{{ .Labels.missing }}{{ .Annotations.missing }}"
  defaulted: {{ .Spec.missing | default "x" | quote }}
  ns: {{ .Namespace }}
`)})
	got := mustRender(t, s, app(t, ""))
	want := map[string]any{"missing": "", "deep": "", "defaulted": "x", "ns": "default"}
	if diff := cmp.Diff(want, got[0].Object["data"]); diff != "" {
		t.Errorf("data mismatch (-want +got):\n%s", diff)
	}
}

// TestFuncMapIsolation checks that the engine's function map is sprig's
// less the removed functions, with Loom's replacements, and that building
// a renderer's map does not change the shared one.
func TestFuncMapIsolation(t *testing.T) {
	for _, name := range tmplfuncs.Removed {
		if _, ok := tmplfuncs.Base()[name]; ok {
			t.Errorf("baseFuncs has %q", name)
		}
	}
	for _, name := range []string{"toYaml", "fromYaml", "fromYamlArray", "toJson", "fromJson", "required"} {
		if _, ok := tmplfuncs.Base()[name]; !ok {
			t.Errorf("baseFuncs lacks %q", name)
		}
	}
	_ = funcMap(&renderer{})
	for _, name := range []string{"include", "tpl"} {
		if _, ok := tmplfuncs.Base()[name]; ok {
			t.Errorf("baseFuncs gained %q from a renderer", name)
		}
	}
}
