package render

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/config"
)

// TestRenderErrors checks that each way a render can fail gives an *Error
// whose message starts with the file and line to fix.
func TestRenderErrors(t *testing.T) {
	const helpers = `{{- define "ok" }}fine{{ end }}
{{- define "bad" -}}
x: {{ .Spec.list | upper }}
{{- end }}
{{- define "outer" }}{{ include "bad" . }}{{ end }}
`
	const twoDocs = `apiVersion: v1
kind: ConfigMap
metadata:
  name: first
data:
  k: v
--- # the second document
apiVersion: v1
kind: ConfigMap
metadata:
  name: second
data:
  image: a: b
`
	tests := []struct {
		name  string
		files map[string]string
		spec  string
		want  string
	}{
		{
			name: "exec error: function of the wrong type",
			files: map[string]string{"a.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  annotations: {{ .Spec.list | upper }}
`},
			spec: "  list: [1, 2]\n",
			want: "a.yaml:5: at <upper>: wrong type for value; expected string; got []interface {}",
		},
		{
			name: "required fails at the line of its call",
			files: map[string]string{"a.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
data:
  a: b
  image: {{ required "spec.image is required" .Spec.image }}
`},
			want: `a.yaml:7: at <required "spec.image is required" .Spec.image>: error calling required: spec.image is required`,
		},
		{
			name:  "failure inside an included partial",
			files: map[string]string{"_helpers.tpl": helpers, "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"ok\" . }}\n  {{ include \"bad\" . }}\n"},
			spec:  "  list: [1]\n",
			want:  "_helpers.tpl:3: at <upper>: wrong type for value; expected string; got []interface {} (included from a.yaml:5)",
		},
		{
			name:  "failure two includes deep",
			files: map[string]string{"_helpers.tpl": helpers, "a.yaml": "a: b\n{{ include \"outer\" . }}\n"},
			spec:  "  list: [1]\n",
			want:  "_helpers.tpl:3: at <upper>: wrong type for value; expected string; got []interface {} (included from a.yaml:2, _helpers.tpl:5)",
		},
		{
			name:  "panic in a function",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ div 1 .Spec.zero }}\n"},
			spec:  "  zero: 0\n",
			want:  "a.yaml:4: at <div 1 .Spec.zero>: error calling div: runtime error: integer divide by zero",
		},
		{
			name:  "invalid YAML in the second document",
			files: map[string]string{"a.yaml": twoDocs},
			want:  `a.yaml:13 (document 2): invalid YAML: line 6: mapping values are not allowed in this context (rendered line 6 of the document: "  image: a: b")`,
		},
		{
			name:  "a document that is not a mapping",
			files: map[string]string{"a.yaml": configMap("cm", "  a: b\n") + "---\n- a list\n"},
			want:  "a.yaml:8 (document 2): invalid YAML: a document must be a YAML mapping (an object), not []interface {}",
		},
		{
			name: "unknown field at the misspelt line",
			files: map[string]string{"a.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      contianers:
        - name: app
          image: nginx
`},
			want: `a.yaml:12 (document 1) Deployment web: not a valid Deployment: unknown field "spec.template.spec.contianers"`,
		},
		{
			name:  "unknown field in the second document",
			files: map[string]string{"a.yaml": configMap("cm", "  a: b\n") + "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: svc\nspec:\n  prots: []\n"},
			want:  `a.yaml:13 (document 2) Service svc: not a valid Service: unknown field "spec.prots"`,
		},
		{
			name:  "mistyped value at its line",
			files: map[string]string{"a.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: \"3\"\n"},
			want:  "a.yaml:6 (document 1) Deployment web: spec.replicas: must be int32, not string",
		},
		{
			name: "a value its type decodes itself (a quantity), at its line and path",
			files: map[string]string{"a.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
    - name: app
      image: nginx
      resources:
        requests:
          cpu: 100m
          memory: lots
`},
			want: "a.yaml:12 (document 1) Pod web: spec.containers[0].resources.requests.memory: " +
				"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
		},
		{
			name:  "Secret data that is not base64, at its line and path",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  ok: YQ==\n  password: not base64!\n"},
			want:  "a.yaml:7 (document 1) Secret s: data.password: illegal base64 data at input byte 3",
		},
		{
			name:  "len of a missing key says the value is missing",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  n: {{ len .Spec.items | quote }}\n"},
			want:  `a.yaml:6: at <len .Spec.items>: error calling len: len of nothing: the value is missing (a key that is not there?)`,
		},
		{
			name:  "len of a number says what it got",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  n: {{ len .Spec.count | quote }}\n"},
			spec:  "  count: 3\n",
			want:  `a.yaml:6: at <len .Spec.count>: error calling len: len of type int64`,
		},
		{
			name:  "until over the list cap fails before building the list",
			files: map[string]string{"a.yaml": "a: |\n{{- range until 10000000 }}\n  x\n{{- end }}\n"},
			want:  "a.yaml:2: at <until 10000000>: error calling until: until would make 10000000 items, over the cap of 1048576 (a runaway loop?)",
		},
		{
			name:  "untilStep and seq over the list cap",
			files: map[string]string{"a.yaml": "a: {{ untilStep -5000000 5000000 3 | len }}\nb: {{ seq 1 2 5000000 }}\n"},
			want:  "a.yaml:1: at <untilStep -5000000 5000000 3>: error calling untilStep: untilStep would make 3333334 items, over the cap of 1048576 (a runaway loop?)",
		},
		{
			name:  "repeat over the output cap fails before building the string",
			files: map[string]string{"a.yaml": "a: {{ repeat 20000000 \"abc\" }}\n"},
			want:  `a.yaml:1: at <repeat 20000000 "abc">: error calling repeat: repeat would make 60000000 bytes, over the 32 MiB output cap (a runaway loop?)`,
		},
		{
			name:  "runaway output",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n{{- range until 100000 }}\n  k{{ . }}: {{ $.Spec.big }}\n{{- end }}\n"},
			spec:  "  big: " + strings.Repeat("x", 1024) + "\n",
			want:  "a.yaml:7: the templates wrote more than 32 MiB for one parent (a runaway loop?)",
		},
		{
			name:  "runaway output of text alone, at the line of the text",
			files: map[string]string{"a.yaml": "a: |\n{{- range until 1000000 }}\n  one line of text that the loop writes again and again\n{{- end }}\n"},
			want:  "a.yaml:3: the templates wrote more than 32 MiB for one parent (a runaway loop?)",
		},
		{
			name:  "runaway output in a define block called with template",
			files: map[string]string{"_helpers.tpl": "{{ define \"many\" }}\n{{- range until 100000 }}\n  {{ $.Spec.big }}\n{{- end }}\n{{ end }}\n", "a.yaml": "a: |\n{{ template \"many\" . }}\n"},
			spec:  "  big: " + strings.Repeat("x", 1024) + "\n",
			want:  "_helpers.tpl:3: the templates wrote more than 32 MiB for one parent (a runaway loop?)",
		},
		{
			name:  "runaway output inside include",
			files: map[string]string{"_helpers.tpl": `{{ define "many" }}{{ range until 100000 }}{{ $.Spec.big }}{{ end }}{{ end }}`, "a.yaml": "a: {{ include \"many\" . }}\n"},
			spec:  "  big: " + strings.Repeat("x", 1024) + "\n",
			want:  `a.yaml:1: at <include "many" .>: error calling include: the templates wrote more than 32 MiB for one parent (a runaway loop?)`,
		},
		{
			name:  "child in another namespace",
			files: map[string]string{"a.yaml": configMap("cm", "  a: b\n") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n  namespace: kube-system\n"},
			want:  `a.yaml:8 (document 2) ConfigMap other: metadata.namespace is "kube-system", but children must live in their parent's namespace "default"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSet(t, tt.files)
			got := renderErr(t, s, app(t, tt.spec))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRenderWrongParent checks that a set refuses a parent of another kind.
func TestRenderWrongParent(t *testing.T) {
	s := loadSet(t, map[string]string{"a.yaml": configMap("cm", "  a: b\n")})
	tests := []struct {
		name   string
		parent string
		want   string
	}{
		{"other kind", "apiVersion: example.com/v1\nkind: Other\nmetadata:\n  name: web\n", "loom.yaml: parent is example.com/v1, Kind=Other, but this set renders example.com/v1, Kind=App"},
		{"other version", "apiVersion: example.com/v2\nkind: App\nmetadata:\n  name: web\n", "loom.yaml: parent is example.com/v2, Kind=App, but this set renders example.com/v1, Kind=App"},
		{"no kind", "metadata:\n  name: web\n", "loom.yaml: parent is /, Kind=, but this set renders example.com/v1, Kind=App"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := renderErr(t, s, fixture(t, tt.parent))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadErrors checks the errors of loading a broken set: each names the
// file, and the line when there is one.
// strayText is a partial with a stray line (26) among its defines.
var strayText = func() string {
	var b strings.Builder
	for i := range 8 {
		fmt.Fprintf(&b, "{{- define \"a%d\" }}\nx: 1\n{{- end }}\n", i)
	}
	return b.String()
}() + "{{/* a comment */}}\nstray: text\n{{ define \"b\" }}y{{ end }}\n"

// unclosedIf is a 20-line template whose {{ if }} on line 12 has no end.
var unclosedIf = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n" +
	"  labels:\n    {{- range $k, $v := .Labels }}\n    {{ $k }}: {{ $v | quote }}\n    {{- end }}\ndata:\n" +
	"  {{- with .Spec.a }}\n  a: {{ . }}{{ end }}\n  {{- if .Spec.b }}\n  b: x\n" + strings.Repeat("  # more\n", 7)

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string // the whole message, or its start when wantPrefix
		exact bool
	}{
		{"parse error", map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name\n"}, "a.yaml:4: unclosed action", true},
		{"parse error in a partial", map[string]string{"_h.tpl": "{{ define \"x\" }}\n{{ if }}\n{{ end }}", "a.yaml": "a: b\n"}, "_h.tpl:2: missing value for if", true},
		{"unknown function", map[string]string{"a.yaml": "a: {{ nosuch 1 }}\n"}, `a.yaml:1: function "nosuch" not defined`, true},
		{"no loom.yaml", map[string]string{config.File: "", "a.yaml": "a: b\n"}, "loom.yaml: parent.apiVersion and parent.kind are required", true},
		{"missing parent kind", map[string]string{config.File: "parent:\n  apiVersion: example.com/v1\n", "a.yaml": "a: b\n"}, "loom.yaml: parent.apiVersion and parent.kind are required", true},
		{"bad parent apiVersion", map[string]string{config.File: "parent:\n  apiVersion: a/b/c\n  kind: App\n", "a.yaml": "a: b\n"}, "loom.yaml: parent.apiVersion: unexpected GroupVersion string: a/b/c", true},
		{"unknown field", map[string]string{config.File: testConfig + "parnet: {}\n", "a.yaml": "a: b\n"}, `loom.yaml:4: parnet: unknown field "parnet" (did you mean parent?)`, true},
		{"readiness rule without kind", map[string]string{config.File: testConfig + "readiness:\n- condition: Ready\n", "a.yaml": "a: b\n"}, "loom.yaml: readiness[0].kind is required", true},
		{"readiness rule without condition", map[string]string{config.File: testConfig + "readiness:\n- kind: Job\n", "a.yaml": "a: b\n"}, "loom.yaml: readiness[0] needs condition or ignore", true},
		{"no templates", map[string]string{"_h.tpl": `{{ define "x" }}{{ end }}`, "notes.txt": "hi"}, ".: template set has no *.yaml templates", true},
		{"partial with text", map[string]string{"_h.tpl": "{{ define \"x\" }}{{ end }}\nkind: Oops\n", "a.yaml": "a: b\n"}, "_h.tpl:2: a partial may only hold define blocks, but it renders text outside them", true},
		{"partial with stray text on line 26", map[string]string{"_helpers.tpl": strayText, "a.yaml": "a: b\n"}, "_helpers.tpl:26: a partial may only hold define blocks, but it renders text outside them", true},
		{"partial that prints a value outside its defines", map[string]string{"_h.tpl": "{{ define \"x\" }}{{ end }}\n{{- $v := 1 }}\n\n{{ $v }}\n", "a.yaml": "a: b\n"}, "_h.tpl:4: a partial may only hold define blocks, but it renders text outside them", true},
		{"unclosed if", map[string]string{"a.yaml": unclosedIf}, "a.yaml:12: unclosed {{ if }}: no {{ end }} before the end of the file", true},
		{"unclosed define", map[string]string{"_h.tpl": "{{/* {{ if }} in a comment */}}\n{{ define \"x\" }}\n{{- range .list }}\n{{ \"{{ with\" }}{{ . }}\n{{ end }}\n\n\n", "a.yaml": "a: b\n"}, "_h.tpl:2: unclosed {{ define }}: no {{ end }} before the end of the file", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadFS(fsOf(tt.files), "testset")
			if err == nil {
				t.Fatal("LoadFS succeeded, want an error")
			}
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			if !tt.exact {
				wantPrefix(t, err.Error(), tt.want)
				return
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("unknown field names the field", func(t *testing.T) {
		_, err := LoadFS(fsOf(map[string]string{config.File: testConfig + "parnet: {}\n", "a.yaml": "a: b\n"}), "testset")
		wantContains(t, err.Error(), `unknown field "parnet"`)
	})
	t.Run("missing loom.yaml", func(t *testing.T) {
		fsys := fsOf(map[string]string{"a.yaml": "a: b\n"})
		delete(fsys, config.File)
		_, err := LoadFS(fsys, "testset")
		if err == nil {
			t.Fatal("LoadFS succeeded, want an error")
		}
		wantPrefix(t, err.Error(), "loom.yaml: there is no loom.yaml in testset: it is not a template set's folder")
	})
}

// TestPanicRecovered checks that a panic that text/template does not turn
// into an error itself (here, from a range-over-func iterator) still comes
// back as an *Error naming the file, and leaves the renderer usable.
func TestPanicRecovered(t *testing.T) {
	s := loadSet(t, map[string]string{"a.yaml": "a: b\n{{ range .Seq }}{{ . }}{{ end }}\n"})
	r, err := s.pool.get()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	boom := func(yield func(int) bool) { panic("boom") }
	err = s.execute(r, &buf, "a.yaml", map[string]any{"Seq": boom})
	var re *Error
	if !errors.As(err, &re) {
		t.Fatalf("error is %T, not *Error: %v", err, err)
	}
	if diff := cmp.Diff("a.yaml: panic while rendering: boom", err.Error()); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
	buf.Reset()
	seq := func(yield func(int) bool) { _ = yield(1) && yield(2) }
	if err := s.execute(r, &buf, "a.yaml", map[string]any{"Seq": seq}); err != nil {
		t.Fatalf("execute after a panic: %v", err)
	}
	if diff := cmp.Diff("a: b\n12\n", buf.String()); diff != "" {
		t.Errorf("output mismatch (-want +got):\n%s", diff)
	}
}

// TestTplErrorLocation checks that an error in text given to tpl is
// located at the file that called tpl, with the line inside the text.
func TestTplErrorLocation(t *testing.T) {
	tests := []struct {
		name string
		tmpl string
		want string
	}{
		{"exec error", "a: b\nc: {{ tpl \"x\\n{{ div 1 0 }}\" . }}\n", "a.yaml:2: in tpl:2: at <div 1 0>: error calling div: runtime error: integer divide by zero"},
		{"parse error", "a: b\nc: {{ tpl \"{{ .Name\" . }}\n", "a.yaml:2: in tpl:1: unclosed action"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadSet(t, map[string]string{"a.yaml": tt.tmpl})
			got := renderErr(t, s, app(t, ""))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestErrorFormat checks Error's formatting and its use with errors.Is.
func TestErrorFormat(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"file only", &Error{File: "a.yaml", Err: cause}, "a.yaml: boom"},
		{"file and line", &Error{File: "a.yaml", Line: 3, Err: cause}, "a.yaml:3: boom"},
		{"document", &Error{File: "a.yaml", Line: 3, Doc: 2, Err: cause}, "a.yaml:3 (document 2): boom"},
		{"object", &Error{File: "a.yaml", Line: 3, Doc: 2, Object: "Service web", Err: cause}, "a.yaml:3 (document 2) Service web: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.err.Error()); diff != "" {
				t.Errorf("Error() mismatch (-want +got):\n%s", diff)
			}
			if !errors.Is(tt.err, ErrRender) || !errors.Is(tt.err, cause) {
				t.Errorf("errors.Is(err, ErrRender) = %v, errors.Is(err, cause) = %v; want both true", errors.Is(tt.err, ErrRender), errors.Is(tt.err, cause))
			}
		})
	}
}
