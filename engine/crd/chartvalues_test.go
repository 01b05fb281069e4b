package crd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-operator/loom/engine/config"
)

// A chart set's CRD types the values values.yaml lists and keeps the
// others: the API server refuses a string for a number, and stores a key
// values.yaml does not know.
func TestGenerateForChartInfersTheValues(t *testing.T) {
	values := map[string]any{
		"replicaCount": 2.0,
		"image":        map[string]any{"repository": "nginx", "tag": ""},
		"enabled":      true,
		"tolerations":  []any{},
		"nothing":      nil,
		"extra":        map[string]any{},
	}
	c := config.Config{Parent: config.ParentRef{APIVersion: "example.loom.dev/v1", Kind: "App"}, Chart: "chart"}
	def, err := GenerateForChart(c, values, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAdmitter(def)
	if err != nil {
		t.Fatalf("the inferred schema is not one the API server takes: %v", err)
	}
	good := map[string]any{"apiVersion": "example.loom.dev/v1", "kind": "App", "metadata": map[string]any{"name": "a", "namespace": "ns"},
		"spec": map[string]any{"replicaCount": int64(3), "image": map[string]any{"tag": "1.0", "pullPolicy": "Always"},
			"tolerations": []any{map[string]any{"key": "k"}}, "nothing": map[string]any{"a": "b"}, "global": map[string]any{"region": "eu"}}}
	out, err := a.Admit(good)
	if err != nil {
		t.Fatalf("good values refused: %v", err)
	}
	spec := out["spec"].(map[string]any)
	if spec["global"] == nil || spec["image"].(map[string]any)["pullPolicy"] != "Always" {
		t.Errorf("unknown values were pruned: %v", spec)
	}
	bad := map[string]any{"apiVersion": "example.loom.dev/v1", "kind": "App", "metadata": map[string]any{"name": "a", "namespace": "ns"},
		"spec": map[string]any{"replicaCount": "three", "enabled": "yes"}}
	if _, err := a.Admit(bad); err == nil || !strings.Contains(err.Error(), "spec.replicaCount") || !strings.Contains(err.Error(), "spec.enabled") {
		t.Errorf("wrong types: %v", err)
	}
	// A schema in loom.yaml wins over inference.
	c.Schema = &config.Schema{Spec: map[string]any{"size": "integer"}}
	def, err = GenerateForChart(c, values, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := def.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"]; !ok {
		t.Error("loom.yaml's schema was replaced by the inferred one")
	}
}

// With a values.schema.json, the spec's schema is made from it: the API
// server checks types, enums, bounds and patterns; a key values.yaml gives
// a default is not required of the parent; what OpenAPI cannot say
// (anyOf) takes anything, and Helm checks it at render.
func TestGenerateForChartFromValuesSchema(t *testing.T) {
	schema := []byte(`{
  "$schema": "https://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["replicaCount", "image", "name"],
  "definitions": {"port": {"type": "integer", "minimum": 1, "maximum": 65535}},
  "properties": {
    "replicaCount": {"type": "integer", "minimum": 0, "description": "How many pods."},
    "name": {"type": "string", "pattern": "^[a-z]+$"},
    "image": {"type": "object", "required": ["repository"], "additionalProperties": false, "properties": {
      "repository": {"type": "string", "minLength": 1},
      "pullPolicy": {"type": "string", "enum": ["Always", "IfNotPresent", "Never"]}}},
    "service": {"type": "object", "properties": {"port": {"$ref": "#/definitions/port"}}},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "tag": {"type": ["string", "null"]},
    "anything": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
  }
}`)
	values := map[string]any{"replicaCount": 1.0, "image": map[string]any{"repository": "nginx"}}
	c := config.Config{Parent: config.ParentRef{APIVersion: "example.loom.dev/v1", Kind: "App"}, Chart: "chart"}
	def, err := GenerateForChart(c, values, schema)
	if err != nil {
		t.Fatal(err)
	}
	spec := def.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if fmt.Sprint(spec.Required) != "[name]" {
		t.Errorf("required %v, want only name (replicaCount and image have defaults)", spec.Required)
	}
	if spec.Properties["replicaCount"].Description != "How many pods." {
		t.Errorf("description lost: %+v", spec.Properties["replicaCount"])
	}
	a, err := NewAdmitter(def)
	if err != nil {
		t.Fatal(err)
	}
	app := func(spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "example.loom.dev/v1", "kind": "App", "metadata": map[string]any{"name": "a", "namespace": "ns"}, "spec": spec}
	}
	if _, err := a.Admit(app(map[string]any{"name": "web", "labels": map[string]any{"a": "b"}, "tag": nil, "anything": int64(3), "extra": true})); err != nil {
		t.Errorf("good values refused: %v", err)
	}
	for _, tt := range []struct {
		spec map[string]any
		want string
	}{
		{map[string]any{"name": "web", "replicaCount": int64(-1)}, "spec.replicaCount"},
		{map[string]any{"name": "Web"}, "spec.name"},
		{map[string]any{}, "spec.name: Required value"},
		{map[string]any{"name": "web", "image": map[string]any{"repository": "x", "pullPolicy": "Sometimes"}}, "spec.image.pullPolicy"},
		{map[string]any{"name": "web", "service": map[string]any{"port": int64(70000)}}, "spec.service.port"},
		{map[string]any{"name": "web", "labels": map[string]any{"a": int64(1)}}, "spec.labels.a"},
	} {
		if _, err := a.Admit(app(tt.spec)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err %v, want one about %s", tt.spec, err, tt.want)
		}
	}
	// image's additionalProperties: false keeps a key it does not list,
	// with no warning: Helm's validation at render refuses it, as
	// `helm install` does (render's TestAdditionalPropertiesFalseFailsAsHelm).
	out, warnings, err := a.AdmitWithWarnings(app(map[string]any{"name": "web", "image": map[string]any{"repository": "x", "other": "y"}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, kept := out["spec"].(map[string]any)["image"].(map[string]any)["other"]; !kept || len(warnings) > 0 {
		t.Errorf("a key additionalProperties: false forbids was pruned (warnings %v): Helm's validation never sees it", warnings)
	}
}

// A null in a chart set's parent removes the chart's default, as it does
// in Helm's values: the CRD keeps it (each property inferred from
// values.yaml, or made from values.schema.json, is nullable) instead of
// dropping it, which would bring the default back.
func TestGenerateForChartKeepsNullsThatRemoveDefaults(t *testing.T) {
	values := map[string]any{
		"replicaCount": 1.0,
		"image":        map[string]any{"repository": "nginx", "tag": "1.0"},
		"enabled":      true,
		"tolerations":  []any{map[string]any{"key": "k"}},
	}
	schema := []byte(`{"type": "object", "properties": {
  "replicaCount": {"type": "integer"},
  "image": {"type": "object", "properties": {"repository": {"type": "string"}, "tag": {"type": "string", "enum": ["1.0", "2.0"]}}},
  "enabled": {"type": "boolean"},
  "tolerations": {"type": "array", "items": {"type": "object"}}}}`)
	nulls := map[string]any{"replicaCount": nil, "image": map[string]any{"tag": nil}, "enabled": nil, "tolerations": nil}
	want := map[string]any{"replicaCount": nil, "image": map[string]any{"tag": nil}, "enabled": nil, "tolerations": nil}
	c := config.Config{Parent: config.ParentRef{APIVersion: "example.loom.dev/v1", Kind: "App"}, Chart: "chart"}
	for name, schemaJSON := range map[string][]byte{"values.yaml": nil, "values.schema.json": schema} {
		t.Run(name, func(t *testing.T) {
			def, err := GenerateForChart(c, values, schemaJSON)
			if err != nil {
				t.Fatal(err)
			}
			a, err := NewAdmitter(def)
			if err != nil {
				t.Fatal(err)
			}
			out, err := a.Admit(map[string]any{"apiVersion": "example.loom.dev/v1", "kind": "App",
				"metadata": map[string]any{"name": "a", "namespace": "ns"}, "spec": nulls})
			if err != nil {
				t.Fatalf("nulls refused: %v", err)
			}
			if diff := cmp.Diff(want, out["spec"]); diff != "" {
				t.Errorf("spec as the API server stores it (-want +got):\n%s", diff)
			}
		})
	}
}
