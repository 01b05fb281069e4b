package crd

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// fromJSONSchema turns a chart's values.schema.json into the spec's
// OpenAPI schema, for what the API server can check of it: types
// (["T", "null"] is a nullable T), properties, items, a map's
// additionalProperties, enum and const, numbers' and strings' and lists'
// bounds, patterns Go's regexp accepts, descriptions and formats, and
// local $refs (#/definitions/..., #/$defs/...). An object with
// additionalProperties: false keeps unknown keys for Helm's validation to
// refuse (see node). A node it cannot express
// (allOf, anyOf, oneOf, not, a remote or recursive $ref, a list of
// types) keeps whatever it is given (x-kubernetes-preserve-unknown-fields),
// and Helm still checks it against the whole schema at every render.
// defaults are left out (Helm applies values.yaml's), and so is required
// for a key values.yaml gives a default (values: values.yaml, at the same
// place). Every property is nullable: a parent's null removes values.yaml's
// default, as Helm's coalescing does before it checks the schema.
func fromJSONSchema(raw []byte, values map[string]any) (apiextv1.JSONSchemaProps, error) {
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return apiextv1.JSONSchemaProps{}, fmt.Errorf("values.schema.json: %w", err)
	}
	c := &jsConverter{root: root}
	s := c.node(root, values, 0)
	if s.Type != "object" {
		return apiextv1.JSONSchemaProps{}, fmt.Errorf("values.schema.json: the top is not an object schema")
	}
	return s, nil
}

type jsConverter struct {
	root map[string]any
}

// maxRefDepth bounds how deep $refs are followed (a recursive schema).
const maxRefDepth = 16

func preserve() apiextv1.JSONSchemaProps {
	yes := true
	return apiextv1.JSONSchemaProps{XPreserveUnknownFields: &yes}
}

