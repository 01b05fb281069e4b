package crd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/internal/testflags"
)

// testSets are the loom.yaml files under testdata/sets, by name.
func testSets(t *testing.T) map[string]config.Config {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "sets", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test sets: %v", err)
	}
	sets := map[string]config.Config{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := config.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		sets[strings.TrimSuffix(filepath.Base(f), ".yaml")] = c
	}
	return sets
}

// manifest is Generate's CRD as YAML, as `loom crd` prints it.
func manifest(t *testing.T, c config.Config) []byte {
	t.Helper()
	crd, err := Generate(c)
	if err != nil {
		t.Fatalf("Generate() = %v", err)
	}
	obj, err := Unstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Each test set's CRD is its golden file (testdata/crds), byte for byte:
// rerun with -update to accept a change, and review the diff.
func TestGenerateGolden(t *testing.T) {
	for name, c := range testSets(t) {
		t.Run(name, func(t *testing.T) {
			got := manifest(t, c)
			if again := manifest(t, c); string(again) != string(got) {
				t.Fatalf("two Generate calls differ:\n%s", cmp.Diff(string(got), string(again)))
			}
			path := filepath.Join("testdata", "crds", name+".yaml")
			if *testflags.Update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (rerun with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("CRD differs from %s (-want +got; rerun with -update to accept):\n%s", path, diff)
			}
		})
	}
}

func TestGenerateErrors(t *testing.T) {
	const parent = "parent: {apiVersion: gen.test.loom.dev/v1, kind: App}\n"
	tests := []struct{ name, src, want string }{
		{"bad marker", parent + "schema: {spec: {replicas: integer | minimun=0}}",
			`schema.spec.replicas: unknown marker "minimun" (did you mean minimum?) in "integer | minimun=0"`},
		{"bad status field", parent + "schema: {status: {url: strng}}",
			`schema.status.url: unknown type "strng" (did you mean string?)`},
		{"status names Loom's field", parent + "schema: {spec: {a: string}, status: {state: string}}",
			"schema.status.state: Loom writes this field; leave it out of the schema"},
		{"required status field", parent + "schema: {status: {url: string | required=true}}",
			"schema.status.url: a status field cannot be required"},
		{"OpenAPI status retypes Loom's field", parent + "schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object}, status: {type: object, properties: {observedGeneration: {type: string}}}}}}",
			`schema.openAPIV3Schema.properties.status.properties.observedGeneration: Loom writes this field as integer, not "string"`},
		{"OpenAPI status not an object", parent + "schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object}, status: {type: string}}}}",
			`schema.openAPIV3Schema.properties.status.type: the status is an object, not "string"`},
		{"OpenAPI status requires a template field", parent + "schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object}, status: {type: object, required: [url], properties: {url: {type: string}}}}}}",
			"schema.openAPIV3Schema.properties.status.required: url cannot be required"},
		{"OpenAPI status requires templateRevision", parent + "schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object}, status: {type: object, required: [state, templateRevision]}}}}",
			"schema.openAPIV3Schema.properties.status.required: templateRevision cannot be required"},
		{"OpenAPI without spec", parent + "schema: {openAPIV3Schema: {type: object}}",
			"schema.openAPIV3Schema.properties.spec: the parent's spec is missing"},
		{"OpenAPI top not an object", parent + "schema: {openAPIV3Schema: {type: string}}",
			`schema.openAPIV3Schema.type: the parent is an object, not "string"`},
		{"group without a dot", "parent: {apiVersion: example/v1, kind: App}",
			`parent.apiVersion: the group "example" of a custom resource must be a domain with at least one dot`},
		{"column path not in the schema", "parent: {apiVersion: gen.test.loom.dev/v1, kind: App, printerColumns: [{name: Image, type: string, jsonPath: .spec.imag}]}\nschema: {spec: {image: string}}",
			`parent.printerColumns[0] (Image): jsonPath ".spec.imag": imag is not in the schema (did you mean image?)`},
		{"column path not in the status", "parent: {apiVersion: gen.test.loom.dev/v1, kind: App, printerColumns: [{name: URL, type: string, jsonPath: .status.url}]}\nschema: {spec: {image: string}}",
			`parent.printerColumns[0] (URL): jsonPath ".status.url": url is not in the schema`},
		{"column path through a scalar", "parent: {apiVersion: gen.test.loom.dev/v1, kind: App, printerColumns: [{name: X, type: string, jsonPath: '.spec.image[0]'}]}\nschema: {spec: {image: string}}",
			`parent.printerColumns[0] (X): jsonPath ".spec.image[0]": .spec.image is not a list`},
		{"column of Loom's name", "parent: {apiVersion: gen.test.loom.dev/v1, kind: App, printerColumns: [{name: Ready, type: string, jsonPath: .spec.image}]}\nschema: {spec: {image: string}}",
			"parent.printerColumns[0] (Ready): a column of this name is already there"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tt.src))
			if err != nil {
				t.Fatalf("config.Parse() = %v", err)
			}
			_, err = Generate(c)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Generate() = %v, want an error starting %q", err, tt.want)
			}
		})
	}
}

