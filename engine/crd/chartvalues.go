package crd

import (
	"context"
	"fmt"
	"sort"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/loom-operator/loom/engine/config"
)

// GenerateForChart is Generate for a chart set without a schema in
// loom.yaml: the spec's schema is inferred from the chart's values.yaml,
// so that kubectl explain shows the values and the API server checks
// their types, with unknown fields kept (a chart reads values its
// values.yaml does not list: globals, subcharts' values, optional keys).
//
// With a values.schema.json (schemaJSON), the spec's schema is made from
// it instead (fromJSONSchema); a schema the API server would refuse, or
// that cannot check the chart's own defaults, is an error naming it.
func GenerateForChart(c config.Config, values map[string]any, schemaJSON []byte) (*apiextv1.CustomResourceDefinition, error) {
	if c.Schema != nil {
		return Generate(c)
	}
	def, err := generate(c)
	if err != nil {
		return nil, err
	}
	var spec apiextv1.JSONSchemaProps
	if len(schemaJSON) > 0 {
		if spec, err = fromJSONSchema(schemaJSON, values); err != nil {
			return nil, err
		}
		spec.Description = "The chart's values, merged over its values.yaml, as its values.schema.json describes them."
	} else if values != nil {
		spec = inferObject(values)
		spec.Description = "The chart's values, merged over its values.yaml."
	}
	if spec.Type != "" {
		def.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	from := "values.yaml"
	if len(schemaJSON) > 0 {
		from = "values.schema.json"
	}
	if err := Validate(context.Background(), def); err != nil {
		return nil, fmt.Errorf("the spec's schema made from the chart's %s is not one the API server takes: %w", from, err)
	}
	if _, err := NewAdmitter(def); err != nil {
		return nil, fmt.Errorf("the spec's schema made from the chart's %s is not one the API server takes: %w", from, err)
	}
	return def, nil
}

// inferObject is the schema of a mapping of values.yaml: its keys'
// schemas, each nullable (a parent's null removes the chart's default,
// as Helm's coalescing does), and any other key.
func inferObject(m map[string]any) apiextv1.JSONSchemaProps {
	yes := true
	s := apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}
	if len(m) == 0 {
		return s
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s.Properties = map[string]apiextv1.JSONSchemaProps{}
	for _, k := range keys {
		p := inferValue(m[k])
		// A null removes the default, as in Helm's values: the API
		// server must keep it, not drop it.
		p.Nullable = true
		s.Properties[k] = p
	}
	return s
}

// inferValue is the schema of one value of values.yaml. A number may be
// any number (values.yaml's 1 is read as Helm reads it, a float); a list
// may hold anything; a null may become anything.
func inferValue(v any) apiextv1.JSONSchemaProps {
	yes := true
	switch x := v.(type) {
	case map[string]any:
		return inferObject(x)
	case []any:
		return apiextv1.JSONSchemaProps{Type: "array", Items: &apiextv1.JSONSchemaPropsOrArray{
			Schema: &apiextv1.JSONSchemaProps{XPreserveUnknownFields: &yes},
		}}
	case string:
		return apiextv1.JSONSchemaProps{Type: "string"}
	case bool:
		return apiextv1.JSONSchemaProps{Type: "boolean"}
	case float64, float32, int, int64, int32:
		return apiextv1.JSONSchemaProps{Type: "number"}
	}
	return apiextv1.JSONSchemaProps{XPreserveUnknownFields: &yes}
}
