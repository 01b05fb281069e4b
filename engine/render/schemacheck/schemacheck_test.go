package schemacheck

import (
	"sort"
	"strings"
	"testing"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// appSpec is the schema of the test sets' App spec: objects, a list of
// objects, maps, and the free-form kinds of schema.
const appSpec = `
type: object
properties:
  image: {type: string}
  replicas: {type: integer}
  db:
    type: object
    properties:
      name: {type: string}
      size: {type: string}
  ports:
    type: array
    items:
      type: object
      properties:
        name: {type: string}
        port: {type: integer}
  env:
    type: object
    additionalProperties: {type: string}
  volumes:
    type: object
    additionalProperties:
      type: object
      properties:
        size: {type: string}
  extra:
    type: object
    x-kubernetes-preserve-unknown-fields: true
  labels: {type: object}
  tags: {type: array, items: {type: string}}
  port: {x-kubernetes-int-or-string: true}
`

// schemaOf decodes a JSONSchemaProps written as YAML.
func schemaOf(t testing.TB, doc string) *apiextv1.JSONSchemaProps {
	t.Helper()
	var s apiextv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
		t.Fatalf("decode schema: %v", err)
	}
	return &s
}

// testFuncs are sprig's functions and stand-ins for those engine/render
// adds: the names the test templates may call. Check reads only a call's
// name and arguments; no template runs.
func testFuncs() template.FuncMap {
	funcs := sprig.TxtFuncMap()
	for _, name := range []string{"include", "tpl", "toYaml", "fromYaml", "required", "lookup"} {
		funcs[name] = func(...any) any { return nil }
	}
	return funcs
}

// templatesOf parses files as engine/render parses a set's folder: the
// partials (_*), then the child templates (*.yaml), then the status
// template, into one tree set. The parent is of kind App.
func templatesOf(t testing.TB, files map[string]string, status string) Templates {
	t.Helper()
	var partials, children []string
	for name := range files {
		switch {
		case name == status:
		case strings.HasPrefix(name, "_"):
			partials = append(partials, name)
		default:
			children = append(children, name)
		}
	}
	sort.Strings(partials)
	sort.Strings(children)
	names := append(append([]string(nil), partials...), children...)
	if status != "" {
		names = append(names, status)
	}
	root := template.New("set").Funcs(testFuncs()).Option("missingkey=default")
	sources := map[string][]byte{}
	for _, name := range names {
		sources[name] = []byte(files[name])
		if _, err := root.New(name).Parse(files[name]); err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
	}
	return Templates{Root: root, Files: children, Status: status, Kind: "App", Sources: sources}
}

// messages lists the problems as engine/render words them.
func messages(problems []Problem) []string {
	var out []string
	for _, p := range problems {
		out = append(out, p.String())
	}
	return out
}