func TestSpecSchema(t *testing.T) {
	sets := testSets(t)
	tests := []struct {
		set  string
		want string // a YAML schema, or "" for nil
	}{
		{set: "noschema"},
		{set: "cluster", want: "{type: object, properties: {size: {type: integer, default: 3}}}"},
		{set: "openapi", want: `
type: object
required: [rules]
properties:
  rules: {type: array, maxItems: 10, items: {type: object, properties: {action: {type: string, enum: [allow, deny], default: deny}}}}
  params: {type: object, x-kubernetes-preserve-unknown-fields: true}
`},
	}
	for _, tt := range tests {
		t.Run(tt.set, func(t *testing.T) {
			got, err := SpecSchema(sets[tt.set])
			if err != nil {
				t.Fatalf("SpecSchema() = %v", err)
			}
			var want *apiextv1.JSONSchemaProps
			if tt.want != "" {
				p := props(t, tt.want)
				want = &p
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("SpecSchema (-want +got):\n%s", diff)
			}
		})
	}
	// The compact form's spec is the generated CRD's spec.
	c := sets["compact"]
	got, err := SpecSchema(c)
	if err != nil {
		t.Fatal(err)
	}
	crd, err := Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"], *got); diff != "" {
		t.Errorf("SpecSchema differs from the CRD's spec (-crd +SpecSchema):\n%s", diff)
	}
}

func TestPlural(t *testing.T) {
	for kind, want := range map[string]string{
		"MyResource": "myresources", "Box": "boxes", "Class": "classes", "Quiz": "quizes", "Batch": "batches",
		"Mesh": "meshes", "Policy": "policies", "Gateway": "gateways", "App": "apps",
	} {
		if got := Plural(kind); got != want {
			t.Errorf("Plural(%q) = %q, want %q", kind, got, want)
		}
	}
}

// A chart set's parent has status.notes, for the chart's NOTES.txt, only
// when loom.yaml asks for it (notes: true); other sets' parents never.
func TestGenerateChartSetHasNotes(t *testing.T) {
	for _, tt := range []struct {
		chart string
		notes bool
		want  bool
	}{{"chart", true, true}, {"chart", false, false}, {"", false, false}} {
		c := config.Config{Parent: config.ParentRef{APIVersion: "example.loom.dev/v1", Kind: "App"}, Chart: tt.chart, Notes: tt.notes}
		crd, err := Generate(c)
		if err != nil {
			t.Fatal(err)
		}
		_, got := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties[StatusNotes]
		if got != tt.want {
			t.Errorf("chart %q, notes %v: status.notes in the schema: %v, want %v", tt.chart, tt.notes, got, tt.want)
		}
	}
}

func TestVersionSchema(t *testing.T) {
	c, err := config.Parse([]byte(`parent: {apiVersion: example.loom.dev/v1, kind: MyResource}
schema: {spec: {replicas: integer}}
versions:
- name: v1alpha1
  schema: {spec: {size: integer}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for version, field := range map[string]string{"v1": "replicas", "v1alpha1": "size"} {
		s, err := VersionSchema(c, version)
		if err != nil {
			t.Fatalf("VersionSchema(%s): %v", version, err)
		}
		if _, ok := s.Properties["spec"].Properties[field]; !ok {
			t.Errorf("VersionSchema(%s): spec has no %s: %v", version, field, s.Properties["spec"].Properties)
		}
		if _, ok := s.Properties["status"].Properties["observedGeneration"]; !ok {
			t.Errorf("VersionSchema(%s): status lacks Loom's fields", version)
		}
	}
	if _, err := VersionSchema(c, "v2"); err == nil || !strings.Contains(err.Error(), `version "v2": not a version of the set (v1, v1alpha1)`) {
		t.Errorf("VersionSchema(v2) = %v, want an error naming the versions", err)
	}
}