func (c *jsConverter) node(n map[string]any, values any, depth int) apiextv1.JSONSchemaProps {
	if ref, ok := n["$ref"].(string); ok {
		target, ok := c.resolve(ref)
		if !ok || depth >= maxRefDepth {
			return preserve()
		}
		return c.node(target, values, depth+1)
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "not", "if"} {
		if _, ok := n[k]; ok {
			return preserve()
		}
	}
	var s apiextv1.JSONSchemaProps
	switch t := n["type"].(type) {
	case string:
		s.Type = t
	case []any:
		var types []string
		for _, x := range t {
			if str, ok := x.(string); ok && str != "null" {
				types = append(types, str)
			} else if ok {
				s.Nullable = true
			}
		}
		if len(types) != 1 {
			return preserve()
		}
		s.Type = types[0]
	default:
		if _, ok := n["properties"]; ok {
			s.Type = "object"
		} else {
			return preserve()
		}
	}
	if s.Type == "null" {
		return preserve()
	}
	if d, ok := n["description"].(string); ok {
		s.Description = d
	}
	if f, ok := n["format"].(string); ok && supportedFormat(f) {
		s.Format = f
	}
	if e, ok := n["enum"].([]any); ok {
		for _, v := range e {
			b, _ := json.Marshal(v)
			s.Enum = append(s.Enum, apiextv1.JSON{Raw: b})
		}
	}
	if v, ok := n["const"]; ok {
		b, _ := json.Marshal(v)
		s.Enum = []apiextv1.JSON{{Raw: b}}
	}
	num := func(k string) *float64 {
		if f, ok := n[k].(float64); ok {
			return &f
		}
		return nil
	}
	count := func(k string) *int64 {
		if f, ok := n[k].(float64); ok && f >= 0 && f == float64(int64(f)) {
			i := int64(f)
			return &i
		}
		return nil
	}
	switch s.Type {
	case "integer", "number":
		s.Minimum, s.Maximum = num("minimum"), num("maximum")
		if m := num("exclusiveMinimum"); m != nil {
			s.Minimum, s.ExclusiveMinimum = m, true
		}
		if m := num("exclusiveMaximum"); m != nil {
			s.Maximum, s.ExclusiveMaximum = m, true
		}
		s.MultipleOf = num("multipleOf")
	case "string":
		s.MinLength, s.MaxLength = count("minLength"), count("maxLength")
		if p, ok := n["pattern"].(string); ok {
			if _, err := regexp.Compile(p); err == nil {
				s.Pattern = p
			}
		}
	case "array":
		s.MinItems, s.MaxItems = count("minItems"), count("maxItems")
		var itemValues any
		if l, ok := values.([]any); ok && len(l) > 0 {
			itemValues = l[0]
		}
		if it, ok := n["items"].(map[string]any); ok {
			is := c.node(it, itemValues, depth)
			s.Items = &apiextv1.JSONSchemaPropsOrArray{Schema: &is}
		} else {
			p := preserve()
			s.Items = &apiextv1.JSONSchemaPropsOrArray{Schema: &p}
		}
	case "object":
		vals, _ := values.(map[string]any)
		s.MinProperties, s.MaxProperties = count("minProperties"), count("maxProperties")
		props, _ := n["properties"].(map[string]any)
		if len(props) > 0 {
			s.Properties = map[string]apiextv1.JSONSchemaProps{}
			keys := make([]string, 0, len(props))
			for k := range props {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				p := preserve()
				if pm, ok := props[k].(map[string]any); ok {
					p = c.node(pm, vals[k], depth)
				}
				s.Properties[k] = nullable(p) // a null removes values.yaml's default
			}
		}
		switch ap := n["additionalProperties"].(type) {
		case bool:
			// true: any key. false: the schema forbids other keys, and
			// Helm fails on them; the API server cannot say so (a
			// structural schema has no additionalProperties: false), so
			// they are kept, not pruned, and Helm's own validation of the
			// values fails the render, as `helm install` fails.
			yes := true
			s.XPreserveUnknownFields = &yes
		case map[string]any:
			if len(s.Properties) == 0 {
				as := c.node(ap, nil, depth)
				as = nullable(as) // a null removes values.yaml's default
				s.AdditionalProperties = &apiextv1.JSONSchemaPropsOrBool{Allows: true, Schema: &as}
			} else {
				yes := true
				s.XPreserveUnknownFields = &yes
			}
		default:
			// JSON Schema allows other keys unless it says otherwise.
			yes := true
			s.XPreserveUnknownFields = &yes
		}
		if req, ok := n["required"].([]any); ok {
			for _, r := range req {
				if k, ok := r.(string); ok {
					if _, hasDefault := vals[k]; !hasDefault {
						s.Required = append(s.Required, k)
					}
				}
			}
		}
	}
	return s
}

// nullable is s taking null too. The API server never matches a null
// against an enum, so an enum of scalars becomes a CEL rule (the API
// server does not run rules on a null); an enum of lists or objects stays
// an enum, and a null there is dropped as before.
func nullable(s apiextv1.JSONSchemaProps) apiextv1.JSONSchemaProps {
	if len(s.Enum) == 0 {
		s.Nullable = true
		return s
	}
	var values []string
	for _, e := range s.Enum {
		var v any
		if err := json.Unmarshal(e.Raw, &v); err != nil {
			return s
		}
		switch v.(type) {
		case nil:
			continue
		case string, bool, float64:
			values = append(values, string(e.Raw))
		default:
			return s
		}
	}
	list := strings.Join(values, ", ")
	s.Enum = nil
	s.Nullable = true
	s.XValidations = append(slices.Clip(s.XValidations), apiextv1.ValidationRule{
		Rule:    "self in [" + list + "]",
		Message: "must be one of " + list + " (or null, which removes the chart's default)",
	})
	return s
}

// resolve finds a local $ref.
func (c *jsConverter) resolve(ref string) (map[string]any, bool) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, false
	}
	var cur any = c.root
	for _, part := range strings.Split(ref[2:], "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		cur = m[part]
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

// supportedFormat reports whether the API server checks format f.
func supportedFormat(f string) bool {
	switch f {
	case "int32", "int64", "float", "double", "byte", "date", "date-time", "password",
		"uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "duration":
		return true
	}
	return false
}