func TestCheckSchema(t *testing.T) {
	spec := schemaOf(t, appSpec)
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{name: "field chains in the schema", files: map[string]string{
			"a.yaml": "{{ .Spec.image }} {{ .Spec.replicas }} {{ .Spec.db.name }} {{ .Spec.ports }}",
		}},
		{name: "misspelt field", files: map[string]string{
			"a.yaml": "x: 1\ny: {{ .Spec.replcas }}",
		}, want: []string{"a.yaml:2: .Spec.replcas is not in the schema of App (did you mean replicas?)"}},
		{name: "nested field, nothing close", files: map[string]string{
			"a.yaml": "{{ .Spec.db.name }}\n{{ .Spec.db.password }}",
		}, want: []string{"a.yaml:2: .Spec.db.password is not in the schema of App"}},
		{name: "field of a scalar", files: map[string]string{
			"a.yaml": "{{ .Spec.image.tag }}",
		}, want: []string{"a.yaml:1: .Spec.image.tag is not in the schema of App (.Spec.image is a string)"}},
		{name: "dollar, and dollar inside range", files: map[string]string{
			"a.yaml": "{{ $.Spec.imgae }}\n{{ range .Spec.ports }}{{ $.Spec.image }}{{ $.Spec.imag }}{{ .nme }}{{ end }}",
		}, want: []string{
			"a.yaml:1: .Spec.imgae is not in the schema of App (did you mean image?)",
			"a.yaml:2: .Spec.imag is not in the schema of App (did you mean image?)",
			"a.yaml:2: .Spec.ports[*].nme is not in the schema of App (did you mean name?)",
		}},
		{name: "variable bound to a path", files: map[string]string{
			"a.yaml": "{{ $db := .Spec.db }}{{ $db.name }}\n{{ $db.nme }}",
		}, want: []string{"a.yaml:2: .Spec.db.nme is not in the schema of App (did you mean name?)"}},
		{name: "variable reassigned with =", files: map[string]string{
			"a.yaml": "{{ $x := .Spec.db }}{{ range .Spec.ports }}{{ $x.port }}{{ $x = . }}{{ end }}{{ $x.nme }}",
		}},
		{name: "variables go out of scope at end", files: map[string]string{
			"a.yaml": "{{ $x := .Spec }}{{ with .Spec.db }}{{ $x := . }}{{ $x.name }}{{ end }}\n{{ $x.imag }}",
		}, want: []string{"a.yaml:2: .Spec.imag is not in the schema of App (did you mean image?)"}},
		{name: "index with constant keys", files: map[string]string{
			"a.yaml": "{{ index .Spec \"db\" \"name\" }}{{ index .Spec.ports 0 \"port\" }}\n{{ index .Spec \"db\" \"nam\" }}\n{{ index .Spec.ports 0 \"prot\" }}\n{{ (index .Spec \"db\").nme }}",
		}, want: []string{
			"a.yaml:2: .Spec.db.nam is not in the schema of App (did you mean name?)",
			"a.yaml:3: .Spec.ports[*].prot is not in the schema of App (did you mean port?)",
			"a.yaml:4: .Spec.db.nme is not in the schema of App (did you mean name?)",
		}},
		{name: "index with a key that is not constant", files: map[string]string{
			"a.yaml": "{{ $k := \"db\" }}{{ index .Spec $k \"anything\" }}{{ (index .Spec .Spec.image).x }}",
		}},
		{name: "hasKey, get and dig", files: map[string]string{
			"a.yaml": "{{ hasKey .Spec \"replicas\" }}{{ get .Spec.db \"size\" }}{{ dig \"db\" \"name\" \"\" .Spec }}\n" +
				"{{ hasKey .Spec \"replicsa\" }}\n{{ get .Spec \"imag\" }}\n{{ dig \"db\" \"siz\" \"1Gi\" .Spec }}\n{{ (dig \"db\" dict .Spec).nme }}",
		}, want: []string{
			"a.yaml:2: .Spec.replicsa is not in the schema of App (did you mean replicas?)",
			"a.yaml:3: .Spec.imag is not in the schema of App (did you mean image?)",
			"a.yaml:4: .Spec.db.siz is not in the schema of App (did you mean size?)",
			"a.yaml:5: .Spec.db.nme is not in the schema of App (did you mean name?)",
		}},
		{name: "with moves dot, else does not", files: map[string]string{
			"a.yaml": "{{ with .Spec.db }}{{ .name }}\n{{ .nme }}{{ else }}{{ .Spec.image }}{{ end }}\n{{ with $d := .Spec.db }}{{ $d.siez }}{{ end }}",
		}, want: []string{
			"a.yaml:2: .Spec.db.nme is not in the schema of App (did you mean name?)",
			"a.yaml:3: .Spec.db.siez is not in the schema of App (did you mean size?)",
		}},
		{name: "range over a list and over maps", files: map[string]string{
			"a.yaml": "{{ range $i, $p := .Spec.ports }}{{ $i }}{{ $p.port }}{{ end }}\n" +
				"{{ range $k, $v := .Spec.volumes }}{{ $k.anything }}{{ $v.sise }}{{ end }}\n" +
				"{{ range .Spec.env }}{{ .x }}{{ end }}{{ range $v := .Spec.ports }}{{ $v.nam }}{{ end }}",
		}, want: []string{
			"a.yaml:2: .Spec.volumes[*].sise is not in the schema of App (did you mean size?)",
			"a.yaml:3: .Spec.env[*].x is not in the schema of App (.Spec.env[*] is a string)",
			"a.yaml:3: .Spec.ports[*].nam is not in the schema of App (did you mean name?)",
		}},
		{name: "include and template check the define with its argument", files: map[string]string{
			"_h.tpl": "{{ define \"db\" }}{{ .name }}\n{{ .nme }}{{ $.siez }}{{ end }}\n{{ define \"top\" }}{{ .Spec.imgae }}{{ end }}",
			"a.yaml": "{{ include \"db\" .Spec.db }}{{ template \"top\" . }}{{ include \"db\" (index .Spec \"db\") }}",
		}, want: []string{
			"_h.tpl:2: .Spec.db.nme is not in the schema of App (did you mean name?)",
			"_h.tpl:2: .Spec.db.siez is not in the schema of App (did you mean size?)",
			"_h.tpl:3: .Spec.imgae is not in the schema of App (did you mean image?)",
		}},
		{name: "nested and recursive includes", files: map[string]string{
			"_h.tpl": "{{ define \"outer\" }}{{ include \"inner\" .ports }}{{ include \"outer\" . }}{{ end }}\n" +
				"{{ define \"inner\" }}{{ range . }}{{ .prot }}{{ end }}{{ end }}",
			"a.yaml": "{{ include \"outer\" .Spec }}",
		}, want: []string{"_h.tpl:2: .Spec.ports[*].prot is not in the schema of App (did you mean port?)"}},
		{name: "a define with an unknown argument is not checked", files: map[string]string{
			"_h.tpl": "{{ define \"d\" }}{{ .anything }}{{ end }}",
			"a.yaml": "{{ include \"d\" (fromYaml .Spec.image) }}{{ include (printf \"d\") .Spec }}",
		}},
		{name: "default keeps the type only with an empty default", files: map[string]string{
			"a.yaml": "{{ (.Spec.db | default dict).nme }}\n{{ (.Spec.db | default (dict \"nme\" 1)).nme }}{{ (default \"\" .Spec.db).name }}",
		}, want: []string{"a.yaml:1: .Spec.db.nme is not in the schema of App (did you mean name?)"}},
		{name: "unknown types are not checked", files: map[string]string{
			"a.yaml": "{{ (fromYaml .Spec.image).anything.at.all }}{{ $m := .Spec.db | toYaml }}{{ $m.x }}{{ (first .Spec.tags).x }}",
		}},
		{name: "free-form parts", files: map[string]string{
			"a.yaml": "{{ .Spec.extra.a.b }}{{ .Spec.labels.x.y }}{{ .Spec.env.FOO }}{{ .Spec.volumes.data.size }}{{ .Spec.port.x }}",
		}},
		{name: "the template data", files: map[string]string{
			"a.yaml": "{{ .Name }}{{ .Namespace }}{{ .Labels.app }}{{ .Annotations.x }}{{ .Parent.metadata.name }}{{ .Parent.spec.image }}\n" +
				"{{ .Sepc.image }}\n{{ .Parent.spec.imgae }}\n{{ .Children }}",
		}, want: []string{
			"a.yaml:2: .Sepc is not in the template data (did you mean Spec?)",
			"a.yaml:3: .Parent.spec.imgae is not in the schema of App (did you mean image?)",
			"a.yaml:4: .Children is not in the template data (it is only in the status template)",
		}},
		{name: "the clusters a set may use", files: map[string]string{
			"a.yaml": "{{ range .Clusters }}{{ .Name }}{{ .Labels.env }}{{ end }}{{ len .Clusters }}\n{{ .Clustres }}",
		}, want: []string{"a.yaml:2: .Clustres is not in the template data (did you mean Clusters?)"}},
		{name: "every file, sorted by file and line", files: map[string]string{
			"b.yaml": "{{ .Spec.b2 }}",
			"a.yaml": "\n\n{{ .Spec.a3 }}\n{{ .Spec.a4 }}",
		}, want: []string{
			"a.yaml:3: .Spec.a3 is not in the schema of App",
			"a.yaml:4: .Spec.a4 is not in the schema of App",
			"b.yaml:1: .Spec.b2 is not in the schema of App",
		}},
		{name: "a define used twice is reported once", files: map[string]string{
			"_h.tpl": "{{ define \"d\" }}{{ .Spec.x }}{{ end }}",
			"a.yaml": "{{ include \"d\" . }}",
			"b.yaml": "{{ include \"d\" . }}{{ include \"d\" $ }}",
		}, want: []string{"_h.tpl:1: .Spec.x is not in the schema of App"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := messages(Check(templatesOf(t, tt.files, ""), spec))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckSchemaStatusTemplate(t *testing.T) {
	set := templatesOf(t, map[string]string{
		"a.yaml":      "{{ .Spec.image }}",
		"status.yaml": "{{ $svc := dig \"Service\" .Name dict .Children }}url: {{ $svc.spec.x }}\n{{ .Spec.imgae }}\n{{ .Clusters }}",
	}, "status.yaml")
	want := []string{
		"status.yaml:2: .Spec.imgae is not in the schema of App (did you mean image?)",
		"status.yaml:3: .Clusters is not in the status template's data (only the child templates see it)",
	}
	if diff := cmp.Diff(want, messages(Check(set, schemaOf(t, appSpec)))); diff != "" {
		t.Errorf("Check() (-want +got):\n%s", diff)
	}
}
