package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A set whose CRD the API server would refuse does not load, for any
// command: loom crd does not print it (nor exit 0), and loom render does
// not get as far as admitting a parent with it. The error is the API
// server's own CRD validation, naming loom.yaml and the field.
func TestSetWithACRDTheAPIServerRefusesDoesNotLoad(t *testing.T) {
	const parent = "parent: {apiVersion: gen.test.loom.dev/v1, kind: App}\n"
	const chartYAML = "apiVersion: v2\nname: c\nversion: 0.1.0\n"
	const cm = "{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n"
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{name: "OpenAPI form, a type that does not exist", files: map[string]string{
			"loom.yaml": parent + "schema:\n  openAPIV3Schema:\n    type: object\n    properties:\n      spec:\n        type: object\n        properties:\n          replicas: {type: integr}\n",
			"cm.yaml":   cm,
		}, want: []string{"loom.yaml", `spec.validation.openAPIV3Schema.properties[spec].properties[replicas].type: Unsupported value: "integr"`}},
		{name: "OpenAPI form, a default outside its enum", files: map[string]string{
			"loom.yaml": parent + "schema:\n  openAPIV3Schema:\n    type: object\n    properties:\n      spec:\n        type: object\n        properties:\n          size: {type: string, enum: [small, large], default: medium}\n",
			"cm.yaml":   cm,
		}, want: []string{"loom.yaml", `spec.validation.openAPIV3Schema.properties[spec].properties[size].default: Unsupported value: "medium"`}},
		{name: "values.schema.json, a type that does not exist", files: map[string]string{
			"loom.yaml":                parent + "chart: chart\n",
			"chart/Chart.yaml":         chartYAML,
			"chart/values.yaml":        "replicas: 1\n",
			"chart/values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integr"}}}`,
			"chart/templates/cm.yaml":  cm,
		}, want: []string{"loom.yaml", "values.schema.json", `spec.validation.openAPIV3Schema.properties[spec].properties[replicas].type: Unsupported value: "integr"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, filepath.Join(t.TempDir(), "app"), tt.files)
			parentFile := writeFiles(t, t.TempDir(), map[string]string{"p.yaml": "{apiVersion: gen.test.loom.dev/v1, kind: App, metadata: {name: a}, spec: {}}\n"})
			for _, args := range [][]string{
				{"crd", "-t", dir},
				{"render", "-t", dir, "-f", filepath.Join(parentFile, "p.yaml")},
			} {
				out, err := execute(t, "", args...)
				if err == nil {
					t.Fatalf("loom %s succeeded, want an error:\n%s", args[0], out)
				}
				for _, w := range append(tt.want, dir) {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("loom %s = %v\nwant it to contain %q", args[0], err, w)
					}
				}
			}
		})
	}
}
