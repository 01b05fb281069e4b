package render

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/engine/crd"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// schemaErrors lists the messages of checkSchema's joined error.
func schemaErrors(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			var re *Error
			if !errors.As(e, &re) {
				out = append(out, "not an *Error: "+e.Error())
				continue
			}
			out = append(out, e.Error())
		}
		return out
	}
	return []string{"not joined: " + err.Error()}
}

// crdSpecSchema reads the spec schema of the first version of a CRD file.
func crdSpecSchema(t *testing.T, path string) *apiextv1.JSONSchemaProps {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	spec, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if !ok {
		t.Fatalf("%s has no spec schema", path)
	}
	return &spec
}

// TestCheckSchemaShippedSets runs the check over the sets in the
// repository, each with the schema of the CRD it is used with: it finds
// nothing, and finds a misspelt field once one is written.
func TestCheckSchemaShippedSets(t *testing.T) {
	spec := crdSpecSchema(t, filepath.Join("..", "..", "crds", "myresources.example.loom.dev.yaml"))
	for _, dir := range []string{
		filepath.Join("..", "..", "templates", "myresource"),
		filepath.Join("..", "..", "test", "faults", "testdata", "hpa", "myresource"),
	} {
		t.Run(dir, func(t *testing.T) {
			s, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.checkSchema(spec); err != nil {
				t.Errorf("checkSchema() = %v, want nil", err)
			}
			files := s.Sources()
			name := s.Files()[len(s.Files())-1]
			files[name] = append(files[name], []byte("\n{{ .Spec.replcas }}\n")...)
			// A set whose loom.yaml has a schema (the shipped one) does
			// not load; one without is checked against the CRD's.
			bad, err := LoadSources(dir, files)
			var got []string
			switch {
			case s.Config.Schema != nil:
				got = schemaErrors(err)
			case err != nil:
				t.Fatal(err)
			default:
				got = schemaErrors(bad.checkSchema(spec))
			}
			line := strings.Count(string(files[name]), "\n")
			want := []string{name + ":" + strconv.Itoa(line) + ": .Spec.replcas is not in the schema of MyResource (did you mean replicas?)"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("checkSchema() with a misspelt field (-want +got):\n%s", diff)
			}
		})
	}
}

// schemaConfig is testConfig with a schema in the OpenAPI form.
const schemaConfig = testConfig + `schema:
  openAPIV3Schema:
    type: object
    properties:
      spec:
        type: object
        properties:
          replicas: {type: integer}
          image: {type: string}
`

// TestLoadChecksTemplatesAgainstTheSchema: a set with a schema does not
// load when a template reads a path the schema cannot hold; every such
// path is named. A set without a schema is not checked.
func TestLoadChecksTemplatesAgainstTheSchema(t *testing.T) {
	bad := map[string]string{
		"a.yaml": "kind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\ndata:\n  r: '{{ .Spec.replcas }}'\n  i: '{{ .Spec.imgae }}'\n",
	}
	if _, err := LoadFS(fsOf(bad), "noschema"); err != nil {
		t.Fatalf("LoadFS() without a schema = %v, want nil", err)
	}
	bad["loom.yaml"] = schemaConfig
	if _, err := crd.SpecSchema(mustParseConfig(t, schemaConfig)); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFS(fsOf(bad), "schema")
	want := []string{
		"a.yaml:5: .Spec.replcas is not in the schema of App (did you mean replicas?)",
		"a.yaml:6: .Spec.imgae is not in the schema of App (did you mean image?)",
	}
	if diff := cmp.Diff(want, schemaErrors(err)); diff != "" {
		t.Errorf("LoadFS() (-want +got):\n%s", diff)
	}
	if !errors.Is(err, ErrRender) {
		t.Errorf("LoadFS() = %v, want an ErrRender", err)
	}
	bad["a.yaml"] = strings.NewReplacer("replcas", "replicas", "imgae", "image").Replace(bad["a.yaml"])
	if _, err := LoadFS(fsOf(bad), "schema"); err != nil {
		t.Errorf("LoadFS() of the fixed set = %v, want nil", err)
	}
}

func mustParseConfig(t *testing.T, src string) config.Config {
	t.Helper()
	c, err := config.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLoadReportsSchemaErrors: a schema that does not compile makes the
// set fail to load, with engine/crd's message after loom.yaml.
func TestLoadReportsSchemaErrors(t *testing.T) {
	files := map[string]string{
		"loom.yaml": testConfig + "schema:\n  spec:\n    replicas: integer | minimun=0\n",
		"a.yaml":    "kind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\n",
	}
	_, err := LoadFS(fsOf(files), "app")
	const want = `loom.yaml: schema.spec.replicas: unknown marker "minimun" (did you mean minimum?) in "integer | minimun=0"`
	if err == nil || err.Error() != want {
		t.Errorf("LoadFS() = %v, want %s", err, want)
	}
}
